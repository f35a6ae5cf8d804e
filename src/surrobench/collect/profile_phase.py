"""The profiling phase: after a timed sweep, one child process per config, its op table stored.

Shared by ``surrobench profile`` and ``surrobench run --profile torch``. Each ``ok`` config of the run is
profiled in :mod:`surrobench.collect.child`; its op table goes into the database (``op_stats``), its top
op into the config row and the run JSON (``top_op``), and the four readings
(:mod:`surrobench.analysis.op_readings`) into the report. Failed configs are not profiled.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from surrobench.analysis.op_readings import Readings, read_table
from surrobench.analysis.ops import OpTable
from surrobench.collect.child import spawn
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.execution.sweep import SweepRequest, plan_sweep
from surrobench.results.schema import ConfigResult, RunRecord
from surrobench.results.store import ResultStore

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ProfileOptions:
    """How to profile: the schedule, ``with_stack``, and the folder for Chrome traces (None: keep none)."""

    schedule: ProfileSchedule = field(default_factory=ProfileSchedule)
    with_stack: bool = False
    trace_dir: Path | None = None
    gzip: bool = True


@dataclass(frozen=True)
class ProfileReport:
    """One profiled config.

    Attributes:
        config: the timed result it belongs to (``top_op`` filled when profiled).
        config_id: its row in the database.
        status, error: of the child (``ok``, ``oom``, ``error``).
        profiled_step_ms: median host time of the recorded steps under the profiler, ms.
        overhead: ``profiled_step_ms / unprofiled median - 1`` (the run's timed median), a fraction.
    """

    config: ConfigResult
    config_id: int
    status: str
    error: str | None
    op_table: OpTable | None = None
    readings: Readings | None = None
    profiled_step_ms: float | None = None
    overhead: float | None = None
    trace_path: str | None = None
    warnings: tuple[str, ...] = ()

    def label(self) -> str:
        return self.config.label()

    def to_json(self) -> dict:
        """Config key, status, overhead, trace path, warnings, op table and readings (shares as fractions)."""
        c = self.config
        return {
            **config_key_json(c), "status": self.status, "error": self.error, "top_op": c.top_op, "profiled_step_ms": self.profiled_step_ms,
            "unprofiled_ms": c.latency_ms.median if c.latency_ms else None, "overhead": self.overhead,
            "trace_path": self.trace_path, "warnings": list(self.warnings),
            "op_table": self.op_table.to_json() if self.op_table else None,
            "readings": self.readings.to_json() if self.readings else None,
        }  # fmt: skip


def config_key_json(c: ConfigResult) -> dict:
    """The keys that name a config in a report: model, input shape, batch, precision, device, mode."""
    return {"model": c.model, "input_shape": list(c.input_shape), "batch": c.batch, "precision": c.precision,
            "device": c.device, "mode": c.mode}  # fmt: skip


def prepare_trace_dir(path: Path, flag: str = "--trace-out") -> Path:
    """Create the output folder given by option ``flag`` if needed and check that a file can be written there.

    Raises:
        UsageError: the path is a file, or the folder cannot be created or written.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: is a file; give a folder for one file per config")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".surrobench-write-test"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{flag} {str(path)!r}: cannot write there ({exc.strerror or exc})") from None
    return path


def config_stem(run_id: str, cfg: ExecConfig) -> str:
    """``<run>_<model>_<shape>_b<batch>_<precision>_<mode>`` with unsafe characters as ``-``: a file name."""
    return _UNSAFE.sub("-", f"{run_id}_{cfg.model}_{cfg.shape.label()}_b{cfg.batch}_{cfg.precision}_{cfg.mode}")


def trace_file(options: ProfileOptions, run_id: str, cfg: ExecConfig) -> Path | None:
    """``<trace_dir>/<config_stem>.json[.gz]``, or None."""
    if options.trace_dir is None:
        return None
    return options.trace_dir / (config_stem(run_id, cfg) + (".json.gz" if options.gzip else ".json"))


def profile_config(cfg: ExecConfig, result: ConfigResult, config_id: int, store: ResultStore,
                   options: ProfileOptions, run_id: str) -> ProfileReport:  # fmt: skip
    """Profile one timed config in a child process and store its op table and top op."""
    child = spawn(cfg, options.schedule, with_stack=options.with_stack, trace_path=trace_file(options, run_id, cfg))
    warnings = tuple(child.get("warnings", ()))
    if child["status"] != "ok":
        return ProfileReport(result, config_id, child["status"], child["error"], warnings=warnings)
    table = OpTable.from_json(child["op_table"])
    step_ms = statistics.median(child["active_step_ms"])
    overhead = step_ms / result.latency_ms.median - 1 if result.latency_ms else None
    top = table.top_op()
    if top is not None:
        result = result.with_top_op(top.name, top.share)
        store.set_top_op(config_id, top.name, top.share)
    store.add_op_table(config_id, table, profiled_step_ms=step_ms, overhead=overhead, trace_path=child["trace_path"])
    readings = read_table(table, cfg.model, tuple(child["input_shape"]))
    return ProfileReport(result, config_id, "ok", None, table, readings, step_ms, overhead, child["trace_path"],
                         warnings)  # fmt: skip


def profile_run(
    request: SweepRequest, record: RunRecord, store: ResultStore, options: ProfileOptions,
    on_report: Callable[[ProfileReport], None] = lambda report: None, profile_one: Callable = profile_config,
) -> tuple[RunRecord, list[ProfileReport]]:  # fmt: skip
    """Profile every ``ok`` config of a finished timed run of ``request``.

    ``profile_one(cfg, result, config_id, store, options, run_id)`` profiles one config and returns its
    report (a :class:`ProfileReport`, or another profiler's report with ``config``, ``label()``,
    ``status``, ``error`` and ``warnings``): :func:`profile_config` (torch.profiler) by default, or
    ``collect.perf_phase.perf_config`` / ``collect.nsys.nsys_config`` with their options.

    Returns:
        The run with ``top_op`` set on each profiled config, and one report per ``ok`` config.
    """
    configs, _ = plan_sweep(request)
    ids = store.config_ids(record.run_id)
    if not len(configs) == len(ids) == len(record.results):
        raise RuntimeError(f"run {record.run_id}: {len(configs)} configs, {len(ids)} stored, {len(record.results)} results")
    results, reports = list(record.results), []
    for index, (cfg, result, config_id) in enumerate(zip(configs, record.results, ids)):
        if result.status != "ok":
            continue
        report = profile_one(cfg, result, config_id, store, options, record.run_id)
        results[index] = report.config
        reports.append(report)
        on_report(report)
    return replace(record, results=tuple(results)), reports
