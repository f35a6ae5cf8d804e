"""One columnar timeline for every trace source (docs/design.md, "Timeline model"); int64 ns, ids -1 absent.
:class:`TimelineBuilder` accumulates loader column chunks (absolute ns) and freezes them into a :class:`Timeline`."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

MISSING = -1
"""Value of an integer column whose source event did not carry the field."""


class CopyKind(IntEnum):
    """Direction of a memory copy (CUPTI ``CUpti_ActivityMemcpyKind``, reduced to what we analyze)."""

    UNKNOWN = 0
    H2D = 1
    D2H = 2
    D2D = 3
    H2H = 4
    P2P = 5


class HostMemory(IntEnum):
    """Host memory of a copy (CUPTI ``CUpti_ActivityMemoryKind``); pageable copies block the host."""

    UNKNOWN = 0
    PAGEABLE = 1
    PINNED = 2
    NONE = 3  # device-to-device: no host memory involved


@dataclass(frozen=True, eq=False)
class _Table:
    """Common behaviour of the event tables: ``len``, ``end_ns``, row selection."""

    start_ns: np.ndarray  # (n,) int64, ns since the trace start
    dur_ns: np.ndarray  # (n,) int64, ns; may be 0, negative only in malformed traces

    def __len__(self) -> int:
        return int(self.start_ns.shape[0])

    @property
    def end_ns(self) -> np.ndarray:
        """(n,) int64 end times in ns: ``start_ns + max(dur_ns, 0)``."""
        return self.start_ns + np.maximum(self.dur_ns, 0)

    def take(self, index: np.ndarray) -> _Table:
        """A table of the same type holding rows ``index`` (an int index array or a bool mask)."""
        return dataclasses.replace(self, **{f.name: getattr(self, f.name)[index] for f in dataclasses.fields(self)})


@dataclass(frozen=True, eq=False)
class GpuOps(_Table):
    """GPU activities of one kind (kernels, copies or memsets); one row each, shapes ``(n,)``."""

    name_id: np.ndarray  # int32 index into Timeline.names
    device: np.ndarray  # int32 CUDA device index
    stream: np.ndarray  # int64 CUDA stream id
    correlation: np.ndarray  # int64 id shared with the API call that launched it
    rank: np.ndarray  # int32 distributed rank (0 when the trace has none)


@dataclass(frozen=True, eq=False)
class MemcpyOps(GpuOps):
    """Memory copies: :class:`GpuOps` plus direction, size and host memory kind."""

    kind: np.ndarray  # int8 CopyKind
    bytes: np.ndarray  # int64 bytes copied
    host_memory: np.ndarray  # int8 HostMemory


@dataclass(frozen=True, eq=False)
class MemsetOps(GpuOps):
    """Memsets: :class:`GpuOps` plus the number of bytes set."""

    bytes: np.ndarray  # int64


@dataclass(frozen=True, eq=False)
class ApiCalls(_Table):
    """CUDA runtime and driver API calls on host threads; nsys version suffixes (``_v7000``) removed."""

    name_id: np.ndarray  # int32
    tid: np.ndarray  # int64 host thread id
    correlation: np.ndarray  # int64, matches GpuOps.correlation
    external_id: np.ndarray  # int64, Kineto: the External id of the enclosing CPU op
    rank: np.ndarray  # int32


@dataclass(frozen=True, eq=False)
class CpuOps(_Table):
    """Framework operators on host threads (Kineto ``cpu_op``: ``aten::item``...)."""

    name_id: np.ndarray  # int32
    tid: np.ndarray  # int64
    external_id: np.ndarray  # int64
    rank: np.ndarray  # int32


@dataclass(frozen=True, eq=False)
class Ranges(_Table):
    """User ranges: ``record_function`` annotations (Kineto) or NVTX push/pop and start/end ranges."""

    name_id: np.ndarray  # int32
    tid: np.ndarray  # int64
    rank: np.ndarray  # int32


@dataclass(frozen=True, eq=False)
class Steps(_Table):
    """``ProfilerStep#N`` ranges, one row per profiled step."""

    step: np.ndarray  # int64 step number N
    rank: np.ndarray  # int32


_DTYPES = dict(start_ns=np.int64, dur_ns=np.int64, name_id=np.int32, device=np.int32, stream=np.int64)
_DTYPES |= dict(correlation=np.int64, rank=np.int32, kind=np.int8, bytes=np.int64, host_memory=np.int8, tid=np.int64)
_DTYPES |= dict(external_id=np.int64, step=np.int64)


@dataclass(frozen=True)
class TraceMeta:
    """Trace-wide facts: ``event_counts`` raw events per category, loaded or not; ``anomalies`` by kind (:data:`LOAD_ANOMALIES`)."""

    source: str  # "kineto" or "nsys"
    paths: tuple[str, ...]
    ranks: tuple[int, ...]
    device_names: dict[int, str] = field(default_factory=dict)
    event_counts: dict[str, int] = field(default_factory=dict)
    cuda_run: bool = False  # the trace says a CUDA device was in use (device properties or CUDA API calls)
    anomalies: dict[str, int] = field(default_factory=dict)
    origin_ns: int = 0  # source-clock ns of time 0: ``start_ns + origin_ns`` is comparable across files

    @property
    def dropped(self) -> dict[str, int]:
        """Events the loader skipped, by :data:`LOAD_ANOMALIES` kind."""
        return {k: n for k, n in self.anomalies.items() if k not in LOAD_REPAIRS}

    @property
    def repaired(self) -> dict[str, int]:
        """Events the loader kept with a value repaired, by :data:`LOAD_ANOMALIES` kind."""
        return {k: n for k, n in self.anomalies.items() if k in LOAD_REPAIRS}


LOAD_ANOMALIES = {
    "events_without_duration": "events without a 'dur', taken as 0 us long (busy time and gaps understated)",
    "values_out_of_range": "ids, streams, devices or threads that are not integers of the column's range "
    "(taken as missing)",
    "time_outlier_events": "events more than an hour away from the largest cluster of events, dropped (a clock "
    "or export error, or a second capture): the window, busy share and counts cover that cluster only",
    "events_not_complete": "events of a category the loader reads (kernel, copy, runtime, op, range) whose 'ph' "
    "is not 'X' (a complete event), dropped",
    "events_without_category": "complete events whose 'cat' is not text, dropped",
    "times_as_text": "'ts' or 'dur' values written as text (\"250\"), read as numbers of us",
    "ranges_ending_before_start": "NVTX ranges whose end is before their start, dropped",
    "unparsed_step_names": "ranges named ProfilerStep# whose step number does not parse, kept as plain "
    "ranges (not in the per-step table)",
}
"""What each :attr:`TraceMeta.anomalies` key means, as shown to the user."""

LOAD_REPAIRS = frozenset({"events_without_duration", "values_out_of_range", "times_as_text", "unparsed_step_names"})
"""The :data:`LOAD_ANOMALIES` kinds whose events were kept, with a value repaired; every other kind was dropped."""


def load_warnings(anomalies: dict[str, int]) -> list[str]:
    """One line per kind of :attr:`TraceMeta.anomalies`, in stable order (analyze's and diagnose's warnings)."""
    lines = []
    for kind, n in sorted(anomalies.items()):
        verb = "repaired" if kind in LOAD_REPAIRS else "dropped"
        lines.append(f"trace read with events {verb}: {n} {LOAD_ANOMALIES.get(kind, kind)}")
    return lines


@dataclass(frozen=True, eq=False)
class Timeline:
    """A whole trace as columns. Every table is sorted by ``start_ns``."""

    kernels: GpuOps
    memcpy: MemcpyOps
    memset: MemsetOps
    api_calls: ApiCalls
    cpu_ops: CpuOps
    ranges: Ranges
    steps: Steps
    names: tuple[str, ...]
    meta: TraceMeta

    def for_rank(self, rank: int) -> "Timeline":
        """The rows of one rank: same names and time origin, ``meta.ranks == (rank,)``."""
        tables = {f: getattr(self, f).take(getattr(self, f).rank == rank) for f in (*_TABLES, "steps")}
        return dataclasses.replace(self, **tables, meta=dataclasses.replace(self.meta, ranks=(rank,)))

    def name(self, name_id: int) -> str:
        """The string behind a ``name_id``."""
        return self.names[int(name_id)]

    def name_mask(self, name_ids: np.ndarray, predicate) -> np.ndarray:
        """Bool mask over ``name_ids`` where ``predicate(name)`` holds; evaluated once per distinct name."""
        if name_ids.size == 0:
            return np.zeros(0, dtype=bool)
        return np.fromiter((bool(predicate(n)) for n in self.names), dtype=bool, count=len(self.names))[name_ids]


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
            try:
                fresh = dict.fromkeys(names)  # the distinct names in the order first seen
            except TypeError:  # an unhashable name
                fresh = None
            if fresh is not None and all(n.__class__ is str for n in fresh):  # the usual case: ids for the new names
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
        chunks = self._chunks[table]  # an empty column of the field's dtype first: a table without chunks is empty
        return {k: np.concatenate([np.empty(0, dtype=_DTYPES[k]), *(c[k] for c in chunks)]) for k in fields}


def name_text(value) -> str:
    """A name as text: a string as is, ``None`` as ``""``, bytes (an SQLite BLOB) decoded, anything else (a
    number) as its text (never a crash later)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


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
