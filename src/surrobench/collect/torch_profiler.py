"""torch.profiler around a step loop (docs/sources.md, method §2): CPU and CUDA activities, a ``wait``/``warmup``/
``active`` schedule, ``record_shapes`` and ``profile_memory`` on, ``with_stack`` optional. Runs only in the profiling
child (:mod:`surrobench.collect.child`), never in the process that times (method §5, pitfall 3)."""

from __future__ import annotations

import gzip
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.collect.kineto_ops import no_cyclic_gc, ops_from_kineto
from surrobench.collect.op_events import tables_from_events
from surrobench.errors import UsageError
from surrobench.records.kernels import KernelTable
from surrobench.records.ops import OpTable
from surrobench.records.stats import NS_PER_MS

DEFAULT_WAIT = 2
DEFAULT_WARMUP = 1
DEFAULT_ACTIVE = 5
"""The method's example records 10 steps (``schedule(wait=2, warmup=5, active=10)``, docs/sources.md, method §2).
Each step costs the same to record and read; 5 kept the top op and readings of a 20-step table in every window
(docs/profile.md, measured by ``benchmarks/profile_step_noise.py``; costs in docs/benchmarks/profile-cost.md).
One warm-up step: the child runs the config's cold start, then the schedule's wait steps (not the config's warm-up)."""
STEP_EVENT_BUDGET = 10_000
"""Events a capture records at most per active step asked, past :data:`MIN_ACTIVE` steps (the zoo FNO at 32²: 29,000
a step, 2 of 5); each costs about 24 µs to stop, read and export on a 2-core CPU (docs/benchmarks/profile-cost.md)."""
MIN_ACTIVE = 2

#: Above Kineto's USDT level 5 (libkineto ``Logger.h``): hides its per-capture USDT stderr lines, and its ERROR
#: lines, whose news (CUPTI did not attach) :func:`_checked` reports itself.
KINETO_QUIET_LEVEL = "6"
_STEP_PREFIX = "ProfilerStep"  # ``ProfilerStep#N``, renamed ``ProfilerStep*`` in memory
_KEPT: list = []  # the Kineto results of the captures run with ``keep=True``


@dataclass(frozen=True)
class ProfileSchedule:
    """Steps skipped (``wait``), run with the profiler on but discarded (``warmup``), and recorded."""

    wait: int = DEFAULT_WAIT
    warmup: int = DEFAULT_WARMUP
    active: int = DEFAULT_ACTIVE

    @property
    def total(self) -> int:
        """Steps the profiled loop runs: ``wait + warmup + active``."""
        return self.wait + self.warmup + self.active

    def check(self, iters: int) -> None:
        """Validate against the timed iterations (profiling never runs more steps than timing). Raises
        UsageError: ``active`` < 1, ``wait`` or ``warmup`` < 0, or ``total`` > ``iters``."""
        if self.active < 1:
            raise UsageError.bad("schedule.active", f"{self.active}: record at least 1 step")
        if self.wait < 0 or self.warmup < 0:
            text = f"{{schedule.wait}} {self.wait} {{schedule.warmup}} {self.warmup}: must be >= 0"
            raise UsageError.naming(text, ("schedule.wait", "schedule.warmup"))
        if self.total > iters:
            text = (
                f"profiler schedule wait {self.wait} + warmup {self.warmup} + active {self.active} = {self.total}"
                f" steps is longer than {{iters}} {iters}; lower {{schedule.wait}}, {{schedule.warmup}} or"
                " {schedule.active}, or raise {iters}"
            )
            raise UsageError.naming(text, ("iters", "schedule.wait", "schedule.warmup", "schedule.active"))


@dataclass(frozen=True)
class Capture:
    """One profiled loop: synchronized host ms per step ``(wait + warmup + recorded,)`` and of the recorded ones,
    ``ProfilerStep#N`` ranges and events seen, op and kernel tables (None when nothing was recorded), the trace
    path; ``errors``: the schedule did not record; ``warnings``: recorded, something missing (CUDA activities)."""

    step_ms: tuple[float, ...]
    active_step_ms: tuple[float, ...]
    steps_recorded: int
    events: int
    op_table: OpTable | None
    trace_path: str | None
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    kernel_table: KernelTable | None = None


def profile_steps(
    step: Callable[[int], object],
    plan: ProfileSchedule,
    device: str,
    *,
    with_stack: bool = False,
    trace_path: Path | None = None,
    modules_lost: str | None = None,
    keep: bool = False,
) -> Capture:
    """``step(i)`` for ``plan.total`` steps under torch.profiler's schedule (each active step a ``ProfilerStep#N``
    range; fewer active steps, not under :data:`MIN_ACTIVE`, where they would record over :data:`STEP_EVENT_BUDGET`
    events each, counted on one more step first, its host events only (no second CUPTI session, which can
    lose kernels: pytorch/pytorch#175790): a warning says so), driving ``torch.autograd.profiler.profile``
    directly: no ``torch._inductor`` import (1.1 CPU s, docs/benchmarks/profile-cost.md). ``step`` leaves the device
    idle on return (:func:`surrobench.execution.ranges.annotated_step`). Kineto's USDT lines are kept off stderr
    (:data:`KINETO_QUIET_LEVEL` unless ``KINETO_LOG_LEVEL`` is set; read at the first capture). ``modules_lost``: why no
    module ranges are recorded (:func:`surrobench.collect.child.modules_lost`), None when they are. ``keep``: the Kineto
    results never freed, for a process that ends by ``os._exit`` (their destructor took 0.45 CPU s of the zoo FNO at
    32², docs/benchmarks/profile-cost.md)."""
    os.environ.setdefault("KINETO_LOG_LEVEL", KINETO_QUIET_LEVEL)
    from torch.autograd.profiler import profile, record_function  # here: the CLI reads the defaults without torch

    prof = profile(
        use_device="cuda" if device == "cuda" else None,
        record_shapes=True,
        profile_memory=True,
        with_stack=with_stack,
        use_kineto=True,
    )
    step_ns: list[int] = []

    def timed(i: int) -> None:
        t0 = time.perf_counter_ns()
        step(i)
        step_ns.append(time.perf_counter_ns() - t0)

    for i in range(plan.wait):
        timed(i)
    asked, per_step = plan.active, None
    if asked > MIN_ACTIVE:  # the budget's probe: one more step's events, shapes off (they add none)
        with profile(use_device=None, profile_memory=True, use_kineto=True) as probe:  # host only: no second CUPTI
            step(0)
        per_step = max(len(probe.kineto_results.events()), 1)
        plan = replace(plan, active=min(asked, max(MIN_ACTIVE, asked * STEP_EVENT_BUDGET // per_step)))
    first_active = plan.wait + plan.warmup
    prof._prepare_trace()
    started = False
    try:
        for i in range(plan.wait, first_active):
            timed(i)
        prof._start_trace()
        started = True
        for i in range(first_active, plan.total):
            with record_function(f"{_STEP_PREFIX}#{i}"):
                timed(i)
    finally:  # as torch.profiler on an exception: a prepared trace is started, then stopped
        if not started:
            prof._start_trace()
        prof.__exit__(None, None, None)
    with no_cyclic_gc():  # a few 100,000 event objects
        events = ops_from_kineto(prof.kineto_results, use_device=device == "cuda")
        steps = sum(1 for e in events if e.name.startswith(_STEP_PREFIX))
        table, kernels = tables_from_events(events, active_steps=plan.active, modules_lost=modules_lost)
    if trace_path is not None and trace_path.suffix != ".gz":  # the Chrome trace: Perfetto, chrome://tracing
        prof.export_chrome_trace(str(trace_path))
    elif trace_path is not None:  # gzipped from a plain trace beside it
        plain = trace_path.with_name(f".{trace_path.stem}.{os.getpid()}.tmp")
        try:
            prof.export_chrome_trace(str(plain))
            with open(plain, "rb") as src, gzip.open(trace_path, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst)
        finally:
            plain.unlink(missing_ok=True)
    if keep:
        _KEPT.append(prof)
    cycle = {"events": len(events), "steps": steps, "table": table, "kernels": kernels, "cut": None}
    if plan.active < asked:
        cycle["cut"] = f"recorded {plan.active} of {asked} steps: {per_step} events a step, budget {STEP_EVENT_BUDGET}"
    return _checked(plan, device, [t / NS_PER_MS for t in step_ns], cycle, trace_path)


def _checked(plan: ProfileSchedule, device: str, step_ms: list[float], cycle: dict, trace_path: Path | None) -> Capture:
    """The capture with its checks: events and ``ProfilerStep`` ranges recorded, CUDA activities present on a
    GPU run (missing ones mean CUPTI could not attach). ``cycle``: ``events`` and ``steps`` counted, ``table``
    and ``kernels`` (None when nothing was read), ``cut``: why fewer steps than asked were recorded, or None."""
    errors, warnings = [], []
    if cycle["events"] == 0:
        errors.append("profiler recorded no events")
    if cycle["steps"] != plan.active:
        errors.append(f"profiler recorded {cycle['steps']} ProfilerStep ranges, expected {plan.active}")
    if cycle["cut"] is not None:
        warnings.append(cycle["cut"])
    table = cycle["table"]
    if device == "cuda" and table is not None and table.basis != "device":
        warnings.append(
            "no CUDA activities were recorded (CUPTI failed to attach or is unavailable); "
            "the op table shows CPU time only"
        )
    return Capture(
        step_ms=tuple(step_ms),
        active_step_ms=tuple(step_ms[plan.wait + plan.warmup :]),
        steps_recorded=cycle["steps"],
        events=cycle["events"],
        op_table=table,
        trace_path=str(trace_path) if trace_path is not None else None,
        errors=tuple(errors),
        warnings=tuple(warnings),
        kernel_table=cycle["kernels"] if table is not None and table.basis == "device" else None,
    )
