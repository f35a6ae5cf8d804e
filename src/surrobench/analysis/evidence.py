"""The evidence bundle of one config: everything known about it, any part possibly missing.

Built by :func:`surrobench.analysis.diagnose.trace_evidence` (or by the caller), read by every detector
(:mod:`surrobench.analysis.detect_gpu`, :mod:`surrobench.analysis.detect_ops`).
"""

from __future__ import annotations

from dataclasses import dataclass
from surrobench.analysis.roofline import RooflineReport
from surrobench.analysis.timeline import TimelineReport
from surrobench.analysis.trace_facts import TraceFacts
from surrobench.records.counters import ConfigCounters
from surrobench.records.kernels import KernelTable
from surrobench.records.ops import OpTable
from surrobench.records.run import ConfigResult
from surrobench.records.system import SystemView


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
        kernel_table: the profiled kernels with their classes (:mod:`surrobench.records.kernels`), when recorded.
        counters: the step's top kernels under Nsight Compute (``--counters``), read against the ceilings.
        profiled_step_ms: mean step under the profiler over the recorded steps (the profiling child's,
            :func:`surrobench.api.profile.profiled_step_ms`), ms; with ``result`` it gives the profiler
            overhead and the scale of CPU op times (:meth:`op_time_scale`).
    """

    label: str | None = None
    result: ConfigResult | None = None
    op_table: OpTable | None = None
    timeline: TimelineReport | None = None
    facts: TraceFacts | None = None
    roofline: RooflineReport | None = None
    system: SystemView | None = None
    profiled_step_ms: float | None = None
    kernel_table: KernelTable | None = None
    counters: ConfigCounters | None = None

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
            return (
                f"op times as profiled: mean profiled step {self.profiled_step_ms:.3f} ms vs unprofiled median "
                f"{unprofiled:.3f} ms (profiler overhead {overhead:+.0%}, not scaled up)"
            )
        return (
            f"op times scaled by {scale:.2f} to the unprofiled step: mean profiled step {self.profiled_step_ms:.3f} ms "
            f"vs unprofiled median {unprofiled:.3f} ms (profiler overhead {overhead:+.0%})"
        )

    def idle_cap_ms(self, idle_ms: float) -> float:
        """``idle_ms`` per step, capped by the unprofiled step minus GPU busy time per step when both are
        known: gaps measured under the profiler are inflated by its overhead, the unprofiled step is not."""
        if self.result is None or self.result.latency_ms is None or self.facts is None:
            return idle_ms
        return min(idle_ms, max(self.result.latency_ms.median - self.facts.gpu_busy_ms, 0.0))


def op_time_scale(table: OpTable | None, profiled_step_ms: float | None, unprofiled_ms: float | None) -> float:
    """``unprofiled_ms / profiled_step_ms``, at most 1, for a CPU-basis op table; 1 otherwise (a ratio).

    ``unprofiled_ms``: the timed median step, ms; ``profiled_step_ms``: the mean of the recorded steps under
    the profiler, ms, i.e. the step the table's per-step times (sums over ``active_steps`` / ``active_steps``)
    are averaged over. Dividing by that same step makes a scaled op time its fraction of the profiled wall
    time times the unprofiled step, so the ops of one thread, whose self times add up to at most the steps
    they ran in, never exceed the unprofiled step. A median profiled step does not have that property: a few
    preempted steps on a busy CPU raise the sums (self CPU times are wall time) but not the median.

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
