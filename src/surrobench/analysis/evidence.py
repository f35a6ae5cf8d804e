"""The evidence bundle of one config, any part missing; built by :func:`surrobench.analysis.diagnose.trace_evidence`.

Kernels a CUDA graph replays (or a compiled region launches) have no launching op in the profile
(:data:`surrobench.records.kernels.ORIGINS`): :func:`match_eager` credits each one's time by name to the (op, module)
rows that launched that name in the eager step of the same config, in proportion to their calls; names the eager
step never launched (a compiled region's fused Triton kernels) stay unattributed (why matching: docs/design.md,
"Attributing replayed kernels"; its coverage on the H200: benchmarks/gpu_evidence.sh)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from surrobench.analysis.roofline import RooflineReport
from surrobench.analysis.timeline import TimelineReport, TraceFacts
from surrobench.records.counters import ConfigCounters
from surrobench.records.kernels import KernelStat, KernelTable
from surrobench.records.ops import OpTable
from surrobench.records.run import ConfigResult, grouped
from surrobench.records.system import SystemView


@dataclass(frozen=True)
class ConfigEvidence:
    """What is known about one config, any part None: ``label`` (None: a trace alone), timed ``result``, ``op_table``,
    ``timeline`` and ``facts``, ``roofline``, ``system``, ``kernel_table``, ncu ``counters``, ``profiled_step_ms`` (ms)."""

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
        """One step, ms: unprofiled median, else profiled step, else op time per step (a lower bound)."""
        if self.result is not None and self.result.latency_ms is not None:
            return self.result.latency_ms.median
        if self.facts is not None and self.facts.step_ms:
            return self.facts.step_ms
        if self.op_table is not None and self.op_table.total_us > 0:
            return self.op_table.total_us / self.op_table.active_steps / 1e3
        return None

    def on_cpu(self) -> bool:
        """Whether the op table is CPU-basis (self CPU times); False without one."""
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
        """``idle_ms`` per step, capped by unprofiled step minus GPU busy when both are known."""
        if self.result is None or self.result.latency_ms is None or self.facts is None:
            return idle_ms
        return min(idle_ms, max(self.result.latency_ms.median - self.facts.gpu_busy_ms, 0.0))


def op_time_scale(table: OpTable | None, profiled_step_ms: float | None, unprofiled_ms: float | None) -> float:
    """``unprofiled_ms / profiled_step_ms``, at most 1, for a CPU-basis op table; 1 on a device basis (kernel time is
    not slowed). The profiled step is the mean over the recorded steps, which the per-step op times average over, so
    one thread's scaled ops never exceed the unprofiled step. Per-call overhead is uniform here, so many-call ops stay
    inflated (hence the small-call rule of :func:`surrobench.analysis.detect_ops.memory_bound`)."""
    if table is None or table.basis != "cpu" or not profiled_step_ms or not unprofiled_ms:
        return 1.0
    return min(unprofiled_ms / profiled_step_ms, 1.0)


#: Origins whose op is lost and may be found in the eager step (:data:`surrobench.records.kernels.ORIGINS`).
MATCHABLE = ("graph_replay", "compiled", "no_op")


def match_eager(table: KernelTable, eager: KernelTable) -> KernelTable:
    """``table`` with each row whose op is lost (:data:`MATCHABLE`) split over the eager rows of the same kernel name
    that have an op, in proportion to their calls, with origin ``matched_eager``; rows that match no eager row, and rows
    with an op, are kept as they are. Times, calls and shares keep their totals: shares are of ``table.total_us``."""
    owners = grouped((k for k in eager.kernels if k.op is not None), lambda k: k.name)
    rows: list[KernelStat] = []
    for k in table.kernels:
        found = owners.get(k.name) if k.op is None and k.origin in MATCHABLE else None
        if not found:
            rows.append(k)
            continue
        calls = sum(o.calls for o in found)
        for o in found:
            part = o.calls / calls
            us = k.device_us * part
            share = us / table.total_us if table.total_us else 0.0
            owner = dict(op=o.op, module=o.module, origin="matched_eager")
            rows.append(replace(k, calls=max(round(k.calls * part), 1), device_us=us, share=share, **owner))
    return replace(table, kernels=tuple(sorted(rows, key=lambda r: -r.device_us)))


def attribute_by_eager(evidence: list[ConfigEvidence]) -> list[ConfigEvidence]:
    """``evidence`` with the kernel table of each CUDA-graph or compiled config matched against the eager config of
    the same model, shapes, batch, precision and device (:func:`match_eager`), when the run profiled one."""
    eager = {
        _sibling_key(ev): ev.kernel_table
        for ev in evidence
        if ev.result is not None and ev.result.mode == "eager" and ev.kernel_table is not None
    }
    out = []
    for ev in evidence:
        reference = eager.get(_sibling_key(ev)) if ev.result is not None and ev.result.mode != "eager" else None
        if reference is None or ev.kernel_table is None:
            out.append(ev)
        else:
            out.append(replace(ev, kernel_table=match_eager(ev.kernel_table, reference)))
    return out


def _sibling_key(ev: ConfigEvidence) -> tuple:
    r = ev.result
    return (r.model, r.input_shape, r.inputs, r.batch, r.precision, r.device)
