"""The op and kernel tables from torch.profiler's raw Kineto events (:func:`surrobench.collect.kineto_ops.ops_from_kineto`),
built in the profiling child. Kernels go to their launching op (innermost op around the launch call; a metadata
op's to its enclosing op, :class:`~surrobench.records.kernels.KernelRows`); annotations (``record_function``,
``ProfilerStep#N``, Dynamo's compiled regions) are not rows. Op chains and module paths (the
``surrobench::module::<path>`` ranges of :func:`surrobench.collect.child.module_ranges`) follow ``cpu_parent`` links.
"""

from __future__ import annotations

import re
from collections import Counter

from surrobench.records.kernels import KernelRows, KernelTable, module_path
from surrobench.records.ops import COMPILED_REGION, SMALL_KERNEL_US, OpRows, OpTable, categorize, VIEWS

#: Names of the ranges torch.profiler and surrobench put around steps and phases; never rows. In memory
#: torch renames ``ProfilerStep#N`` to ``ProfilerStep*``.
_ANNOTATION_NAME = re.compile(r"^ProfilerStep(?:#\d+|\*)$|^surrobench::")
#: Runtime calls that replay a captured CUDA graph: kernels no op launched are graph nodes when one was made.
GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})


def _is_device_event(event) -> bool:
    return event.device_type != "CPU"


def _is_annotation(event) -> bool:
    """A range, not an op: a user annotation, a step or phase range, or Dynamo's compiled-region range."""
    return (
        event.is_user_annotation or bool(_ANNOTATION_NAME.match(event.name)) or bool(COMPILED_REGION.match(event.name))
    )


def _chain(event, annotations: set[str]) -> tuple[list[str], str | None]:
    """(the op names from ``event`` up through its ``cpu_parent`` links, innermost first; the innermost module
    path around it, None when no module range encloses it)."""
    ops, module, node = [], None, event
    while node is not None:
        path = module_path(node.name)
        if path is not None:
            module = path if module is None else module
        elif node.name not in annotations and not _is_annotation(node):
            ops.append(node.name)
        node = getattr(node, "cpu_parent", None)
    return ops, module


def _outermost(event, annotations: set[str], top: dict) -> str | None:
    """The outermost op from ``event`` up its ``cpu_parent`` links, itself included (ranges and module paths
    skipped), None when none; memoized by ``id`` in ``top``: each enclosing event is looked at once."""
    if event is None:
        return None
    if id(event) not in top:
        above = _outermost(getattr(event, "cpu_parent", None), annotations, top)
        op = above is None and module_path(event.name) is None and event.name not in annotations
        top[id(event)] = above if above is not None else (event.name if op and not _is_annotation(event) else None)
    return top[id(event)]


def tables_from_events(events, *, active_steps: int, modules_lost: str | None = None) -> tuple[OpTable, KernelTable]:
    """Both tables from the :class:`~surrobench.collect.kineto_ops.OpEvent` objects (µs) of ``active_steps`` steps.
    Annotations' GPU-side copies are not kernel time; basis ``device`` when any device event was recorded, else
    ``cpu``. Device time no op claimed: a compiled region's (kernels listed on a ``Torch-Compiled Region``
    range), else a graph replay's when a graph was launched, else lost. ``small_kernel_count``: kernels under
    :data:`~surrobench.records.ops.SMALL_KERNEL_US`; ``modules_lost``: why no module ranges were recorded, None when
    they were."""
    events = list(events)
    host = {(e.name, e.is_user_annotation) for e in events if not _is_device_event(e)}  # a few 100 of 100,000s
    annotations = {name for name, user in host if user or _ANNOTATION_NAME.match(name) or COMPILED_REGION.match(name)}
    device = [e for e in events if _is_device_event(e) and e.name not in annotations and not _is_annotation(e)]
    rows, kernels, attributed, on_device = OpRows(), KernelRows(), Counter(), bool(device)
    claimed, claimed_calls, region_us, graphs = Counter(), Counter(), Counter(), False
    top: dict[int, str | None] = {}
    for e in events:
        graphs = graphs or e.name in GRAPH_LAUNCH_CALLS
        if not _is_device_event(e) and COMPILED_REGION.match(e.name):
            region_us.update({k.name: k.duration for k in e.kernels})
        if _is_device_event(e) or e.name in annotations or e.is_async:
            continue
        rows.calls[e.name] += 1  # the op event's calls, times, memory and input shapes
        rows.self_device[e.name] += e.self_device_time_total
        rows.total_device[e.name] += e.device_time_total
        rows.self_cpu[e.name] += e.self_cpu_time_total
        rows.mem[e.name] += e.device_memory_usage if on_device else e.cpu_memory_usage
        rows.self_mem[e.name] += e.self_device_memory_usage if on_device else e.self_cpu_memory_usage
        if e.input_shapes:
            rows.shapes[e.name][str(e.input_shapes)] += 1
        outer = _outermost(getattr(e, "cpu_parent", None), annotations, top)
        if outer is not None:
            rows.inside[e.name][outer] += e.self_cpu_time_total
        chain = None
        for kernel in e.kernels:
            chain = chain or _chain(e, annotations)
            owner = kernels.add(kernel.name, kernel.duration, *chain)
            claimed[kernel.name] += kernel.duration
            claimed_calls[kernel.name] += 1
            # a metadata op's kernel: its enclosing op's (records.kernels), or outside any op an unattributed row
            if owner != e.name and (owner is not None or categorize(e.name) == VIEWS):
                rows.self_device[e.name] -= kernel.duration
                rows.total_device[e.name] -= kernel.duration
                if owner is None:
                    continue
                rows.self_device[owner] += kernel.duration
            attributed[kernel.name] += kernel.duration
    durations = [(e.name, e.duration_us) for e in device]
    by_name, count = rows.add_unattributed(durations, attributed)
    for name, us in by_name.items():  # device time no op claimed: a compiled region's, a replay's, or lost
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
    if modules_lost is not None:
        kernels.lost_modules(modules_lost)
    kernel_us = [us for name, us in durations if categorize(name) != "memcpy/memset"]
    table = rows.finish(
        "device" if device else "cpu",
        active_steps=active_steps,
        source="profiler",
        kernel_count=len(kernel_us) if device else None,
        small_kernel_count=sum(us < SMALL_KERNEL_US for us in kernel_us) if device else None,
        small_kernel_us=SMALL_KERNEL_US if device else None,
        has_shapes=bool(rows.shapes),
        has_memory=True,
    )
    return table, kernels.finish(active_steps=active_steps, source="profiler")
