"""Why is the GPU idle? Every gap (nothing on any stream of a device) above a threshold, with its cause, checked in
order: ``graph_internal``, ``graph_launch``, ``host_sync``, ``h2d_copy`` (``pageable`` flagged), ``d2h_copy``,
``collective`` (the host already waiting for peers), ``launch_bound`` (the launch call still running: "CPU
提交速度跟不上 GPU 消费速度"), ``stream_wait``, ``unexplained``."""

from __future__ import annotations

from collections import Counter
from dataclasses import InitVar, dataclass

import numpy as np

from surrobench.records import intervals
from surrobench.analysis.activity import GRAPH_LAUNCH_CALLS, OP_TYPE_NAMES, STREAM_WAIT_CALLS, SYNC_CALLS, GpuActivity
from surrobench.analysis.activity import MEMCPY, call_mask, enclosing_top_level, host_op_chains, take
from surrobench.trace.model import CopyKind, Timeline

DEFAULT_GAP_THRESHOLD_NS = 5_000
"""Shortest gap listed: 4x the GPU-side scheduling gap (docs/benchmarks/trace-analysis.md, "The gap threshold")."""

SYNC_SLACK_NS = 1_000
"""Allowance for a sync call ending just before the GPU idles (CUPTI clock mapping; same page, our choice)."""

MAX_LISTED_GAPS = 50
"""Longest gaps kept in the report; every gap still counts in the per-cause totals."""

CAUSES = ("graph_internal", "graph_launch", "host_sync", "h2d_copy", "d2h_copy", "collective", "launch_bound")
CAUSES += ("stream_wait", "unexplained")


@dataclass(frozen=True)
class Gap:
    """One idle interval of one device; times in the trace's frame (ms since its first event)."""

    rank: int
    device: int
    start_ms: float
    dur_us: float
    cause: str
    prev_op: str
    next_op: str
    launch_call: str  # the API call that launched ``next_op`` ("" when unknown)
    sync_call: str  # the synchronizing call of a host_sync gap ("" otherwise)
    host_op: str  # CPU ops around the sync call (host_sync) or the launch, "outer > inner"
    pageable: bool  # the copy of an h2d_copy/d2h_copy gap used pageable host memory


@dataclass(frozen=True)
class CauseTotal:
    """All gaps of one cause: how many, how long (ms), share of all gap time, most frequent host op."""

    cause: str
    count: int
    total_ms: float
    share: float
    top_host_op: str


@dataclass(frozen=True)
class GapReport:
    """Gaps above ``threshold_us`` per cause and the longest; ``host_syncs`` (init only) for :meth:`sync_gap_ns`."""

    threshold_us: float
    count: int
    total_ms: float
    by_cause: tuple[CauseTotal, ...]
    longest: tuple[Gap, ...]
    host_syncs: InitVar[tuple[np.ndarray, np.ndarray] | None] = None

    def __post_init__(self, host_syncs: tuple[np.ndarray, np.ndarray] | None) -> None:
        empty = np.empty(0, dtype=np.int64)
        rows, dur = host_syncs if host_syncs is not None else (empty, empty)
        object.__setattr__(self, "_sync_rows", np.asarray(rows, dtype=np.int64))
        object.__setattr__(self, "_sync_dur_ns", np.asarray(dur, dtype=np.int64))

    def sync_gap_ns(self, calls: np.ndarray) -> int:
        """Summed ns of all ``host_sync`` gaps whose sync call is one of the ``api_calls`` rows ``calls``."""
        return int(self._sync_dur_ns[np.isin(self._sync_rows, calls)].sum())


def find_gaps(tl: Timeline, act: GpuActivity, windows: dict[int, tuple[int, int]], threshold_ns: int) -> GapReport:
    """Gaps per (rank, device) in ``windows[rank] = (t0_ns, t1_ns)``: totals and the longest listed."""
    found = []
    for rank, device in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        rows = np.flatnonzero((act.rank == rank) & (act.device == device))
        s, e = intervals.merge(act.start_ns[rows], act.end_ns[rows])
        g0, g1 = e[:-1], s[1:]
        t0, t1 = windows.get(rank, (0, np.iinfo(np.int64).max))
        keep = (g1 - g0 > threshold_ns) & (g0 >= t0) & (g1 <= t1)
        if keep.any():
            found.append(_classify(tl, act, rows, g0[keep], g1[keep]))
    return _summarize(tl, act, _GapColumns.concat(found) if found else None, threshold_ns)


@dataclass
class _GapColumns:
    """Every gap as columns: ``[g0, g1)`` ns, cause, neighbour rows, API rows (-1: none), host op."""

    g0: np.ndarray
    g1: np.ndarray
    cause: np.ndarray
    prev: np.ndarray
    nxt: np.ndarray
    launch: np.ndarray
    sync: np.ndarray
    pageable: np.ndarray
    host_op: np.ndarray  # object array of str, "" where no call

    @staticmethod
    def concat(parts: list[_GapColumns]) -> _GapColumns:
        return _GapColumns(
            **{f: np.concatenate([getattr(p, f) for p in parts]) for f in _GapColumns.__dataclass_fields__}
        )


def _classify(tl: Timeline, act: GpuActivity, rows: np.ndarray, g0: np.ndarray, g1: np.ndarray) -> _GapColumns:
    """Cause of each gap ``[g0, g1)`` of the device of ``rows`` (by start), with the rows that explain it."""
    api = tl.api_calls
    by_end = rows[np.argsort(act.end_ns[rows], kind="stable")]
    prev = by_end[np.searchsorted(act.end_ns[by_end], g0, side="right") - 1]
    nxt = rows[np.minimum(np.searchsorted(act.start_ns[rows], g1), rows.size - 1)]
    launch = act.launch[nxt]
    has = launch >= 0
    l0, l1 = act.launch_ns[nxt], take(api.end_ns, launch)  # l0, l1 are read only where ``has``
    graph = take(call_mask(tl, GRAPH_LAUNCH_CALLS), launch, False)
    sync = _first_call_ending_in(tl, act.rank[nxt], SYNC_CALLS, g0 - SYNC_SLACK_NS, g1)
    prev_l0 = np.where(act.launch[prev] >= 0, act.launch_ns[prev], g0)
    wait = _first_call_ending_in(tl, act.rank[nxt], STREAM_WAIT_CALLS, prev_l0, l0)
    in_collective = act.is_nccl[nxt] & has & (_host_entry_ns(tl, launch) <= g0)
    cause = np.select(
        [
            graph & (l0 < g0),
            graph,
            sync >= 0,
            (act.op_type[nxt] == MEMCPY) & (act.copy_kind[nxt] == CopyKind.H2D),
            (act.op_type[prev] == MEMCPY) & (act.copy_kind[prev] == CopyKind.D2H),
            in_collective,
            has & (l1 > g0),
            has & (wait >= 0),
        ],
        CAUSES[:-1],
        default="unexplained",
    ).astype(object)
    host_call = np.where(sync >= 0, sync, launch)
    host_op = np.full(host_call.shape, "", dtype=object)
    with_call = host_call >= 0
    host_op[with_call] = host_op_chains(tl, host_call[with_call])
    pageable = np.where(cause == "h2d_copy", act.pageable[nxt], act.pageable[prev])
    return _GapColumns(g0, g1, cause, prev, nxt, launch, sync, pageable, host_op)


def _host_entry_ns(tl: Timeline, calls: np.ndarray) -> np.ndarray:
    """Start of the top-level CPU op around each API call row; -1 rows give the largest time."""
    api, known = tl.api_calls, calls >= 0
    entry = np.full(calls.shape, np.iinfo(np.int64).max, dtype=np.int64)
    rows = calls[known]
    outer = enclosing_top_level(tl.cpu_ops, api.rank[rows], api.tid[rows], api.start_ns[rows])
    entry[known] = np.where(outer >= 0, take(tl.cpu_ops.start_ns, outer), api.start_ns[rows])
    return entry


def _call_names(api, rows: np.ndarray, names: np.ndarray) -> list[str]:
    """Name of each API call row; ``""`` for -1. ``names`` is ``("",) + tl.names`` as an object array."""
    return names[take(api.name_id, rows, -1) + 1].tolist()


def _first_call_ending_in(
    tl: Timeline, rank: np.ndarray, names: frozenset[str], lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Row of the first call named in ``names`` on ``rank`` whose end lies in ``[lo, hi]``; -1 if none."""
    api = tl.api_calls
    found = np.full(lo.shape, -1, dtype=np.int64)
    named = np.flatnonzero(call_mask(tl, names))
    for r in np.unique(rank).tolist():
        rows = named[api.rank[named] == r]
        rows = rows[np.argsort(api.end_ns[rows], kind="stable")]
        ends = api.end_ns[rows]
        q = np.flatnonzero(rank == r)
        pos = np.searchsorted(ends, lo[q])
        ok = pos < ends.size
        ok[ok] &= ends[pos[ok]] <= hi[q][ok]
        found[q[ok]] = rows[pos[ok]]
    return found


def _op_names(tl: Timeline, act: GpuActivity, rows: np.ndarray) -> list[str]:
    """Name of each GPU activity row, prefixed with its kind unless a kernel (``memcpy: Memcpy HtoD ...``)."""
    return [
        name if t == 0 else f"{OP_TYPE_NAMES[t]}: {name}"
        for name, t in zip(np.array(tl.names, dtype=object)[act.name_id[rows]].tolist(), act.op_type[rows].tolist())
    ]


def _summarize(tl: Timeline, act: GpuActivity, gaps: _GapColumns | None, threshold_ns: int) -> GapReport:
    """Totals per cause over every gap, and :class:`Gap` objects for the :data:`MAX_LISTED_GAPS` longest."""
    if gaps is None:
        return GapReport(threshold_us=threshold_ns / 1e3, count=0, total_ms=0.0, by_cause=(), longest=())
    api = tl.api_calls
    names = np.array(("",) + tl.names, dtype=object)  # index 0: no call
    dur_ns = gaps.g1 - gaps.g0
    dur_us = (dur_ns / 1e3).tolist()
    total = sum(dur_us) / 1e3
    sync_call = np.array(_call_names(api, gaps.sync, names), dtype=object)
    where = np.where(gaps.host_op != "", gaps.host_op, sync_call)  # the host op, else the sync call
    by_cause = []
    for cause in CAUSES:
        mine = np.flatnonzero(gaps.cause == cause)
        if not mine.size:
            continue
        ms = sum(dur_us[i] for i in mine.tolist()) / 1e3
        ops = Counter(w for w in where[mine].tolist() if w)
        top = ops.most_common(1)[0][0] if ops else ""
        by_cause.append(
            CauseTotal(
                cause=cause, count=int(mine.size), total_ms=ms, share=ms / total if total else 0.0, top_host_op=top
            )
        )
    by_cause.sort(key=lambda c: -c.total_ms)
    is_sync = gaps.cause == "host_sync"
    return GapReport(
        threshold_us=threshold_ns / 1e3,
        count=len(dur_us),
        total_ms=total,
        by_cause=tuple(by_cause),
        longest=_longest(tl, act, gaps, dur_us, sync_call, names),
        host_syncs=(gaps.sync[is_sync], dur_ns[is_sync]),
    )


def _longest(
    tl: Timeline, act: GpuActivity, gaps: _GapColumns, dur_us: list[float], sync_call: np.ndarray, names: np.ndarray
) -> tuple[Gap, ...]:
    """The :data:`MAX_LISTED_GAPS` longest gaps, longest first, ties in gap order."""
    pick = sorted(range(len(dur_us)), key=lambda i: -dur_us[i])[:MAX_LISTED_GAPS]
    sel = np.array(pick, dtype=np.int64)
    prev, nxt = gaps.prev[sel], gaps.nxt[sel]
    return tuple(
        Gap(
            rank=r,
            device=d,
            start_ms=a / 1e6,
            dur_us=dur_us[i],
            cause=c,
            prev_op=po,
            next_op=no,
            launch_call=lc,
            sync_call=sc,
            host_op=ho,
            pageable=bool(pg) and c in ("h2d_copy", "d2h_copy"),
        )
        for i, r, d, a, c, po, no, lc, sc, ho, pg in zip(
            pick,
            act.rank[nxt].tolist(),
            act.device[nxt].tolist(),
            gaps.g0[sel].tolist(),
            gaps.cause[sel].tolist(),
            _op_names(tl, act, prev),
            _op_names(tl, act, nxt),
            _call_names(tl.api_calls, gaps.launch[sel], names),
            sync_call[sel].tolist(),
            gaps.host_op[sel].tolist(),
            gaps.pageable[sel].tolist(),
        )
    )
