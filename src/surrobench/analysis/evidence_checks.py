"""Whether a config's evidence can carry a verdict: the profile against the timed step, an empty trace, and the
share of kernel time attributed to ops (the coverage of a CUDA-graph or compiled step). One :class:`EvidenceCheck`
per config, its :attr:`~EvidenceCheck.problems` keys of :data:`PROBLEMS`; :func:`qualify` marks the op-level
verdicts of an unreliable or partly attributed profile, and a trace with no op or no kernel is "cannot judge"
(:data:`CANNOT_JUDGE`, an exit code of its own in the CLI), never "no findings".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from surrobench.analysis.evidence import PROFILE_RATIO_MAX, PROFILE_RATIO_MIN, ConfigEvidence
from surrobench.execution.host_facts import BUSY_SHARE, MIN_WINDOW_S, busy_others
from surrobench.records import schemas
from surrobench.records.findings import SEVERITIES, Evidence, Finding
from surrobench.trace.model import Timeline

#: Share of kernel time attributed to ops below which op-level verdicts cover too little of the step to rank
#: it: below it, more than a tenth of the GPU time is in kernels no op or module owns (CUDA-graph replays,
#: compiled regions), and the largest op verdict may not be the largest cost.
COVERAGE_MIN = 0.9

#: What may be wrong with a config's evidence.
PROBLEMS: dict[str, str] = {
    "step_mismatch": "the profiled step disagrees with the timed step beyond the profiler's measured overhead",
    "low_coverage": "less than 90% of the kernel time is attributed to ops",
    "busy_host": "other processes kept the host's CPUs busy while it was timed: its op times moved with them",
    "no_ops": "the profile holds no op (and no kernel): nothing to judge",
    "no_kernels": "a CUDA config (or trace) whose profile holds no kernel: nothing to judge on the device",
    "not_profiled": "timed, not profiled (as run's and optimize's runs are, or a diagnose cut before it was read): "
    "no op table to judge; diagnose its workload options to profile it",
}
#: Problems that leave nothing to judge: the config is "cannot judge", not "no findings".
CANNOT_JUDGE = frozenset({"no_ops", "no_kernels", "not_profiled"})
#: Finding kinds read from the op table, the kernel table or the roofline of one profile: the verdicts an
#: unreliable or partly attributed profile cannot carry alone.
OP_LEVEL_KINDS = frozenset(
    {
        "memory_bound",
        "compute_bound",
        "fragmented_ops",
        "occupancy_bound",
        "matmul_precision",
        "ceiling_suspect",
        "hot_op",
    }
)


@dataclass(frozen=True)
class EvidenceCheck(schemas.Plain):
    """What one config's evidence (``label``; None: a trace alone) can carry: ``problems`` (keys of
    :data:`PROBLEMS`), mean profiled and timed median step (ms), and the shares (0..1, None without a kernel
    table) of kernel time attributed to ops, to nn.Module paths, and credited by name from the eager step
    (``matched_coverage``, part of ``coverage``: :mod:`surrobench.analysis.evidence`), with ``busy_host`` the CPUs
    others kept busy, ``other_cpus`` of ``usable_cpus`` (:func:`~surrobench.execution.host_facts.busy_others`). Its
    JSON object: the fields, then ``verdict``, ``reason`` and ``step_ratio``."""

    DERIVED = ("verdict", "reason", "step_ratio")

    label: str | None
    problems: tuple[str, ...] = ()
    profiled_step_ms: float | None = None
    timed_ms: float | None = None
    coverage: float | None = None
    module_coverage: float | None = None
    matched_coverage: float | None = None
    other_cpus: float | None = None
    usable_cpus: int | None = None

    @property
    def step_ratio(self) -> float | None:
        """``profiled_step_ms / timed_ms``, None when either is unknown."""
        return self.profiled_step_ms / self.timed_ms if self.profiled_step_ms and self.timed_ms else None

    @property
    def verdict(self) -> str:
        """``"cannot_judge"`` (nothing to judge), ``"unreliable"`` (not the timed step, or a busy host's),
        ``"partial"`` (op-level verdicts cover too little kernel time) or ``"ok"``."""
        if CANNOT_JUDGE.intersection(self.problems):
            return "cannot_judge"
        if {"step_mismatch", "busy_host"}.intersection(self.problems):
            return "unreliable"
        return "partial" if "low_coverage" in self.problems else "ok"

    def reason(self) -> str:
        """One line on why (empty when ``ok``)."""
        parts = []
        for p in self.problems:
            if p == "step_mismatch":
                step = f"profiled step {self.profiled_step_ms:.3f} ms vs timed {self.timed_ms:.3f} ms"
                bounds = f"{self.step_ratio:.2f}x, outside {PROFILE_RATIO_MIN}-{PROFILE_RATIO_MAX}x"
                parts.append(f"{step} ({bounds}, the profiler's measured overhead)")
            elif p == "busy_host" and self.other_cpus is not None:  # a check stored before the reading: its words
                busy = f"{self.other_cpus:.2f} of {self.usable_cpus} CPUs, over {BUSY_SHARE * self.usable_cpus:.2g}"
                ratio = f"; profiled step {self.step_ratio:.2f}x the timed" if self.step_ratio else ""
                parts.append(f"{PROBLEMS[p]} ({busy}){ratio}")
            elif p == "low_coverage":
                parts.append(f"{self.coverage:.0%} of the kernel time attributed to ops (< {COVERAGE_MIN:.0%})")
            else:
                parts.append(PROBLEMS[p])
        return "; ".join(parts)


def check_evidence(ev: ConfigEvidence) -> EvidenceCheck:
    """The :class:`EvidenceCheck` of one config: its profile's step against its timed median
    (:data:`PROFILE_RATIO_MIN`, :data:`PROFILE_RATIO_MAX`), no op and no kernel at all, a CUDA config whose profile
    holds no kernel, the share of its kernel time attributed to ops and modules (:data:`COVERAGE_MIN`), and a CPU config
    timed on a busy host (:func:`~surrobench.execution.host_facts.busy_others`: its op times inflate unevenly)."""
    problems = []
    table = ev.op_table
    if (table is None or not table.ops) and (ev.kernel_table is None or not ev.kernel_table.kernels):
        problems.append("no_ops")
    cuda = ev.result is not None and ev.result.device == "cuda"
    blind = cuda and table is not None and (table.basis == "cpu" or table.kernel_count == 0)
    if blind or (ev.timeline is not None and ev.timeline.status == "gpu_activities_missing"):
        problems.append("no_kernels")
    check = EvidenceCheck(ev.label, (), ev.profiled_step_ms, ev.timed_ms, *kernel_coverage(ev))
    problems += check_step(ev.label, ev.profiled_step_ms, ev.timed_ms).problems
    if check.coverage is not None and check.coverage < COVERAGE_MIN:
        problems.append("low_coverage")
    # a reading over timed calls under MIN_WINDOW_S (a run stored before it was refused) is mostly the counters' ticks
    others = busy_others(ev.result.extra) if ev.result is not None else None
    if others and sum(ev.result.samples_ms) >= MIN_WINDOW_S * 1e3:
        problems.append("busy_host")
        check = replace(check, other_cpus=others, usable_cpus=ev.result.extra.get("usable_cpus") or 1)
    return replace(check, problems=tuple(dict.fromkeys(problems)))


def checked(ev: ConfigEvidence) -> EvidenceCheck:
    """:func:`check_evidence` of ``ev``, computed once: kept in the evidence, as its cached ``ops`` (one diagnosis's
    findings, remedies' order and context read the one check)."""
    if "check" not in ev.__dict__:
        ev.__dict__["check"] = check_evidence(ev)
    return ev.__dict__["check"]


def check_step(label: str | None, profiled_step_ms: float | None, timed_ms: float | None) -> EvidenceCheck:
    """The check of a step measured under a profiler or sampler (``profiled_step_ms``, ms) against the timed
    median (``timed_ms``, ms): ``step_mismatch`` outside :data:`PROFILE_RATIO_MIN`-:data:`PROFILE_RATIO_MAX`
    (diagnose's profile, perf's system pass); no problem when either is unknown."""
    check = EvidenceCheck(label, (), profiled_step_ms, timed_ms)
    bad = check.step_ratio is not None and not PROFILE_RATIO_MIN <= check.step_ratio <= PROFILE_RATIO_MAX
    return replace(check, problems=("step_mismatch",) if bad else ())


def kernel_coverage(ev: ConfigEvidence) -> tuple[float | None, float | None, float | None]:
    """Shares of the kernel table's device time whose kernels an op, and a module, owns, and that credited from the
    eager step (origin ``matched_eager``; None for an eager step: nothing of it is matched); all None without a
    kernel table or kernel time (a CPU config)."""
    table = ev.kernel_table
    if table is None or table.total_us <= 0:
        return None, None, None
    eager = ev.result is not None and ev.result.mode == "eager"
    op_us = sum(k.device_us for k in table.kernels if k.op is not None)
    module_us = sum(k.device_us for k in table.kernels if k.module is not None)
    matched = None if eager else sum(k.device_us for k in table.kernels if k.origin == "matched_eager") / table.total_us
    return op_us / table.total_us, module_us / table.total_us, matched


def check_trace(tl: Timeline) -> EvidenceCheck:
    """The check of a trace alone, from its event tables: no op and no kernel, or a CUDA run (runtime calls,
    ``cuda_run``) with no kernel, is nothing to judge."""
    problems = []
    kernels = len(tl.kernels) + len(tl.memcpy) + len(tl.memset)
    if not len(tl.cpu_ops) and not kernels:
        problems.append("no_ops")
    if not kernels and (tl.meta.cuda_run or len(tl.api_calls)):
        problems.append("no_kernels")
    return EvidenceCheck(None, tuple(problems))


def qualify(findings: list[Finding], checks: dict[str | None, EvidenceCheck]) -> list[Finding]:
    """``findings`` with each op-level verdict (:data:`OP_LEVEL_KINDS`) of a config whose check is
    ``unreliable`` or ``partial`` saying so: its summary starts with the verdict and an evidence row gives the
    reason and the number (the step ratio, or the coverage), an unreliable profile's alarm at most ``low`` (it never
    outranks a finding of the timed runs or of a reliable profile). Other findings are returned as they are."""
    out = []
    for f in findings:
        check = checks.get(f.config)
        if check is None or f.kind not in OP_LEVEL_KINDS or check.verdict not in ("unreliable", "partial"):
            out.append(f)
            continue
        unreliable = check.verdict == "unreliable"
        text = f"{'profile unreliable' if unreliable else 'partial attribution'}: {check.reason()}"
        value, unit = (check.step_ratio, "x") if unreliable else (check.coverage, "fraction")
        if unreliable and "step_mismatch" not in check.problems:  # a busy host's: the reading it is named for
            value, unit = check.other_cpus, "CPUs"
        row = Evidence("profiler", text, value, unit)
        head = "unreliable profile" if unreliable else f"{check.coverage:.0%} of kernel time attributed"
        severity = max(f.severity, "low", key=SEVERITIES.index) if unreliable else f.severity
        out.append(replace(f, severity=severity, summary=f"[{head}] {f.summary}", evidence=(*f.evidence, row)))
    return out
