"""Which events of a trace are collectives, and when each rank entered and left them: NCCL kernels on a GPU trace
(an early rank spins inside until the last arrives), else gloo's ``gloo:<collective>`` ranges (ProcessGroupGloo's
``RECORD_FUNCTION``), else the ``c10d::*`` ops, which for async backends only enqueue (tens of µs)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import GpuActivity
from surrobench.trace.model import Timeline

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
    rank: np.ndarray

    def __len__(self) -> int:
        return int(self.start_ns.size)


def collectives(tl: Timeline, act: GpuActivity) -> Collectives:
    """The collectives of ``tl``: NCCL kernels, else gloo ranges, else outermost c10d ops."""
    if act.is_nccl.any():
        k = act.is_nccl
        return Collectives("nccl", act.start_ns[k], act.end_ns[k], act.launch_ns[k], act.name_id[k], act.rank[k])
    rg = tl.ranges.take(tl.name_mask(tl.ranges.name_id, HOST_COLLECTIVE_RANGE.search))
    if len(rg):
        return Collectives("gloo", rg.start_ns, rg.end_ns, rg.start_ns, rg.name_id, rg.rank)
    ops = tl.cpu_ops.take(tl.name_mask(tl.cpu_ops.name_id, HOST_COLLECTIVE_OP.search))
    ops = ops.take(_top_level(ops.start_ns, ops.end_ns, ops.rank, ops.tid))
    if len(ops):
        return Collectives("c10d", ops.start_ns, ops.end_ns, ops.start_ns, ops.name_id, ops.rank)
    empty = np.empty(0, dtype=np.int64)
    return Collectives("", empty, empty, empty, empty.astype(np.int32), empty.astype(np.int32))


def _top_level(start: np.ndarray, end: np.ndarray, rank: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """Bool mask of rows not contained in an earlier row of the same (rank, thread); rows sorted by start."""
    keep = np.ones(start.size, dtype=bool)
    reach: dict[tuple[int, int], int] = {}
    for i, (s, e, r, t) in enumerate(zip(start.tolist(), end.tolist(), rank.tolist(), tid.tolist())):
        if s < reach.get((r, t), -1):
            keep[i] = False
        else:
            reach[(r, t)] = e
    return keep
