"""torch.profiler's raw Kineto events as the op events the op and kernel tables read, with the semantics of
torch's ``FunctionEvent`` list (``prof.events()``) but without building it.

``prof.events()`` builds ~30 unread fields per raw event (docs/benchmarks/profile-cost.md). The rules of torch 2.x's
``torch.autograd.profiler.profile._parse_kineto_results`` and ``EventList._build_tree``:

- names demangled, ``ProfilerStep#N`` renamed ``ProfilerStep*``; torch's utility ops
  (``profiler::_record_function_*``, ``aten::is_leaf``, ``aten::output_nr``, ``aten::_version``) and the
  ``[memory]`` / ``[OutOfMemory]`` records are not events;
- an event is async when Kineto says so or when it ends on another thread than it started;
- a device event (a kernel, a copy) is credited to the CPU op whose correlation id is the device event's
  linked correlation id (a runtime call so linked moves to that op's thread);
- parents: on each thread, sync CPU events sorted by (start, -end); an event is the child of the innermost
  open event that contains it ([start, end) inside, partial overlaps are not nested);
- an event whose parent has the same name and no other child is removed, its children and kernels lifted to
  the parent (torch's ``_remove_dup_nodes``);
- memory: a CPU event's ``cpu_memory_usage`` / ``device_memory_usage`` sum the bytes of the memory records
  whose time lies in ``[start_ns, end_ns]`` (any thread); ``self_*`` subtract the children's;
- times in µs as floats of ns since the trace start; ``self_cpu_time_total`` is the elapsed time less the
  children's, ``device_time_total`` the kernels' of the event and of its children, ``self_device_time_total``
  the event's own kernels'. Async events have no self time or self memory.
"""

from __future__ import annotations

import bisect
import gc
from contextlib import contextmanager
from itertools import accumulate
from typing import NamedTuple

_MEMORY = "[memory]"
_SKIPPED = frozenset(
    {"[OutOfMemory]", "profiler::_record_function_enter", "profiler::_record_function_enter_new"}
    | {"profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr", "aten::_version"}
)
_CPU_MEMORY = frozenset({"CPU", "MKLDNN", "IDEEP"})
_DEVICE_MEMORY = frozenset({"CUDA", "PrivateUse1", "HIP", "XPU"})
_KERNEL_DEVICES = frozenset({"CUDA", "PrivateUse1", "XPU"})


@contextmanager
def no_cyclic_gc():
    """The cyclic GC off while many acyclic event objects are made (a trace file's millions read 3x slower with it;
    about 40% of reading the zoo FNO's capture at 32², docs/benchmarks/profile-cost.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Kernel(NamedTuple):
    """A device event credited to a CPU op: its name and its duration in µs."""

    name: str
    duration: float


class OpEvent:
    """One event of the profile: a CPU op, range or runtime call (``device_type`` ``"CPU"``) or a device
    activity (``"CUDA"``...). Times and durations in µs, memory in bytes; ``cpu_parent`` is the enclosing
    sync CPU event on the same thread (None at the top)."""

    __slots__ = tuple(
        "name device_type is_async is_user_annotation input_shapes thread start_ns end_ns duration_us kernels"
        " cpu_parent cpu_children cpu_memory_usage device_memory_usage self_cpu_time_total self_cpu_memory_usage"
        " self_device_memory_usage device_time_total self_device_time_total".split()
    )

    def __init__(self, name: str, device_type: str, thread: int, start_ns: int, end_ns: int, t0_ns: int) -> None:
        self.name, self.device_type, self.thread = name, device_type, thread
        self.start_ns, self.end_ns = start_ns, end_ns
        self.duration_us = (end_ns - t0_ns) / 1000 - (start_ns - t0_ns) / 1000  # as torch's time_range
        self.is_async = self.is_user_annotation = False
        self.input_shapes = []
        self.kernels: list[Kernel] = []
        self.cpu_parent: OpEvent | None = None
        self.cpu_children: list[OpEvent] = []
        self.cpu_memory_usage = self.device_memory_usage = 0


def ops_from_kineto(result, *, use_device: bool) -> list[OpEvent]:
    """The events of a finished capture's ``kineto_results`` (``torch.autograd.profiler.profile``'s, a
    ``_ProfilerResult``), sorted by (start, -end), with parents, kernels, times and memory filled in (module
    doc). ``use_device``: a device activity was requested (torch's ``use_device``); without it device times are
    0, as in torch."""
    raw = result.events()
    t0 = result.trace_start_ns()
    demangled: dict[str, str] = {}
    kinds: dict = {}
    mem_ns, mem_cpu, mem_dev = [], [], []
    events: list[OpEvent] = []
    by_corr: dict[int, list[tuple[OpEvent, int]]] = {}  # linked correlation id -> (device or runtime event)
    frontend: list[tuple[OpEvent, int]] = []  # (event, its correlation id) of events linked to nothing
    hidden = getattr(type(raw[0]), "is_hidden_event", None) if raw else None  # torch >= 2.6
    for e in raw:
        raw_name = e.name()
        if raw_name == _MEMORY:
            kind = _kind(kinds, e.device_type())
            nbytes = e.nbytes()
            mem_ns.append(e.start_ns())
            mem_cpu.append(nbytes if kind in _CPU_MEMORY else 0)
            mem_dev.append(nbytes if kind in _DEVICE_MEMORY else 0)
            continue
        if raw_name in _SKIPPED or (hidden is not None and hidden(e)):
            continue
        name = demangled.get(raw_name)
        if name is None:
            name = demangled[raw_name] = _rewrite(raw_name)
        kind = _kind(kinds, e.device_type())
        ev = OpEvent(name, kind, e.start_thread_id(), e.start_ns(), e.end_ns(), t0)
        ev.is_async = e.is_async() or ev.thread != e.end_thread_id()
        ev.is_user_annotation = e.is_user_annotation()
        if kind == "CPU":
            ev.input_shapes = e.shapes()
        events.append(ev)
        linked = e.linked_correlation_id()
        if linked > 0:
            by_corr.setdefault(linked, []).append(ev)
        elif linked == 0 and kind == "CPU" and not ev.is_async:
            frontend.append((ev, e.correlation_id()))
    for ev, corr in frontend:
        for linked in by_corr.get(corr, ()):
            if linked.device_type in _KERNEL_DEVICES:
                ev.kernels.append(Kernel(linked.name, linked.duration_us))
            elif linked.device_type == "CPU":
                linked.thread = ev.thread
    events.sort(key=lambda ev: (ev.start_ns, -ev.end_ns))
    if mem_ns:  # each CPU event's bytes allocated (less freed) by the memory records in [start_ns, end_ns]
        order = sorted(range(len(mem_ns)), key=mem_ns.__getitem__)
        at = [mem_ns[i] for i in order]
        cpu = [0, *accumulate(mem_cpu[i] for i in order)]
        dev = [0, *accumulate(mem_dev[i] for i in order)]
        for ev in events:
            if ev.device_type == "CPU":
                lo, hi = bisect.bisect_left(at, ev.start_ns), bisect.bisect_right(at, ev.end_ns)
                ev.cpu_memory_usage, ev.device_memory_usage = cpu[hi] - cpu[lo], dev[hi] - dev[lo]
    open_by_thread: dict[int, list[OpEvent]] = {}  # parents: torch's ``_populate_cpu_children``
    for ev in events:
        if ev.is_async or ev.device_type != "CPU":
            continue
        stack = open_by_thread.setdefault(ev.thread, [])
        while stack:
            parent = stack[-1]
            if ev.start_ns >= parent.end_ns or ev.end_ns > parent.end_ns:
                stack.pop()
            else:
                parent.cpu_children.append(ev)
                ev.cpu_parent = parent
                break
        stack.append(ev)
    while True:  # torch's ``_remove_dup_nodes``: a parent's one child of its name goes, its children and kernels lifted
        gone = set()
        for i, ev in enumerate(events):
            parent = ev.cpu_parent
            if parent is not None and parent.name == ev.name and len(parent.cpu_children) == 1:
                parent.cpu_children = ev.cpu_children
                parent.kernels = ev.kernels
                for child in ev.cpu_children:
                    child.cpu_parent = parent
                gone.add(i)
        if not gone:
            break
        events = [ev for i, ev in enumerate(events) if i not in gone]
    for ev in reversed(events):  # self and total times and self memory, children before parents
        cpu = ev.device_type == "CPU"
        if ev.is_async:
            ev.self_cpu_time_total = ev.device_time_total = ev.self_device_time_total = 0
            ev.self_cpu_memory_usage = ev.self_device_memory_usage = 0
            continue
        if not cpu:
            ev.self_cpu_time_total = ev.self_cpu_memory_usage = ev.self_device_memory_usage = 0
            ev.device_time_total = ev.self_device_time_total = ev.duration_us if use_device else 0
            continue
        own = sum(k.duration for k in ev.kernels) if use_device and ev.kernels else 0
        ev.self_device_time_total = own
        children = ev.cpu_children
        if not children:  # most events (a leaf op): no sums to take
            ev.self_cpu_time_total = ev.duration_us
            ev.self_cpu_memory_usage, ev.self_device_memory_usage = ev.cpu_memory_usage, ev.device_memory_usage
            ev.device_time_total = own
            continue
        ev.self_cpu_time_total = ev.duration_us - sum(ch.duration_us for ch in children)
        ev.self_cpu_memory_usage = ev.cpu_memory_usage - sum(ch.cpu_memory_usage for ch in children)
        ev.self_device_memory_usage = ev.device_memory_usage - sum(ch.device_memory_usage for ch in children)
        ev.device_time_total = own + sum(ch.device_time_total for ch in children)
    return events


def _kind(cache: dict, device_type) -> str:
    """``"CPU"``, ``"CUDA"``... from a ``torch._C._autograd.DeviceType`` (its ``str`` is ``DeviceType.CPU``)."""
    kind = cache.get(device_type)
    if kind is None:
        kind = cache[device_type] = str(device_type).rsplit(".", 1)[-1]
    return kind


def _rewrite(name: str) -> str:
    """torch's ``_rewrite_name(name, with_wildcard=True)``: demangled (names longer than one character) and
    ``ProfilerStep#N`` as ``ProfilerStep*``."""
    import torch

    name = torch._C._demangle(name) if len(name) > 1 else name
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name
