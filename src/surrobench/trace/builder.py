"""Accumulates column chunks from a loader and freezes them into a :class:`Timeline`.

Loaders call :meth:`TimelineBuilder.add` with absolute source-clock nanoseconds as often as they like
(one call per parsed slice of events); :meth:`TimelineBuilder.build` concatenates, shifts times so the
first event is at 0, sorts every table by start time and splits ``ProfilerStep#N`` ranges into steps.
"""

from __future__ import annotations

import re

import numpy as np

from surrobench.trace.model import (
    _DTYPES,
    ApiCalls,
    CpuOps,
    GpuOps,
    MemcpyOps,
    MemsetOps,
    Ranges,
    Steps,
    Timeline,
    TraceMeta,
)

_TABLES = {
    "kernels": GpuOps, "memcpy": MemcpyOps, "memset": MemsetOps, "api_calls": ApiCalls,
    "cpu_ops": CpuOps, "ranges": Ranges,
}
_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


class TimelineBuilder:
    """Collects columns per table; names are interned across all tables."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[dict[str, np.ndarray]]] = {t: [] for t in _TABLES}
        self._ids: dict[str, int] = {}

    def intern(self, names) -> np.ndarray:
        """(n,) int32 ids for an iterable of names, adding new names to the table."""
        ids = self._ids
        return np.fromiter((ids.setdefault(n, len(ids)) for n in names), dtype=np.int32)

    def add(self, table: str, **columns) -> None:
        """Append rows to ``table``: every column of that table, equal lengths, times in source ns."""
        fields = _TABLES[table].__dataclass_fields__
        missing = set(fields) - set(columns)
        if missing:
            raise ValueError(f"{table}: missing columns {sorted(missing)}")
        chunk = {k: np.asarray(columns[k], dtype=_DTYPES[k]) for k in fields}
        if chunk["start_ns"].size:
            self._chunks[table].append(chunk)

    def build(self, meta: TraceMeta) -> Timeline:
        """Freeze into a :class:`Timeline`; times become ns since the earliest start seen."""
        merged = {t: self._concat(t) for t in _TABLES}
        starts = [m["start_ns"] for m in merged.values() if m["start_ns"].size]
        origin = int(min(s.min() for s in starts)) if starts else 0
        tables = {}
        for name, cols in merged.items():
            cols["start_ns"] = cols["start_ns"] - origin
            order = np.argsort(cols["start_ns"], kind="stable")
            tables[name] = _TABLES[name](**{k: v[order] for k, v in cols.items()})
        names = tuple(self._ids)
        ranges, steps = _split_steps(tables["ranges"], names)
        return Timeline(
            kernels=tables["kernels"], memcpy=tables["memcpy"], memset=tables["memset"],
            api_calls=tables["api_calls"], cpu_ops=tables["cpu_ops"], ranges=ranges, steps=steps,
            names=names, meta=meta,
        )

    def _concat(self, table: str) -> dict[str, np.ndarray]:
        fields = _TABLES[table].__dataclass_fields__
        chunks = self._chunks[table]
        if not chunks:
            return {k: np.empty(0, dtype=_DTYPES[k]) for k in fields}
        return {k: np.concatenate([c[k] for c in chunks]) for k in fields}


def _split_steps(ranges: Ranges, names: tuple[str, ...]) -> tuple[Ranges, Steps]:
    """Move ``ProfilerStep#N`` rows (torch.profiler's per-step annotation) into a :class:`Steps` table."""
    step_of_name = np.full(len(names), -1, dtype=np.int64)
    for i, n in enumerate(names):
        m = _STEP_NAME.match(n)
        if m:
            step_of_name[i] = int(m.group(1))
    step = step_of_name[ranges.name_id] if len(ranges) else np.empty(0, dtype=np.int64)
    is_step = step >= 0
    steps = Steps(start_ns=ranges.start_ns[is_step], dur_ns=ranges.dur_ns[is_step], step=step[is_step],
                  rank=ranges.rank[is_step])
    return ranges.take(~is_step), steps
