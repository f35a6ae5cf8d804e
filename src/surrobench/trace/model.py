"""One columnar timeline for every trace source (docs/design.md, "Timeline model"); int64 ns, ids -1 absent."""

from __future__ import annotations

import dataclasses
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


_TABLE_FIELDS = ("kernels", "memcpy", "memset", "api_calls", "cpu_ops", "ranges", "steps")


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
        tables = {f: getattr(self, f).take(getattr(self, f).rank == rank) for f in _TABLE_FIELDS}
        return dataclasses.replace(self, **tables, meta=dataclasses.replace(self.meta, ranks=(rank,)))

    def name(self, name_id: int) -> str:
        """The string behind a ``name_id``."""
        return self.names[int(name_id)]

    def name_mask(self, name_ids: np.ndarray, predicate) -> np.ndarray:
        """Bool mask over ``name_ids`` where ``predicate(name)`` holds; evaluated once per distinct name."""
        if name_ids.size == 0:
            return np.zeros(0, dtype=bool)
        hits = np.fromiter((bool(predicate(n)) for n in self.names), dtype=bool, count=len(self.names))
        return hits[name_ids]
