"""A profiled run: the document of ``profile`` and ``perf``."""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.records import schemas
from surrobench.records.run import RunRecord


@dataclass(frozen=True)
class Profile:
    """A profiled run: the timed run (``top_op`` set on the configs profiled), one report per config profiled
    (each with ``to_json()``: torch.profiler's or nsys's under ``schema``
    :data:`~surrobench.records.schemas.PROFILE`, the system pass's under :data:`~surrobench.records.schemas.PERF`),
    the warnings."""

    run: RunRecord
    reports: tuple = ()
    warnings: tuple[str, ...] = ()
    schema: str = schemas.PROFILE

    def to_json(self) -> dict:
        """``surrobench/profile-v3`` ``{"schema", "run", "profiles"}`` (each config's op table, readings and kernel
        table, null on a CPU run) or ``surrobench/perf-v1`` ``{"schema", "run", "perf"}`` (its system pass)."""
        key = "perf" if self.schema == schemas.PERF else "profiles"
        return {"schema": self.schema, "run": self.run.to_json(), key: [r.to_json() for r in self.reports]}
