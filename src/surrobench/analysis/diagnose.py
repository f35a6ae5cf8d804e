"""The diagnosis: everything known about one config (or a whole run) in, ranked findings out.

One detector per finding kind (:mod:`surrobench.analysis.findings`), each small, each reading the
evidence bundle and the thresholds (:mod:`surrobench.analysis.thresholds`):

- GPU-time kinds, from the timeline and the profiler: :mod:`surrobench.analysis.detect_gpu`
  (launch_bound, host_sync, h2d_transfer, stream_serialization, cpu_preprocess);
- operator kinds, from the op table and the roofline: :mod:`surrobench.analysis.detect_ops`
  (memory_bound, compute_bound, fragmented_ops, precision_mismatch of one config);
- run kinds, across the configs of a run: :mod:`surrobench.analysis.detect_run`
  (memory_pressure, superlinear_scaling, precision_mismatch between precisions).
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.analysis.findings import Finding, rank_findings
from surrobench.analysis.ops import OpTable, op_table_from_timeline
from surrobench.analysis.roofline import RooflineReport
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.analysis.timeline import TimelineReport, analyze_timeline
from surrobench.analysis.trace_facts import TraceFacts, trace_facts
from surrobench.collect.system_view import SystemView
from surrobench.results.schema import ConfigResult
from surrobench.trace.model import Timeline


@dataclass(frozen=True)
class ConfigEvidence:
    """What is known about one config; any part may be missing (a trace alone has no timing).

    Attributes:
        label: the config as text, None for a trace alone.
        result: the timed (unprofiled) result.
        op_table: the profiled op table.
        timeline: the timeline report of the profiled trace; ``facts`` its per-step facts.
        roofline: per-op roofline (needs the model run once under the FLOP counter).
        system: the system-level view (perf / py-spy), when collected.
    """

    label: str | None = None
    result: ConfigResult | None = None
    op_table: OpTable | None = None
    timeline: TimelineReport | None = None
    facts: TraceFacts | None = None
    roofline: RooflineReport | None = None
    system: SystemView | None = None

    def step_ms(self) -> float | None:
        """One step, ms: the unprofiled median latency, else the profiled step of the trace, else the op
        table's time per step (kernel time on a GPU basis: a lower bound)."""
        if self.result is not None and self.result.latency_ms is not None:
            return self.result.latency_ms.median
        if self.facts is not None and self.facts.step_ms:
            return self.facts.step_ms
        if self.op_table is not None and self.op_table.total_us > 0:
            return self.op_table.total_us / self.op_table.active_steps / 1e3
        return None

    def idle_cap_ms(self, idle_ms: float) -> float:
        """``idle_ms`` per step, capped by the unprofiled step minus GPU busy time per step when both are
        known: gaps measured under the profiler are inflated by its overhead, the unprofiled step is not."""
        if self.result is None or self.result.latency_ms is None or self.facts is None:
            return idle_ms
        return min(idle_ms, max(self.result.latency_ms.median - self.facts.gpu_busy_ms, 0.0))


def trace_evidence(tl: Timeline, **known) -> ConfigEvidence:
    """The evidence a trace holds: its op table (no shapes or memory), timeline report and per-step facts
    (None without GPU activity); ``known`` adds or replaces fields (``label``, ``result``, ``roofline``,
    ``system``, the profiler's own ``op_table`` with shapes and memory)."""
    report = analyze_timeline(tl)
    facts = trace_facts(tl, report) if report.status == "ok" else None  # no GPU activity: nothing per step
    return ConfigEvidence(**{"op_table": op_table_from_timeline(tl), "timeline": report, "facts": facts, **known})


def diagnose_config(ev: ConfigEvidence, th: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every per-config detector on ``ev``; findings ranked (:func:`~surrobench.analysis.findings.rank_findings`)."""
    from surrobench.analysis import detect_gpu, detect_ops

    found = [f for detector in detect_gpu.DETECTORS + detect_ops.DETECTORS if (f := detector(ev, th)) is not None]
    return rank_findings(found)


def diagnose_run(evidence: list[ConfigEvidence], results: list[ConfigResult], *, th: Thresholds = DEFAULT_THRESHOLDS,
                 device_memory_bytes: int | None = None, flops: dict[tuple, dict[str, int]] | None = None
                 ) -> list[Finding]:  # fmt: skip
    """Per-config findings of every profiled config plus the run-level ones, ranked together.

    Args:
        evidence: one bundle per diagnosed config.
        results: every config of the run (failed ones too: an OOM is memory-pressure evidence).
        device_memory_bytes: the device's memory, for "peak memory near the limit"; None if unknown.
        flops: ``{ConfigResult.key(): {op name: FLOPs per step}}`` for the superlinear check.
    """
    from surrobench.analysis import detect_run

    found = [f for ev in evidence for f in diagnose_config(ev, th)]
    tables = {ev.result.key(): ev.op_table for ev in evidence if ev.result is not None and ev.op_table is not None}
    found += detect_run.memory_pressure(results, th, device_memory_bytes)
    found += detect_run.precision_mismatch(results, th)
    found += detect_run.superlinear_scaling(results, tables, th, flops or {})
    return rank_findings(found)
