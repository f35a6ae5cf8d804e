"""The op table and kernel table of a :class:`~surrobench.trace.model.Timeline`."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from surrobench.analysis.activity import GRAPH_LAUNCH_CALLS, KERNEL, GpuActivity, gpu_activity, launching_op
from surrobench.analysis.activity import call_mask, take
from surrobench.records.kernels import KernelRows, KernelTable, module_path
from surrobench.records.ops import COMPILED_REGION, SMALL_KERNEL_US, OpRows, OpTable, categorize, VIEWS
from surrobench.trace.model import Timeline


def op_table_from_timeline(tl: Timeline) -> OpTable:
    """The op table from a loaded trace: a GPU op belongs to the CPU op of its launch call
    (:func:`~surrobench.analysis.activity.launching_op`); ranges, metadata ops (their kernels go to the enclosing op)
    and Dynamo's compiled region (:data:`~surrobench.records.ops.COMPILED_REGION`) are no rows."""
    ops, act = tl.cpu_ops, gpu_activity(tl)
    region = np.array([bool(COMPILED_REGION.match(tl.name(n))) for n in ops.name_id.tolist()], dtype=bool)
    owner = launching_op(tl, act.launch)
    owner = np.where(take(region, owner, False), -1, owner)  # a new array: the walk below moves its entries
    parent, order = _parents(ops)
    metadata = np.array([categorize(tl.name(n)) == VIEWS for n in ops.name_id.tolist()], dtype=bool)
    while (moving := take(metadata, owner, False)).any():  # a metadata op's kernels: nearest enclosing op not one
        owner[moving] = parent[owner[moving]]
    dur_us = (act.end_ns - act.start_ns) / 1e3
    self_device = np.bincount(owner[owner >= 0], weights=dur_us[owner >= 0], minlength=len(ops))
    self_cpu, total_device = ops.dur_ns / 1e3, self_device.copy()
    for i in order[::-1]:  # children before their parents
        if parent[i] >= 0:
            self_cpu[parent[i]] -= ops.dur_ns[i] / 1e3
            total_device[parent[i]] += total_device[i]
    rows = OpRows()
    for i, name_id in enumerate(ops.name_id.tolist()):
        if region[i]:
            continue
        name = tl.name(name_id)
        rows.calls[name] += 1
        rows.self_device[name] += self_device[i]
        rows.total_device[name] += total_device[i]
        rows.self_cpu[name] += max(self_cpu[i], 0.0)
    orphans = owner < 0
    rows.add_unattributed([(tl.name(n), us) for n, us in zip(act.name_id[orphans], dur_us[orphans])], Counter())
    kernel_us = dur_us[act.op_type == KERNEL]
    device = len(act) > 0
    return rows.finish(
        "device" if device else "cpu",
        active_steps=max(len(tl.steps), 1),
        source="trace",
        kernel_count=int(kernel_us.size) if device else None,
        small_kernel_count=int((kernel_us < SMALL_KERNEL_US).sum()) if device else None,
        small_kernel_us=SMALL_KERNEL_US if device else None,
    )


def kernel_table_from_timeline(tl: Timeline) -> KernelTable:
    """The kernel table from a loaded trace: every kernel, memcpy and memset with its class, credited op (launching op
    and its enclosing chain, rules of :class:`~surrobench.records.kernels.KernelRows`; else a graph replay, a compiled
    region, or none) and innermost ``surrobench::module::<path>`` (``module_path_lost`` when the trace has none)."""
    ops, act = tl.cpu_ops, gpu_activity(tl)
    names = [tl.name(n) for n in ops.name_id.tolist()]
    parent, _ = _parents(ops)
    owner = launching_op(tl, act.launch)
    graph = take(call_mask(tl, GRAPH_LAUNCH_CALLS), act.launch, False)  # replayed by a graph launch call
    modules, found = _module_paths(tl, act)
    chains: dict[int, tuple[list[str], bool]] = {}
    dur_us = (act.end_ns - act.start_ns) / 1e3
    rows = KernelRows()
    for i, o in enumerate(owner.tolist()):
        if o not in chains:
            chains[o] = _op_chain(o, names, parent)
        chain, in_region = chains[o]
        lost = "graph_replay" if graph[i] else "compiled" if in_region else "no_op"
        rows.add(tl.name(act.name_id[i]), float(dur_us[i]), chain, modules[i], lost=lost)
    if not found:
        rows.lost_modules("the trace has no surrobench::module:: ranges (recorded on CUDA eager profiles)")
    return rows.finish(active_steps=max(len(tl.steps), 1), source="trace")


def _op_chain(op: int, names: list[str], parent: np.ndarray) -> tuple[list[str], bool]:
    """(op names from ``op`` outward, innermost first, to a compiled region; whether one was reached)."""
    chain = []
    while op >= 0:
        if COMPILED_REGION.match(names[op]):
            return chain, True
        chain.append(names[op])
        op = int(parent[op])
    return chain, False


def _module_paths(tl: Timeline, act: GpuActivity) -> tuple[list[str | None], bool]:
    """(innermost module path per GPU op's launch call, or None; whether the trace has module ranges)."""
    paths: list[str | None] = [None] * len(act)
    r = tl.ranges
    by_thread: dict[tuple[int, int], list[tuple[int, int, str]]] = defaultdict(list)
    for start, end, name_id, rank, tid in zip(r.start_ns.tolist(), r.end_ns.tolist(), r.name_id, r.rank, r.tid):
        if (path := module_path(tl.name(int(name_id)))) is not None:
            by_thread[(int(rank), int(tid))].append((start, end, path))
    if not by_thread:
        return paths, False
    api, launched = tl.api_calls, np.flatnonzero(act.launch >= 0)
    calls = act.launch[launched]
    launches: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for i, t, rank, tid in zip(launched.tolist(), act.launch_ns[launched].tolist(), api.rank[calls], api.tid[calls]):
        launches[(int(rank), int(tid))].append((t, i))
    for thread, ranges in by_thread.items():
        ranges.sort(key=lambda x: (x[0], -x[1]))
        stack, k = [], 0
        for t, i in sorted(launches.get(thread, ())):
            while k < len(ranges) and ranges[k][0] <= t:
                stack.append(ranges[k])
                k += 1
            while stack and stack[-1][1] <= t:
                stack.pop()
            paths[i] = stack[-1][2] if stack else None
    return paths, True


def _parents(ops) -> tuple[np.ndarray, np.ndarray]:
    """(row of the innermost CPU op enclosing each op on its thread or -1, rows parents-first)."""
    parent = np.full(len(ops), -1, dtype=np.int64)
    stacks: dict[tuple[int, int], list[int]] = defaultdict(list)
    end = ops.end_ns
    order = np.lexsort((-ops.dur_ns, ops.start_ns))
    for i in order.tolist():
        stack = stacks[(int(ops.rank[i]), int(ops.tid[i]))]
        while stack and end[stack[-1]] <= ops.start_ns[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent, order
