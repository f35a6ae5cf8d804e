"""The diagnosis: everything known about one config (or a whole run) in, ranked findings out.

One detector per finding kind (:mod:`surrobench.analysis.findings`), each small, each reading the
evidence bundle and the thresholds (:mod:`surrobench.analysis.thresholds`):

- GPU-time kinds, from the timeline and the profiler: :mod:`surrobench.analysis.detect_gpu`
  (launch_bound, host_sync, h2d_transfer, stream_serialization, cpu_preprocess);
- operator kinds, from the op table and the roofline: :mod:`surrobench.analysis.detect_ops`
  (memory_bound, compute_bound, fragmented_ops, precision_mismatch of one config);
- run kinds, across the configs of a run: :mod:`surrobench.analysis.detect_run`
  (memory_pressure, superlinear_scaling, precision_mismatch between precisions, and the failed configs
  whose cause informs: FFT precisions, graph capture on a host sync);
- cross-rank kinds, across the ranks of a distributed trace: :mod:`surrobench.analysis.detect_ranks`
  (straggler, comm_wait, comm_not_overlapped).
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.analysis.cross_rank import CrossRankReport, timeline_cross_rank
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
        profiled_step_ms: median step under the profiler (the profiling child's), ms; with ``result`` it
            gives the profiler overhead and the scale of CPU op times (:meth:`op_time_scale`).
    """

    label: str | None = None
    result: ConfigResult | None = None
    op_table: OpTable | None = None
    timeline: TimelineReport | None = None
    facts: TraceFacts | None = None
    roofline: RooflineReport | None = None
    system: SystemView | None = None
    profiled_step_ms: float | None = None

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

    def on_cpu(self) -> bool:
        """Whether the op evidence is a CPU run's: a CPU-basis op table (self CPU times, no device kernels).
        Without an op table, False: the detectors keep their device wording."""
        return self.op_table is not None and self.op_table.basis == "cpu"

    def op_time_scale(self) -> float:
        """Factor from op-table times to real (unprofiled) times: :func:`op_time_scale` of this config."""
        unprofiled = self.result.latency_ms.median if self.result is not None and self.result.latency_ms else None
        return op_time_scale(self.op_table, self.profiled_step_ms, unprofiled)

    def op_time_note(self) -> str | None:
        """One line on what the op times are on a CPU basis (scaled, or under the profiler), else None."""
        if self.op_table is None or self.op_table.basis != "cpu":
            return None
        unprofiled = self.result.latency_ms.median if self.result is not None and self.result.latency_ms else None
        if not unprofiled or not self.profiled_step_ms:
            return "op times are self CPU times under the profiler (no unprofiled step to remove its overhead)"
        overhead = self.profiled_step_ms / unprofiled - 1
        scale = self.op_time_scale()
        if scale >= 1.0:
            return (f"op times as profiled: profiled step {self.profiled_step_ms:.3f} ms vs unprofiled median "
                    f"{unprofiled:.3f} ms (profiler overhead {overhead:+.0%}, not scaled up)")  # fmt: skip
        return (f"op times scaled by {scale:.2f} to the unprofiled step: profiled step {self.profiled_step_ms:.3f} ms "
                f"vs unprofiled median {unprofiled:.3f} ms (profiler overhead {overhead:+.0%})")  # fmt: skip

    def idle_cap_ms(self, idle_ms: float) -> float:
        """``idle_ms`` per step, capped by the unprofiled step minus GPU busy time per step when both are
        known: gaps measured under the profiler are inflated by its overhead, the unprofiled step is not."""
        if self.result is None or self.result.latency_ms is None or self.facts is None:
            return idle_ms
        return min(idle_ms, max(self.result.latency_ms.median - self.facts.gpu_busy_ms, 0.0))


def op_time_scale(table: OpTable | None, profiled_step_ms: float | None, unprofiled_ms: float | None) -> float:
    """``unprofiled_ms / profiled_step_ms``, at most 1, for a CPU-basis op table; 1 otherwise.

    On the CPU the op table's times are self CPU times of the profiled step, and the profiler's own cost
    per op (recording each call, its shapes and allocations) lands inside them: a CPU step of unet2d at 32
    took +160% under the profiler. Scaling every op by the step ratio puts stakes and gains in milliseconds
    of the real step, consistent with the unprofiled step they are divided by for severity (a stake of
    "11 ms" against a 13.8 ms step while the profiled step was 36 ms would triple its severity). It is an
    estimate: the overhead is per call, so ops of many tiny calls are inflated more than the uniform scale
    removes (hence the small-call rule of :func:`surrobench.analysis.detect_ops.memory_bound`). Never scaled
    up (a profiled step faster than the median is run-to-run noise, not negative overhead). A device basis
    is kernel time, which the profiler does not slow: 1.
    """
    if table is None or table.basis != "cpu" or not profiled_step_ms or not unprofiled_ms:
        return 1.0
    return min(unprofiled_ms / profiled_step_ms, 1.0)


def trace_evidence(tl: Timeline, **known) -> ConfigEvidence:
    """The evidence a trace holds: its op table (no shapes or memory), timeline report and per-step facts
    (None without GPU activity); ``known`` adds or replaces fields (``label``, ``result``, ``roofline``,
    ``system``, the profiler's own ``op_table`` with shapes and memory). The trace's op table is built
    only when ``known`` has no ``op_table`` key (an explicit None stays None)."""
    report = analyze_timeline(tl)
    facts = trace_facts(tl, report) if report.status == "ok" else None  # no GPU activity: nothing per step
    if "op_table" not in known:
        known["op_table"] = op_table_from_timeline(tl)
    return ConfigEvidence(**{"timeline": report, "facts": facts, **known})


def diagnose_config(ev: ConfigEvidence, th: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every per-config detector on ``ev``; findings ranked (:func:`~surrobench.analysis.findings.rank_findings`)."""
    from surrobench.analysis import detect_gpu, detect_ops

    found = [f for detector in detect_gpu.DETECTORS + detect_ops.DETECTORS if (f := detector(ev, th)) is not None]
    return rank_findings(found)


def diagnose_trace(tl: Timeline, th: Thresholds = DEFAULT_THRESHOLDS, **known
                   ) -> tuple[list[Finding], CrossRankReport | None]:  # fmt: skip
    """A trace alone: the per-config findings of its evidence (:func:`trace_evidence`, ``known`` as there)
    and, when it holds several ranks, the cross-rank ones, ranked together; plus the cross-rank report
    (None for one rank)."""
    from surrobench.analysis.detect_ranks import cross_rank_findings

    ranks = timeline_cross_rank(tl)
    found = diagnose_config(trace_evidence(tl, **known), th) + cross_rank_findings(ranks, th)
    return rank_findings(found), ranks


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
    found += detect_run.capture_failures(results)
    found += detect_run.superlinear_scaling(results, tables, th, flops or {})
    return rank_findings(found)
