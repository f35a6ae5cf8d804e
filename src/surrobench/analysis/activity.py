"""Joins every analyzer needs: all GPU work as one table (:class:`GpuActivity`; busy time is its union), each op's
launch call by ``(rank, correlation)`` (CUPTI ``correlationId``), each call's CPU op by Kineto's ``External id``
or else by time on its thread."""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass

import numpy as np

from surrobench.collect.op_events import GRAPH_LAUNCH_CALLS as GRAPH_LAUNCH_CALLS
from surrobench.trace.model import MISSING, HostMemory, Timeline

KERNEL, MEMCPY, MEMSET = 0, 1, 2
OP_TYPE_NAMES = ("kernel", "memcpy", "memset")

# Host calls that block until the GPU has finished earlier work (CUDA Runtime API reference:
# "synchronous" behaviour of cudaMemcpy; *Synchronize functions).
SYNC_CALLS = frozenset(
    "cudaDeviceSynchronize cudaStreamSynchronize cudaEventSynchronize cudaMemcpy cudaMemcpy2D cudaMemcpy3D"
    " cudaMemcpyFromSymbol cudaMemcpyToSymbol cuCtxSynchronize cuStreamSynchronize cuEventSynchronize cuMemcpyDtoH"
    " cuMemcpyHtoD cuMemcpy".split()
)
STREAM_WAIT_CALLS = frozenset({"cudaStreamWaitEvent", "cuStreamWaitEvent"})
_NCCL = re.compile(r"nccl", re.IGNORECASE)
_KEY_SHIFT = 40  # correlation ids stay far below 2**40; the rank goes above


@dataclass(frozen=True, eq=False)
class GpuActivity:
    """Kernels, memcpy, memsets by start, ``(n,)``; ``launch``: launching ``api_calls`` row (-1: none)."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    op_type: np.ndarray  # KERNEL, MEMCPY or MEMSET
    name_id: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    rank: np.ndarray
    correlation: np.ndarray
    copy_kind: np.ndarray  # CopyKind for copies, UNKNOWN otherwise
    pageable: np.ndarray  # bool: a copy from or to pageable host memory
    launch: np.ndarray
    launch_ns: np.ndarray
    is_nccl: np.ndarray

    def __len__(self) -> int:
        return int(self.start_ns.size)


def gpu_activity(tl: Timeline) -> GpuActivity:
    """Stack the three GPU tables of ``tl`` and link each op to its launch call."""
    parts = (tl.kernels, tl.memcpy, tl.memset)
    cat = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    op_type = np.concatenate([np.full(len(p), i, dtype=np.int8) for i, p in enumerate(parts)])
    copy_kind = np.concatenate([np.zeros(len(tl.kernels), np.int8), tl.memcpy.kind, np.zeros(len(tl.memset), np.int8)])
    host_mem = np.concatenate(
        [np.zeros(len(tl.kernels), np.int8), tl.memcpy.host_memory, np.zeros(len(tl.memset), np.int8)]
    )
    start = cat("start_ns")
    order = np.argsort(start, kind="stable")
    name_id, rank, corr = cat("name_id")[order], cat("rank")[order], cat("correlation")[order]
    op_type, start = op_type[order], start[order]
    launch = _lookup(tl.api_calls.rank, tl.api_calls.correlation, rank, corr)
    return GpuActivity(
        start_ns=start,
        end_ns=np.concatenate([p.end_ns for p in parts])[order],
        op_type=op_type,
        name_id=name_id,
        device=cat("device")[order],
        stream=cat("stream")[order],
        rank=rank,
        correlation=corr,
        copy_kind=copy_kind[order],
        pageable=host_mem[order] == HostMemory.PAGEABLE,
        launch=launch,
        launch_ns=np.where(launch >= 0, take(tl.api_calls.start_ns, launch), start),
        is_nccl=(op_type == KERNEL) & tl.name_mask(name_id, _NCCL.search),
    )


def take(column: np.ndarray, rows: np.ndarray, fill: int = -1) -> np.ndarray:
    """``column[rows]`` where ``rows >= 0``, ``fill`` elsewhere (rows of -1 mean "no such row")."""
    if column.size == 0:
        return np.full(rows.shape, fill, dtype=column.dtype)
    return np.where(rows >= 0, column[np.maximum(rows, 0)], fill)


def call_mask(tl: Timeline, names: frozenset[str]) -> np.ndarray:
    """Bool mask over ``tl.api_calls`` of calls named in ``names``."""
    return tl.name_mask(tl.api_calls.name_id, names.__contains__)


def launching_op(tl: Timeline, calls: np.ndarray) -> np.ndarray:
    """``tl.cpu_ops`` row issuing each API call (External id, else top-level op on its thread); -1: none."""
    return _inner_outer(tl, calls)[0]


def _inner_outer(tl: Timeline, calls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`launching_op`, top-level op containing the call) rows for each call row; -1 where none."""
    ops = tl.cpu_ops
    none = np.full(calls.shape, -1, dtype=np.int64)
    known = calls >= 0
    api, rows = tl.api_calls, calls[known]
    inner, outer = none.copy(), none.copy()
    outer[known] = enclosing_top_level(ops, api.rank[rows], api.tid[rows], api.start_ns[rows])
    found = _lookup(ops.rank, ops.external_id, api.rank[rows], api.external_id[rows])
    inner[known] = np.where(found >= 0, found, outer[known])
    return inner, outer


def host_op_chains(tl: Timeline, calls: np.ndarray) -> list[str]:
    """``"outermost > innermost"`` CPU op names around each API call row (``""``: none); innermost: :func:`launching_op`."""
    ops = tl.cpu_ops
    inner, outer = _inner_outer(tl, calls)
    # Name ids, -1 for none; the outer op is named only when it is not the inner one.
    o_name = np.where(outer != inner, take(ops.name_id, outer), -1).astype(np.int64)
    i_name = take(ops.name_id, inner).astype(np.int64)
    # One string per distinct pair of names: calls of every step share a few chains.
    pairs, index = np.unique((o_name + 1) * (len(tl.names) + 1) + (i_name + 1), return_inverse=True)
    chains = []
    for o, i in zip((pairs // (len(tl.names) + 1) - 1).tolist(), (pairs % (len(tl.names) + 1) - 1).tolist()):
        chains.append(" > ".join(([tl.names[o]] if o >= 0 else []) + ([tl.names[i]] if i >= 0 else [])))
    return np.array(chains, dtype=object)[index.ravel()].tolist()


def _lookup(rank: np.ndarray, ids: np.ndarray, q_rank: np.ndarray, q_ids: np.ndarray) -> np.ndarray:
    """Row with the same ``(rank, id)`` for each query; -1 where none (or the id is missing)."""
    keys = (rank.astype(np.int64) << _KEY_SHIFT) | ids
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    query = (q_rank.astype(np.int64) << _KEY_SHIFT) | q_ids
    pos = np.minimum(np.searchsorted(keys, query), max(keys.size - 1, 0))
    hit = (q_ids != MISSING) & (keys.size > 0)
    hit = hit & (keys[pos] == query) if keys.size else np.zeros(query.shape, dtype=bool)
    return np.where(hit, order[pos] if keys.size else -1, -1)


def enclosing_top_level(table, rank: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Top-level row of ``table`` on thread ``(rank, tid)`` containing each ``t`` ``(m,)``; -1 where none."""
    if len(table) == 0 or t.size == 0:
        return np.full(t.shape, -1, dtype=np.int64)
    groups, g_top, rows, key = _top_level_rows(table)
    end = table.end_ns
    q_key = _thread_key(rank, tid)
    pos_g = np.minimum(np.searchsorted(groups, q_key), groups.size - 1)
    q_group = np.where(groups[pos_g] == q_key, pos_g, -1)
    pos = np.searchsorted(key, (q_group.astype(np.int64) << 44) + t, side="right") - 1
    pos_c = np.maximum(pos, 0)
    hit = (pos >= 0) & (q_group >= 0) & (g_top[pos_c] == q_group) & (end[rows[pos_c]] >= t)
    return np.where(hit, rows[pos_c], -1)


_TOP_LEVEL: list = [None, None]  # (weak reference to the last table indexed, its index)


def _top_level_rows(table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(thread keys, thread per top-level row, rows, sorted ``thread << 44 | start`` keys); last one cached."""
    ref, index = _TOP_LEVEL
    if ref is not None and ref() is table:
        return index
    groups, group = np.unique(_thread_key(table.rank, table.tid), return_inverse=True)
    group = group.ravel()
    end = table.end_ns
    order = np.lexsort((-end, table.start_ns, group))
    g, s, e = group[order], table.start_ns[order], end[order]
    # Reset the running maximum at every thread boundary: shift each group's ends above all earlier ones.
    offset = g.astype(np.int64) << 44
    reach = np.maximum.accumulate(e + offset) - offset
    top = np.ones(s.size, dtype=bool)
    top[1:] = (s[1:] >= reach[:-1]) | (g[1:] != g[:-1])
    index = groups, g[top], order[top], (g[top].astype(np.int64) << 44) + s[top]
    with contextlib.suppress(TypeError):  # a table type without weak references: not kept
        _TOP_LEVEL[:] = [weakref.ref(table), index]
    return index


def _thread_key(rank: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """One int64 per (rank, thread): thread ids fit in 32 bits (Linux tids; nsys keeps the tid in 24)."""
    return (rank.astype(np.int64) << 32) + (tid & 0xFFFFFFFF)
