"""Which events of a trace are collective communication, and when each rank entered and left them.

Two kinds of trace, two sources of truth:

- a GPU trace with NCCL: the NCCL kernels (``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, older
  ``ncclKernel_AllReduce_RING_LL_Sum_float``, ``ncclDevKernel_SendRecv``). A kernel starts when its stream
  reaches it and ends when the data has moved, which needs every peer inside the same collective (a
  reduction cannot finish before the last rank's contribution arrives): a rank that starts it early
  spins inside the kernel until the last peer arrives;
- a host trace (the gloo backend): ProcessGroupGloo's ``gloo:<collective>`` ranges, which run on a gloo
  worker thread from the moment the work is picked up until it completes (torch.distributed's
  ``ProcessGroupGloo`` records them with ``RECORD_FUNCTION``); without them, the c10d ops themselves
  (``c10d::allreduce_``, ``record_param_comms``), which span the call of a synchronous backend.

The ``c10d::*`` op of an NCCL or gloo collective only enqueues the work (tens of µs), so it counts only
when nothing better is in the trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import GpuActivity
from surrobench.trace.model import Timeline

HOST_COLLECTIVE_RANGE = re.compile(r"^gloo:")
"""ProcessGroupGloo's work ranges: ``gloo:all_reduce``, ``gloo:broadcast``, ``gloo:barrier`` ..."""

HOST_COLLECTIVE_OP = re.compile(r"^c10d::|^record_param_comms$")
"""torch.distributed's dispatcher ops (``c10d::allreduce_``, ``c10d::send``) and the op c10d records
around each collective with its parameters (``record_param_comms``)."""


@dataclass(frozen=True, eq=False)
class Collectives:
    """The collective calls of a timeline, sorted by start; arrays of shape ``(n,)``, times in ns.

    Attributes:
        source: ``"nccl"`` (GPU kernels), ``"gloo"`` (host ranges), ``"c10d"`` (host ops) or ``""`` (none).
        start_ns: when the rank entered (the kernel's start on the GPU, the range's or op's start).
        end_ns: when it left.
        issue_ns: when the host issued it (the kernel's launch call; the start for host collectives),
            the time that assigns it to a step.
        name_id: index into the timeline's names.
        rank: the rank.
    """

    source: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    issue_ns: np.ndarray
    name_id: np.ndarray
    rank: np.ndarray

    def __len__(self) -> int:
        return int(self.start_ns.size)


def collectives(tl: Timeline, act: GpuActivity) -> Collectives:
    """The collectives of ``tl`` (module docstring): NCCL kernels when ``act`` has any, else gloo ranges,
    else top-level c10d ops (one nested in another c10d op on its thread is part of that one)."""
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
