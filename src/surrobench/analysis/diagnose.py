"""The diagnosis: evidence in, ranked findings out; one small detector per kind (:mod:`surrobench.records.findings`),
each reading the bundle and :mod:`surrobench.analysis.thresholds`: :mod:`~surrobench.analysis.detect_gpu`,
:mod:`~surrobench.analysis.detect_ops`,
:mod:`~surrobench.analysis.detect_host`, :mod:`~surrobench.analysis.detect_run`, :mod:`~surrobench.analysis.detect_ranks`."""

from __future__ import annotations

from dataclasses import replace

from surrobench.analysis import detect_gpu, detect_host, detect_ops, detect_run
from surrobench.analysis.detect_ops import ceiling_suspect
from surrobench.analysis.cross_rank import CrossRankReport, timeline_cross_rank
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.ops import kernel_table_from_timeline, op_table_from_timeline
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.analysis.timeline import analyze_timeline, trace_facts
from surrobench.records.findings import Evidence, Finding, rank_findings
from surrobench.records.run import ConfigResult
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
    found = [f for detector in detectors if (f := detector(ev, th)) is not None]
    return rank_findings(found)


def diagnose_trace(
    tl: Timeline, th: Thresholds = DEFAULT_THRESHOLDS, **known
) -> tuple[list[Finding], CrossRankReport | None]:
    """A trace's per-config and (several ranks) cross-rank findings, ranked, and the cross-rank report."""
    from surrobench.analysis.detect_ranks import cross_rank_findings

    ranks = timeline_cross_rank(tl)
    found = diagnose_config(trace_evidence(tl, **known), th) + cross_rank_findings(ranks, th)
    return rank_findings(found), ranks


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
