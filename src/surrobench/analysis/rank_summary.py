"""One rank's trace reduced to what the cross-rank analysis compares: per step, compute time and time
inside collectives; every collective's entry and exit on the common clock; the ops that cost the time.

:func:`rank_summary` runs where the rank's trace was loaded (a worker of a process pool or of a Dask
cluster) and returns a small picklable :class:`RankSummary`: a few arrays of one value per step or per
collective, never the events.

Steps: ``ProfilerStep#N`` ranges (torch.profiler numbers steps the same on every rank that runs the same
schedule), else the ``forward`` ranges in order, else the whole trace as one step. GPU work and
collectives belong to the step whose host range issued them (launch time), as in
:mod:`surrobench.analysis.busy`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import gpu_activity
from surrobench.analysis.collectives import HOST_COLLECTIVE_OP, collectives
from surrobench.analysis.ops import op_table_from_timeline
from surrobench.analysis.trace_facts import FORWARD_RANGES
from surrobench.records import intervals
from surrobench.records.ops import categorize
from surrobench.trace.model import Timeline

TOP_OPS = 30
"""Ops kept per rank (largest time per step first): enough to find what one rank did more than the
others, small enough to send back from a worker."""

_GROUP_SHIFT = 44  # step index above the time bits: 2**44 ns is 4.9 hours of trace


@dataclass(frozen=True, eq=False)
class RankSummary:
    """One rank's trace, per step and per collective. Times ms unless ``_ns``; arrays ``(steps,)`` or
    ``(collectives,)``.

    Attributes:
        rank: the rank; ``path``: its trace file(s).
        basis: ``"device"`` (GPU activity in the trace) or ``"cpu"``: what compute and ops measure.
        step_source: ``"ProfilerStep"``, ``"forward"`` or ``"trace"`` (no step ranges: one step).
        steps: step keys (``N`` of ``ProfilerStep#N``, or the ordinal of the forward range).
        step_ms: host duration of each step.
        compute_ms: busy time of the non-communication work issued in the step (GPU ops on a device
            basis, CPU ops on a CPU basis).
        comm_ms: time inside collectives issued in the step (union).
        exposed_comm_ms: the part of ``comm_ms`` with no compute running on the rank at the same time.
        comm_source: :attr:`~surrobench.analysis.collectives.Collectives.source`.
        coll_step: index into ``steps`` of each collective; ``coll_name``: its name;
        coll_start_ns, coll_end_ns: its entry and exit on the trace's source clock (comparable across ranks
            when their clocks agree: one host, or hosts synchronized well below the waits of interest).
        op_ms: ``{op name: self time per step, ms}`` of the :data:`TOP_OPS` largest non-communication ops.
    """

    rank: int
    path: str
    basis: str
    step_source: str
    steps: np.ndarray
    step_ms: np.ndarray
    compute_ms: np.ndarray
    comm_ms: np.ndarray
    exposed_comm_ms: np.ndarray
    comm_source: str
    coll_step: np.ndarray
    coll_name: tuple[str, ...]
    coll_start_ns: np.ndarray
    coll_end_ns: np.ndarray
    op_ms: dict[str, float]


def rank_summary(tl: Timeline) -> RankSummary:
    """The :class:`RankSummary` of a one-rank timeline (``tl.meta.ranks == (r,)``).

    Raises:
        ValueError: ``tl`` holds several ranks (split it with :meth:`Timeline.for_rank`).
    """
    if len(tl.meta.ranks) != 1:
        raise ValueError(f"rank_summary needs one rank's timeline, got ranks {tl.meta.ranks}")
    act = gpu_activity(tl)
    source, keys, w0, w1 = step_windows(tl)
    coll = collectives(tl, act)
    if len(act):
        compute = ~act.is_nccl
        c_start, c_end, c_issue = act.start_ns[compute], act.end_ns[compute], act.launch_ns[compute]
    else:
        ops = tl.cpu_ops.take(~tl.name_mask(tl.cpu_ops.name_id, HOST_COLLECTIVE_OP.search))
        c_start, c_end, c_issue = ops.start_ns, ops.end_ns, ops.start_ns
    comp_group = _step_of(c_issue, w0, w1)
    comm_group = _step_of(coll.issue_ns, w0, w1)
    comp = _grouped_union(c_start, c_end, comp_group)
    comm = _grouped_union(coll.start_ns, coll.end_ns, comm_group)
    n = keys.size
    comm_ns = _per_group(comm, n)
    overlap = np.bincount(comm[2], weights=intervals.busy_in(*comp[:2], comm[0], comm[1]), minlength=n)[:n]
    table = op_table_from_timeline(tl)
    per_step = {k: v for k, v in table.ms_per_step().items() if categorize(k) != "communication" and v > 0}
    top = sorted(per_step, key=lambda k: -per_step[k])[:TOP_OPS]
    inside = comm_group >= 0
    return RankSummary(
        rank=tl.meta.ranks[0],
        path=", ".join(tl.meta.paths),
        basis="device" if len(act) else "cpu",
        step_source=source,
        steps=keys,
        step_ms=(w1 - w0) / 1e6,
        compute_ms=_per_group(comp, n) / 1e6,
        comm_ms=comm_ns / 1e6,
        exposed_comm_ms=(comm_ns - overlap) / 1e6,
        comm_source=coll.source,
        coll_step=comm_group[inside].astype(np.int32),
        coll_name=tuple(tl.name(i) for i in coll.name_id[inside]),
        coll_start_ns=coll.start_ns[inside] + tl.meta.origin_ns,
        coll_end_ns=coll.end_ns[inside] + tl.meta.origin_ns,
        op_ms={k: per_step[k] for k in top},
    )


def step_windows(tl: Timeline) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """``(source, keys, start_ns, end_ns)`` of one rank's steps, sorted by start (module docstring)."""
    if len(tl.steps):
        order = np.argsort(tl.steps.start_ns, kind="stable")
        return "ProfilerStep", tl.steps.step[order], tl.steps.start_ns[order], tl.steps.end_ns[order]
    fwd = tl.ranges.take(tl.name_mask(tl.ranges.name_id, FORWARD_RANGES.__contains__))
    if len(fwd):
        outer = np.ones(len(fwd), dtype=bool)
        outer[1:] = fwd.start_ns[1:] >= np.maximum.accumulate(fwd.end_ns)[:-1]  # nested forwards: the outer one
        fwd = fwd.take(outer)
        return "forward", np.arange(len(fwd), dtype=np.int64), fwd.start_ns, fwd.end_ns
    tables = (tl.kernels, tl.memcpy, tl.memset, tl.api_calls, tl.cpu_ops, tl.ranges)
    ends = [int(t.end_ns.max()) for t in tables if len(t)]
    return "trace", np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.array([max(ends, default=0)])


def _step_of(t: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """Index of the window ``[w0, w1)`` holding each time in ``t`` (windows sorted, disjoint); -1 if none."""
    k = np.searchsorted(w0, t, side="right") - 1
    ok = (k >= 0) & (t < w1[np.maximum(k, 0)])
    return np.where(ok, k, -1)


def _grouped_union(start: np.ndarray, end: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of the intervals of each group (rows of group -1 dropped), as one merged set of intervals
    shifted apart by group, and each merged interval's group: ``(start, end, group)``."""
    keep = group >= 0
    offset = group[keep].astype(np.int64) << _GROUP_SHIFT
    s, e = intervals.merge(start[keep] + offset, end[keep] + offset)
    return s, e, (s >> _GROUP_SHIFT).astype(np.int64)


def _per_group(merged: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> np.ndarray:
    """Summed length (ns) of the merged intervals of each of ``n`` groups."""
    s, e, g = merged
    return np.bincount(g, weights=e - s, minlength=n)[:n]
