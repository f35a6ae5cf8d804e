"""One rank's trace reduced for the cross-rank analysis: small picklable per-step and per-collective arrays.

Collectives are NCCL kernels on a GPU trace (an early rank spins inside until the last arrives), else gloo's
``gloo:<collective>`` ranges (ProcessGroupGloo's ``RECORD_FUNCTION``), else the ``c10d::*`` ops, which for async
backends only enqueue (tens of µs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import GpuActivity, gpu_activity
from surrobench.analysis.ops import op_table_from_timeline
from surrobench.analysis.timeline import FORWARD_RANGES
from surrobench.records import intervals
from surrobench.records.ops import categorize
from surrobench.trace.model import Timeline

TOP_OPS = 30
"""Ops kept per rank, largest first: enough to find the odd rank, small enough to send back."""

_GROUP_SHIFT = 44  # step index above the time bits: 2**44 ns is 4.9 hours of trace


@dataclass(frozen=True, eq=False)
class RankSummary:
    """One rank's trace, ms unless ``_ns``, arrays ``(steps,)`` or ``(collectives,)``: step keys and ``step_ms``, busy
    ``compute_ms``, ``comm_ms`` and ``exposed_comm_ms``, each collective's step, name, entry and exit, top ``op_ms``."""

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
    """The :class:`RankSummary` of a one-rank timeline. Raises ValueError: several ranks (use :meth:`Timeline.for_rank`)."""
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
    """Union of each group's intervals (group -1 dropped) as ``(start, end, group)``, groups shifted apart."""
    keep = group >= 0
    offset = group[keep].astype(np.int64) << _GROUP_SHIFT
    s, e = intervals.merge(start[keep] + offset, end[keep] + offset)
    return s, e, (s >> _GROUP_SHIFT).astype(np.int64)


def _per_group(merged: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> np.ndarray:
    """Summed length (ns) of the merged intervals of each of ``n`` groups."""
    s, e, g = merged
    return np.bincount(g, weights=e - s, minlength=n)[:n]


HOST_COLLECTIVE_RANGE = re.compile(r"^gloo:")
"""ProcessGroupGloo's work ranges: ``gloo:all_reduce``, ``gloo:broadcast``, ``gloo:barrier`` ..."""

HOST_COLLECTIVE_OP = re.compile(r"^c10d::|^record_param_comms$")
"""c10d's dispatcher ops and its ``record_param_comms`` op around each collective."""


@dataclass(frozen=True, eq=False)
class Collectives:
    """A timeline's collectives by start, ``(n,)`` arrays, ns; ``issue_ns`` (host issue) assigns the step."""

    source: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    issue_ns: np.ndarray
    name_id: np.ndarray


def collectives(tl: Timeline, act: GpuActivity) -> Collectives:
    """The collectives of ``tl``: NCCL kernels, else gloo ranges, else outermost c10d ops."""
    if act.is_nccl.any():
        k = act.is_nccl
        return Collectives("nccl", act.start_ns[k], act.end_ns[k], act.launch_ns[k], act.name_id[k])
    rg = tl.ranges.take(tl.name_mask(tl.ranges.name_id, HOST_COLLECTIVE_RANGE.search))
    if len(rg):
        return Collectives("gloo", rg.start_ns, rg.end_ns, rg.start_ns, rg.name_id)
    ops = tl.cpu_ops.take(tl.name_mask(tl.cpu_ops.name_id, HOST_COLLECTIVE_OP.search))
    keep, reach = np.ones(len(ops), dtype=bool), {}  # rows (sorted by start) not inside an earlier one of their thread
    rows = zip(ops.start_ns.tolist(), ops.end_ns.tolist(), ops.rank.tolist(), ops.tid.tolist())
    for i, (s, e, r, t) in enumerate(rows):
        if s < reach.get((r, t), -1):
            keep[i] = False
        else:
            reach[(r, t)] = e
    ops = ops.take(keep)
    if len(ops):
        return Collectives("c10d", ops.start_ns, ops.end_ns, ops.start_ns, ops.name_id)
    empty = np.empty(0, dtype=np.int64)
    return Collectives("", empty, empty, empty, empty.astype(np.int32))
