"""The op table and the kernel table from torch.profiler's raw events (:func:`surrobench.collect.kineto_ops.ops_from_kineto`),
built in the profiling child; attribution: :class:`~surrobench.records.kernels.KernelRows`; op chains from
``cpu_parent``; module paths from :mod:`surrobench.collect.module_ranges`."""

from __future__ import annotations

import re
from collections import Counter

from surrobench.records.kernels import KernelRows, KernelTable, is_metadata_op, module_path
from surrobench.records.ops import COMPILED_REGION, SMALL_KERNEL_US, OpRows, OpTable, categorize

#: Ranges around steps and phases, never rows (in memory torch renames ``ProfilerStep#N`` ``ProfilerStep*``).
_ANNOTATION_NAME = re.compile(r"^ProfilerStep(?:#\d+|\*)$|^surrobench::")
#: Runtime calls that replay a captured CUDA graph: kernels no op launched are graph nodes when one was made.
_GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})


def _is_device_event(event) -> bool:
    return event.device_type != "CPU"


def _is_annotation(event) -> bool:
    """A range, not an op: a user annotation, a step or phase range, or Dynamo's compiled-region range."""
    return (
        event.is_user_annotation or bool(_ANNOTATION_NAME.match(event.name)) or bool(COMPILED_REGION.match(event.name))
    )


def _is_kernel(name: str) -> bool:
    return categorize(name) != "memcpy/memset"


def _chain(event, annotations: set[str]) -> tuple[list[str], str | None]:
    """(op names up the ``cpu_parent`` links, innermost first; innermost module path or None)."""
    ops, module, node = [], None, event
    while node is not None:
        path = module_path(node.name)
        if path is not None:
            module = path if module is None else module
        elif node.name not in annotations and not _is_annotation(node):
            ops.append(node.name)
        node = getattr(node, "cpu_parent", None)
    return ops, module


def _outermost_op(event, annotations: set[str]) -> str | None:
    """The outermost op ``event`` ran nested in (ranges skipped); None at the top of the step."""
    outer, node = None, getattr(event, "cpu_parent", None)
    while node is not None:
        if module_path(node.name) is None and node.name not in annotations and not _is_annotation(node):
            outer = node.name
        node = getattr(node, "cpu_parent", None)
    return outer


def op_table_from_events(events, *, active_steps: int, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """The op table of :func:`tables_from_events`."""
    return tables_from_events(events, active_steps=active_steps, small_kernel_us=small_kernel_us)[0]


def tables_from_events(
    events, *, active_steps: int, small_kernel_us: float = SMALL_KERNEL_US, modules_lost: str | None = None
) -> tuple[OpTable, KernelTable]:
    """The op table and kernel table of one cycle's ``events`` (µs), over ``active_steps``; annotations are no rows; the
    basis is the device when any device event exists; unclaimed device time goes to a compiled region, a graph
    replay, or is lost. ``small_kernel_us``: µs; ``modules_lost``: why no module ranges (None: recorded)."""
    events = list(events)
    annotations = {e.name for e in events if not _is_device_event(e) and _is_annotation(e)}
    device = [e for e in events if _is_device_event(e) and e.name not in annotations and not _is_annotation(e)]
    rows, kernels, attributed, on_device = OpRows(), KernelRows(), Counter(), bool(device)
    claimed, claimed_calls, region_us, graphs = Counter(), Counter(), Counter(), False
    for e in events:
        graphs = graphs or e.name in _GRAPH_LAUNCHES
        if not _is_device_event(e) and COMPILED_REGION.match(e.name):
            region_us.update({k.name: k.duration for k in e.kernels})
        if _is_device_event(e) or e.name in annotations or e.is_async:
            continue
        _add_op(rows, e, on_device)
        outer = _outermost_op(e, annotations)
        if outer is not None:
            rows.inside[e.name][outer] += e.self_cpu_time_total
        chain = None
        for kernel in e.kernels:
            chain = chain or _chain(e, annotations)
            owner = kernels.add(kernel.name, kernel.duration, *chain)
            claimed[kernel.name] += kernel.duration
            claimed_calls[kernel.name] += 1
            if owner is None and is_metadata_op(e.name):  # outside any op: an unattributed row of the op table
                rows.self_device[e.name] -= kernel.duration
                rows.total_device[e.name] -= kernel.duration
                continue
            attributed[kernel.name] += kernel.duration
            if owner is not None and owner != e.name:  # a metadata op's kernel: its enclosing op's (records.kernels)
                rows.self_device[e.name] -= kernel.duration
                rows.total_device[e.name] -= kernel.duration
                rows.self_device[owner] += kernel.duration
    durations = [(e.name, e.duration_us) for e in device]
    rows.add_unattributed(durations, attributed)
    _add_unclaimed(kernels, durations, claimed, claimed_calls, region_us, graphs)
    if modules_lost is not None:
        kernels.lost_modules(modules_lost)
    kernel_us = [us for name, us in durations if _is_kernel(name)]
    table = rows.finish(
        "device" if device else "cpu",
        active_steps=active_steps,
        source="profiler",
        kernel_count=len(kernel_us) if device else None,
        small_kernel_count=sum(us < small_kernel_us for us in kernel_us) if device else None,
        small_kernel_us=small_kernel_us if device else None,
        has_shapes=bool(rows.shapes),
        has_memory=True,
    )
    return table, kernels.finish(active_steps=active_steps, source="profiler")


def _add_op(rows: OpRows, e, on_device: bool) -> None:
    """One op event's calls, times, memory and input shapes into ``rows``."""
    rows.calls[e.name] += 1
    rows.self_device[e.name] += e.self_device_time_total
    rows.total_device[e.name] += e.device_time_total
    rows.self_cpu[e.name] += e.self_cpu_time_total
    rows.mem[e.name] += e.device_memory_usage if on_device else e.cpu_memory_usage
    rows.self_mem[e.name] += e.self_device_memory_usage if on_device else e.self_cpu_memory_usage
    if e.input_shapes:
        rows.shapes[e.name][str(e.input_shapes)] += 1


def _add_unclaimed(kernels: KernelRows, durations, claimed, claimed_calls, region_us, graphs: bool) -> None:
    """Kernel rows for unclaimed device time: compiled regions', then a graph replay's, else no op's."""
    by_name, count = Counter(), Counter()
    for name, us in durations:
        by_name[name] += us
        count[name] += 1
    for name, us in by_name.items():
        rest, calls = us - claimed.get(name, 0.0), count[name] - claimed_calls.get(name, 0)
        if rest <= 1e-6 * max(us, 1.0) or calls <= 0:
            continue
        compiled = min(rest, region_us.get(name, 0.0))
        if compiled > 0:
            share = round(calls * compiled / rest)
            kernels.add(name, compiled, [], None, lost="compiled", calls=max(share, 1))
            rest, calls = rest - compiled, calls - share
        if rest > 1e-6 * max(us, 1.0) and calls > 0:
            kernels.add(name, rest, [], None, lost="graph_replay" if graphs else "no_op", calls=calls)
