"""The diagnosis: evidence in, ranked findings out; one small detector per kind (:mod:`surrobench.records.findings`),
each reading the bundle and :mod:`surrobench.analysis.thresholds`: :mod:`~surrobench.analysis.detect_gpu`,
:mod:`~surrobench.analysis.detect_ops`, :mod:`~surrobench.analysis.detect_host`, :mod:`~surrobench.analysis.detect_run`,
:mod:`~surrobench.analysis.detect_ranks`.

The host's floor (:class:`HostFloor`) caps a kernel-side remedy's gain
(:data:`~surrobench.records.vocab.KERNEL_SIDE_REMEDIES`) at the latency less the host's submission time
(:data:`surrobench.records.run.HOST_SUBMIT_KEY`); why, where it applies (not where the model syncs or without a
trace) and the evidence: docs/design.md, "Findings" (docs/sources.md, method §4)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from surrobench.analysis import detect_gpu, detect_host, detect_ops, detect_run
from surrobench.analysis.detect_ops import ceiling_suspect
from surrobench.analysis.cross_rank import CrossRankReport, timeline_cross_rank
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.ops import kernel_table_from_timeline, op_table_from_timeline
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.analysis.timeline import analyze_timeline, trace_facts
from surrobench.records import schemas
from surrobench.records.findings import Evidence, Finding, rank_findings
from surrobench.records.run import ConfigResult
from surrobench.records.vocab import KERNEL_SIDE_REMEDIES
from surrobench.trace.model import Timeline


def trace_evidence(tl: Timeline, **known) -> ConfigEvidence:
    """The evidence a trace holds; ``known`` adds or replaces fields (tables built only when absent)."""
    report = analyze_timeline(tl)
    facts = trace_facts(tl, report) if report.status == "ok" else None  # no GPU activity: nothing per step
    if "op_table" not in known:
        known["op_table"] = op_table_from_timeline(tl)
    if "kernel_table" not in known:
        known["kernel_table"] = kernel_table_from_timeline(tl) if report.status == "ok" else None
    return ConfigEvidence(**{"timeline": report, "facts": facts, **known})


def diagnose_config(ev: ConfigEvidence, th: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every per-config detector on ``ev``, ranked (remedies are measured, not ruled out: tune.advice)."""
    detectors = detect_gpu.DETECTORS + detect_ops.DETECTORS + detect_host.DETECTORS + (ceiling_suspect,)
    return rank_findings([f for detector in detectors if (f := detector(ev, th)) is not None])


def diagnose_trace(
    tl: Timeline, th: Thresholds = DEFAULT_THRESHOLDS, **known
) -> tuple[list[Finding], CrossRankReport | None]:
    """A trace's per-config and (several ranks) cross-rank findings, ranked, and the cross-rank report."""
    from surrobench.analysis.detect_ranks import cross_rank_findings

    ranks = timeline_cross_rank(tl)
    return rank_findings(diagnose_config(trace_evidence(tl, **known), th) + cross_rank_findings(ranks, th)), ranks


def diagnose_run(
    evidence: list[ConfigEvidence],
    results: list[ConfigResult],
    *,
    th: Thresholds = DEFAULT_THRESHOLDS,
    device_memory_bytes: int | None = None,
    flops: dict[tuple, dict[str, int]] | None = None,
    host_warning: str | None = None,
) -> list[Finding]:
    """Findings of every ``evidence`` bundle plus the run-level ones over ``results`` (failed configs too: an OOM is
    memory-pressure evidence), ranked together. ``device_memory_bytes``: for "peak memory near the limit" (None:
    unknown); ``flops``: ``{ConfigResult.key(): {op: FLOPs per step}}`` for the superlinear check; ``host_warning``
    (:func:`surrobench.execution.env.busy_host_warning`): evidence on each run-level finding."""
    found = [f for ev in evidence for f in diagnose_config(ev, th)]
    tables = {ev.result.key(): ev.op_table for ev in evidence if ev.result is not None and ev.op_table is not None}
    across = detect_run.memory_pressure(results, th, device_memory_bytes)
    across += detect_run.precision_mismatch(results, th)
    across += detect_run.capture_failures(results)
    across += detect_run.superlinear_scaling(results, tables, th, flops or {})
    busy = (Evidence("run", f"measured on a {host_warning}"),) if host_warning else ()
    return rank_findings(found + [replace(f, evidence=(*f.evidence, *busy)) for f in across])


@dataclass(frozen=True)
class HostFloor(schemas.Plain):
    """One config's median unprofiled latency and host submission time, ms; JSON ``{"latency_ms",
    "host_submit_ms"}``. Raises ValueError: not positive and finite (TypeError from ``from_json``: a key missing)."""

    latency_ms: float
    host_submit_ms: float

    def __post_init__(self) -> None:
        for name in ("latency_ms", "host_submit_ms"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive number of ms, got {value!r}")

    @property
    def kernel_side_ms(self) -> float:
        """The most a kernel-side remedy can save, ms: the latency above the host's submission time, >= 0."""
        return max(self.latency_ms - self.host_submit_ms, 0.0)


def host_floors(evidence: list[ConfigEvidence]) -> dict[str, HostFloor]:
    """``{label: HostFloor}`` of CUDA configs with a submission time, a trace and no model sync."""
    out = {}
    for ev in evidence:
        r = ev.result
        if r is None or r.device != "cuda" or r.latency_ms is None or not r.host_submit_ms or ev.label is None:
            continue
        if ev.facts is None or ev.facts.model_syncs > 0:
            continue
        out[ev.label] = HostFloor(r.latency_ms.median, r.host_submit_ms)
    return out


def cap_at_host_floor(findings: list[Finding], floors: dict[str, HostFloor]) -> list[Finding]:
    """``findings`` with all-kernel-side gains capped at :attr:`HostFloor.kernel_side_ms`; order kept."""
    out = []
    for f in findings:
        floor = floors.get(f.config or "")
        remedies, gain = set(f.remedies), f.estimated_gain_ms
        kernel_side = bool(remedies) and remedies <= set(KERNEL_SIDE_REMEDIES)
        if floor is None or gain is None or not kernel_side or gain <= floor.kernel_side_ms:
            out.append(f)
            continue
        cap = floor.kernel_side_ms
        text = f"the host submits a step in {floor.host_submit_ms:.3f} ms of its {floor.latency_ms:.3f} ms: faster "
        why = Evidence("run", text + f"kernels alone save at most {cap:.3f} ms (estimated {gain:.3f} ms)", cap, "ms")
        out.append(replace(f, estimated_gain_ms=cap, evidence=(*f.evidence, why)))
    return out
