"""Accumulates loader column chunks (absolute ns) and freezes them into a :class:`Timeline`."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from surrobench.trace.model import _DTYPES, ApiCalls, CpuOps, GpuOps, MemcpyOps, MemsetOps, Ranges, Steps, Timeline
from surrobench.trace.model import TraceMeta

_TABLES = {"kernels": GpuOps, "memcpy": MemcpyOps, "memset": MemsetOps, "api_calls": ApiCalls, "cpu_ops": CpuOps}
_TABLES |= {"ranges": Ranges}
_STEP_NAME = re.compile(r"^ProfilerStep#(\d{1,18})$")  # more digits would not fit int64: a plain range
OUTLIER_GAP_NS = 3600 * 10**9
"""An hour with no event at all separating a few events from the rest marks those few as outliers."""
_STEP_PREFIX = "ProfilerStep#"


class TimelineBuilder:
    """Collects columns per table; names are interned across all tables."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[dict[str, np.ndarray]]] = {t: [] for t in _TABLES}
        self._ids: dict[str, int] = {}

    def intern(self, names) -> np.ndarray:
        """(n,) int32 ids for an iterable of names, adding new names to the table."""
        ids = self._ids
        return np.fromiter((ids.setdefault(n, len(ids)) for n in names), dtype=np.int32)

    def names(self) -> tuple[str, ...]:
        """Every interned name, indexed by its id."""
        return tuple(self._ids)

    def intern_names(self, names: list) -> np.ndarray:
        """(n,) int32 name ids: strings as they are, ``None`` as ``""``, anything else as its text."""
        ids = self._ids
        try:
            out = list(map(ids.get, names))
        except TypeError:  # an unhashable name
            out = [None] * len(names)
        if None in out:
            fresh = _distinct_strings(names)
            if fresh is not None:  # the usual case: new ids for the new names, in the order first seen
                for n in fresh:
                    ids.setdefault(n, len(ids))
                return np.array(list(map(ids.__getitem__, names)), dtype=np.int32)
            out = [
                ids.setdefault(n if n.__class__ is str else ("" if n is None else str(n)), len(ids)) if i is None else i
                for n, i in zip(names, out)
            ]
        return np.array(out, dtype=np.int32)

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
        """Freeze into a :class:`Timeline`, times in ns since the earliest start (``meta.origin_ns``)."""
        merged = {t: self._concat(t) for t in _TABLES}
        anomalies = dict(meta.anomalies)
        dropped = _drop_time_outliers(merged)
        if dropped:
            anomalies["time_outlier_events"] = dropped
        starts = [m["start_ns"] for m in merged.values() if m["start_ns"].size]
        origin = int(min(s.min() for s in starts)) if starts else 0
        tables = {}
        for name, cols in merged.items():
            cols["start_ns"] = cols["start_ns"] - origin
            order = np.argsort(cols["start_ns"], kind="stable")
            tables[name] = _TABLES[name](**{k: v[order] for k, v in cols.items()})
        names = self.names()
        tables["ranges"], steps, unparsed = _split_steps(tables["ranges"], names)
        if unparsed:
            anomalies["unparsed_step_names"] = unparsed
        return Timeline(
            **tables, steps=steps, names=names, meta=dataclasses.replace(meta, origin_ns=origin, anomalies=anomalies)
        )

    def _concat(self, table: str) -> dict[str, np.ndarray]:
        fields = _TABLES[table].__dataclass_fields__
        chunks = self._chunks[table]
        if not chunks:
            return {k: np.empty(0, dtype=_DTYPES[k]) for k in fields}
        return {k: np.concatenate([c[k] for c in chunks]) for k in fields}


def _distinct_strings(names: list) -> dict | None:
    """The distinct names in the order first seen (a dict's keys), or ``None`` unless every name is a string."""
    try:
        fresh = dict.fromkeys(names)
    except TypeError:  # an unhashable name
        return None
    return fresh if all(n.__class__ is str for n in fresh) else None


def _split_steps(ranges: Ranges, names: tuple[str, ...]) -> tuple[Ranges, Steps, int]:
    """Move ``ProfilerStep#N`` rows into :class:`Steps`; the third value counts unparsable step names."""
    step_of_name = np.full(len(names), -1, dtype=np.int64)
    for i, n in enumerate(names):
        m = _STEP_NAME.match(n)
        if m:
            step_of_name[i] = int(m.group(1))
        elif n.startswith(_STEP_PREFIX):
            step_of_name[i] = -2
    step = step_of_name[ranges.name_id] if len(ranges) else np.empty(0, dtype=np.int64)
    is_step = step >= 0
    steps = Steps(
        start_ns=ranges.start_ns[is_step], dur_ns=ranges.dur_ns[is_step], step=step[is_step], rank=ranges.rank[is_step]
    )
    return ranges.take(~is_step), steps, int((step == -2).sum())


def _drop_time_outliers(merged: dict[str, dict[str, np.ndarray]]) -> int:
    """Drop in place events cut off by :data:`OUTLIER_GAP_NS` of silence; returns how many."""
    starts = [m["start_ns"] for m in merged.values() if m["start_ns"].size]
    if not starts:
        return 0
    ends = [m["start_ns"] + np.maximum(m["dur_ns"], 0) for m in merged.values() if m["start_ns"].size]
    if max(int(e.max()) for e in ends) - min(int(s.min()) for s in starts) <= OUTLIER_GAP_NS:
        return 0
    everything = np.sort(np.concatenate(starts))
    cuts = np.flatnonzero(np.diff(everything) > OUTLIER_GAP_NS) + 1
    if not cuts.size:
        return 0
    bounds = np.concatenate([[0], cuts, [everything.size]])
    biggest = int(np.argmax(np.diff(bounds)))
    lo, hi = everything[bounds[biggest]], everything[bounds[biggest + 1] - 1]
    dropped = everything.size - int(bounds[biggest + 1] - bounds[biggest])
    for table, cols in merged.items():
        keep = (cols["start_ns"] >= lo) & (cols["start_ns"] <= hi)
        if not keep.all():
            merged[table] = {k: v[keep] for k, v in cols.items()}
    return dropped
