"""The op table from torch.profiler's in-memory events (``prof.events()``), built in the profiling child.

Kernels are attributed to their launching op (the innermost op around the launch call), user annotations
(``record_function``, ``ProfilerStep#N``) and Dynamo's compiled-region ranges are not rows; the record and its columns are described in
:mod:`surrobench.records.ops`.
"""

from __future__ import annotations

import re
from collections import Counter

from surrobench.records.ops import COMPILED_REGION, SMALL_KERNEL_US, OpRows, OpTable, categorize

#: Names of the ranges torch.profiler and surrobench put around steps and phases; never rows. In memory
#: torch renames ``ProfilerStep#N`` to ``ProfilerStep*``.
_ANNOTATION_NAME = re.compile(r"^ProfilerStep(?:#\d+|\*)$|^surrobench::")
_MEMORY_EVENTS = frozenset({"[memory]", "[OutOfMemory]"})


def _attr(obj, *names: str, default=0):
    """The first of ``names`` that ``obj`` has: torch renamed ``*_cuda_*`` to ``*_device_*`` in 2.4."""
    for name in names:
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _is_device_event(event) -> bool:
    return str(_attr(event, "device_type", default="CPU")).rsplit(".", 1)[-1] != "CPU"


def _is_annotation(event) -> bool:
    """A range, not an op: a user annotation, a step or phase range, or Dynamo's compiled-region range."""
    return (
        bool(_attr(event, "is_user_annotation", default=False))
        or bool(_ANNOTATION_NAME.match(event.name))
        or bool(COMPILED_REGION.match(event.name))
    )


def _is_kernel(name: str) -> bool:
    return categorize(name) != "memcpy/memset"


def op_table_from_events(events, *, active_steps: int, small_kernel_us: float = SMALL_KERNEL_US) -> OpTable:
    """The op table from torch.profiler ``FunctionEvent`` objects (``prof.events()`` of one cycle).

    Reads ``self_device_time_total`` / ``device_time_total`` / ``device_memory_usage`` and their older
    ``*_cuda_*`` spellings, so it works across torch versions. User annotations (``record_function``,
    ``ProfilerStep#N``) are not rows, and their GPU-side copies are not kernel time. The basis is the
    device when any device event was recorded, else the CPU.

    Args:
        events: iterable of ``FunctionEvent``-like objects (times in µs).
        active_steps: the number of steps the events cover.
        small_kernel_us: threshold for ``small_kernel_count``, µs.
    """
    events = list(events)
    annotations = {e.name for e in events if not _is_device_event(e) and _is_annotation(e)}
    device = [e for e in events if _is_device_event(e) and e.name not in annotations and not _is_annotation(e)]
    rows, attributed, on_device = OpRows(), Counter(), bool(device)
    for e in events:
        if _is_device_event(e) or e.name in annotations or e.name in _MEMORY_EVENTS or e.is_async:
            continue
        rows.calls[e.name] += 1
        rows.self_device[e.name] += _attr(e, "self_device_time_total", "self_cuda_time_total")
        rows.total_device[e.name] += _attr(e, "device_time_total", "cuda_time_total")
        rows.self_cpu[e.name] += e.self_cpu_time_total
        rows.mem[e.name] += _attr(e, "device_memory_usage", "cuda_memory_usage") if on_device else e.cpu_memory_usage
        rows.self_mem[e.name] += (
            _attr(e, "self_device_memory_usage", "self_cuda_memory_usage") if on_device else e.self_cpu_memory_usage
        )
        if e.input_shapes:
            rows.shapes[e.name][str(e.input_shapes)] += 1
        for kernel in e.kernels:
            attributed[kernel.name] += kernel.duration
    durations = [(e.name, e.time_range.elapsed_us()) for e in device]
    rows.add_unattributed(durations, attributed)
    kernels = [us for name, us in durations if _is_kernel(name)]
    return rows.finish(
        "device" if device else "cpu",
        active_steps=active_steps,
        source="profiler",
        kernel_count=len(kernels) if device else None,
        small_kernel_count=sum(us < small_kernel_us for us in kernels) if device else None,
        small_kernel_us=small_kernel_us if device else None,
        has_shapes=bool(rows.shapes),
        has_memory=True,
    )
