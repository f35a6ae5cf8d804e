"""Detectors of a CPU config's host costs: page_faults, thread_oversubscription, denormals."""

from __future__ import annotations

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.thresholds import Thresholds
from surrobench.execution.host_facts import free_cores_of
from surrobench.records.findings import Clause, Evidence, Finding, clauses_of

#: Cost of one minor page fault, µs, a lower bound (4.9-9 µs measured: docs/benchmarks/cpu-perf.md, "Page faults").
PAGE_FAULT_US = 1.0
#: Page faults per step below which the allocator is never a finding (first touches are normal).
PAGE_FAULTS_MIN_PER_STEP = 100
#: glibc's largest dynamic mmap threshold (mallopt(3)): buffers above it fault all their pages in every step.
MMAP_THRESHOLD_MAX_BYTES = 32 * 2**20
#: Subnormal share of weights and inputs from which denormals are a finding (one in a thousand hits many FMAs).
SUBNORMAL_SHARE_MIN = 1e-3


def _cpu(ev: ConfigEvidence) -> bool:
    return ev.result is not None and ev.result.device == "cpu"


def page_faults(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Perf's ``page-faults`` per step at least :data:`PAGE_FAULTS_MIN_PER_STEP`; stake: faults x :data:`PAGE_FAULT_US`."""
    sys, step = ev.system, ev.step_ms()
    if not _cpu(ev) or sys is None or not step or not sys.wall_ms:
        return None
    if not (faults := sys.counters.get("page-faults")):
        return None
    per_step = faults * step / sys.wall_ms
    stake_ms = per_step * PAGE_FAULT_US / 1e3
    severity = th.severity(stake_ms / step) if per_step >= PAGE_FAULTS_MIN_PER_STEP else None
    if severity is None:
        return None
    threshold = f"{MMAP_THRESHOLD_MAX_BYTES // 2**20} MiB"
    faults = f"{per_step:,.0f} page faults per step (perf page-faults over the window)"
    cost = f"at >= {PAGE_FAULT_US:g} us each: >= {stake_ms:.3f} ms of a {step:.3f} ms step"
    evidence = (Evidence("system", faults, per_step, "faults"), Evidence("system", cost, stake_ms, "ms"))
    action = clauses_of(
        "keep freed buffers in the process: MALLOC_MMAP_THRESHOLD_=<bytes above the largest activation> and "
        f"MALLOC_TRIM_THRESHOLD_ (glibc maps every buffer above its dynamic threshold, at most {threshold}, "
        "afresh and faults each page in again: mallopt(3))",
        "preallocate the step's buffers and reuse them (out= arguments, a static workspace)",
    )
    summary = f"{per_step:,.0f} page faults per step: the allocator returns buffers to the OS and maps them again"
    return Finding("page_faults", severity, summary, evidence, action, stake_ms, ev.label)


def free_cores(ev: ConfigEvidence) -> tuple[int, int, int, float, str] | None:
    """(torch threads, usable CPUs, cores free: those less the CPUs other processes kept busy while the config was
    timed (``host_facts``'s ``other_cpus``; a record without it: the 1-minute load less our threads), as
    :func:`~surrobench.execution.host_facts.free_cores_of` counts; those others, their source) of a CPU config;
    None without its threads or usable CPUs."""
    extra = ev.result.extra if _cpu(ev) else {}
    threads, usable, load, others = (extra.get(k) for k in ("torch_threads", "usable_cpus", "load_1m", "other_cpus"))
    if not threads or not usable:
        return None
    what = "CPUs other processes kept busy while it was timed"
    if others is None:  # a record without the reading
        what, others = "1-minute load less ours", max(load - threads, 0.0) if load is not None else 0.0
    return threads, usable, free_cores_of(usable, others), others, what


def thread_oversubscription(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """More torch threads than the :func:`free_cores`. No gain."""
    threads, usable, free, others, what = free_cores(ev) or (0, 0, 0, 0.0, "")
    if threads <= free:
        return None
    evidence = [Evidence("run", f"torch threads {threads} on {usable} usable CPU(s)", threads, "threads")]
    if others:
        evidence.append(Evidence("run", f"{what}: about {others:.1f}, {free} core(s) free", others, "load"))
    summary = f"{threads} torch threads for {free} free core(s)"
    setting = f"torch.set_num_threads({free}) (or OMP_NUM_THREADS={free}), then measure"
    action = (Clause(setting, ("threads",), direction="down"),)
    severity = "medium" if threads > usable else "low"
    return Finding("thread_oversubscription", severity, summary, tuple(evidence), action, None, ev.label)


def denormals(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Subnormal share of weights and inputs at least :data:`SUBNORMAL_SHARE_MIN` (``host_facts.subnormal_share``). No gain."""
    share = ev.result.extra.get("subnormal_share") if _cpu(ev) else None
    if share is None or share < SUBNORMAL_SHARE_MIN:
        return None
    evidence = (Evidence("run", f"{share:.2%} of floating-point weight and input values subnormal", share, "fraction"),)
    action = clauses_of(
        "torch.set_flush_denormal(True) before the step (subnormals become 0: check the accuracy)",
        "or rescale the weights or inputs out of the subnormal range",
    )
    severity = "medium" if share >= 10 * SUBNORMAL_SHARE_MIN else "low"
    summary = f"{share:.2%} of the weights' and inputs' values are subnormal"
    return Finding("denormals", severity, summary, evidence, action, None, ev.label)


DETECTORS = (page_faults, thread_oversubscription, denormals)
