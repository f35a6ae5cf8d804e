"""The op table of a loaded trace (:class:`~surrobench.trace.model.Timeline`): which operators cost the time.

The record, its columns and its share basis are described in :mod:`surrobench.records.ops`; the Timeline
keeps neither input shapes nor memory events, so those columns are empty here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from surrobench.analysis.activity import KERNEL, gpu_activity, launching_op
from surrobench.records.kernels import is_metadata_op
from surrobench.records.ops import COMPILED_REGION, SMALL_KERNEL_US, OpRows, OpTable
from surrobench.trace.model import Timeline


def op_table_from_timeline(tl: Timeline, *, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """The op table from a loaded trace: CPU ops, their nesting, and the GPU work each launched.

    A GPU op belongs to the CPU op that issued its launch call, as
    :func:`~surrobench.analysis.activity.launching_op` finds it (the op with the call's External id, else
    the top-level op around the call), the attribution the launch stats use too. ``ranges`` (user
    annotations) are not CPU ops, so they never hold device time; nor does a metadata op
    (:func:`~surrobench.records.kernels.is_metadata_op`), whose kernels go to its nearest enclosing op that is
    not one (:mod:`surrobench.records.kernels`); nor does Dynamo's compiled-region range
    (:data:`~surrobench.records.ops.COMPILED_REGION`), which a trace stores as a CPU op: it is no row, and
    what it launched itself (a CUDA-graph replay) gets rows named after the kernels. Input shapes and
    memory are not in a Timeline: those columns stay empty.
    """
    ops, act = tl.cpu_ops, gpu_activity(tl)
    region = np.array([bool(COMPILED_REGION.match(tl.name(n))) for n in ops.name_id.tolist()], dtype=bool)
    owner = launching_op(tl, act.launch)
    owner = np.where((owner >= 0) & region[np.maximum(owner, 0)], -1, owner) if region.any() else owner
    parent, order = _parents(ops)
    owner = _not_metadata(tl, owner, parent)
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
        small_kernel_count=int((kernel_us < small_kernel_us).sum()) if device else None,
        small_kernel_us=small_kernel_us if device else None,
    )


def _not_metadata(tl: Timeline, owner: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """``owner`` with each metadata op replaced by its nearest enclosing op that is not one (-1: none)."""
    ops = tl.cpu_ops
    metadata = np.array([is_metadata_op(tl.name(n)) for n in ops.name_id.tolist()], dtype=bool)
    if not metadata.any():
        return owner
    owner = owner.copy()
    moving = (owner >= 0) & metadata[np.maximum(owner, 0)]
    while moving.any():
        owner[moving] = parent[owner[moving]]
        moving = (owner >= 0) & metadata[np.maximum(owner, 0)]
    return owner


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


def op_table_from_trace(path: Path | str, *, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """:func:`op_table_from_timeline` of the Kineto trace at ``path`` (file or per-rank folder, gzip or not).

    Raises:
        UsageError: the path is missing or not a readable trace.
    """
    from surrobench.trace import load_trace

    return op_table_from_timeline(load_trace(path), small_kernel_us=small_kernel_us)
