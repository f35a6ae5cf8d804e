"""The evidence bundle of one config, any part missing; built by :func:`surrobench.analysis.diagnose.trace_evidence`.

Kernels a CUDA graph replays (or a compiled region launches) have no launching op in the profile
(:data:`surrobench.records.kernels.ORIGINS`): :func:`match_eager` credits each one's time by name to the (op, module)
rows that launched that name in the eager step of the same config, in proportion to their calls; names the eager
step never launched (a compiled region's fused Triton kernels) stay unattributed (why matching: docs/design.md,
"Attributing replayed kernels"; its coverage on the H200: benchmarks/gpu_evidence.sh)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from surrobench.analysis.roofline import RooflineReport
from surrobench.analysis.timeline import TimelineReport, TraceFacts
from surrobench.records.counters import ConfigCounters
from surrobench.records.kernels import KernelStat, KernelTable
from surrobench.records.ops import OpTable
from surrobench.records.run import ConfigResult, grouped
from surrobench.records.system import SystemView

#: Profiled step over timed median step above which the profile is not the step that was timed. The profiler's overhead
#: is +1% to +143% on the H200 (docs/benchmarks/h200-profiles.md, launch-heavy steps highest), +160% for a CPU step of
#: unet2d at 32 (:func:`deflate`); 4x leaves a 1.5x margin over the largest, 2.6x.
PROFILE_RATIO_MAX = 4.0
#: ... and below which it is not either: a profiled step cannot be faster than the unprofiled one but by the
#: spread between processes, 1.5x for one config on the H200 (docs/benchmarks/h200-baseline.md); 0.5 leaves a
#: margin below 1/1.5.
PROFILE_RATIO_MIN = 0.5


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
        if self.timed_ms is not None:
            return self.timed_ms
        if self.facts is not None and self.facts.step_ms:
            return self.facts.step_ms
        if self.op_table is not None and self.op_table.total_us > 0:
            return self.op_table.total_us / self.op_table.active_steps / 1e3
        return None

    def on_cpu(self) -> bool:
        """Whether the op table is CPU-basis (self CPU times); False without one."""
        return self.op_table is not None and self.op_table.basis == "cpu"

    @cached_property
    def ops(self) -> OpTable | None:
        """``op_table`` as the detectors read it: on a CPU basis less the profiler's cost (:func:`deflate`)."""
        return deflate(self.op_table, self.profiled_step_ms, self.timed_ms)

    @property
    def timed_ms(self) -> float | None:
        """The timed (unprofiled) median step, ms; None without one."""
        return self.result.latency_ms.median if self.result is not None and self.result.latency_ms else None

    def idle_cap_ms(self, idle_ms: float) -> float:
        """``idle_ms`` per step, capped by unprofiled step minus GPU busy when both are known."""
        if self.timed_ms is None or self.facts is None:
            return idle_ms
        return min(idle_ms, max(self.timed_ms - self.facts.gpu_busy_ms, 0.0))


def per_call_us(table: OpTable | None, profiled_step_ms: float | None, unprofiled_ms: float | None) -> float:
    """The profiler's cost per recorded op call of a CPU-basis ``table``, us: ``(profiled - unprofiled step) / op calls
    per step`` (its callbacks run at each call: docs/benchmarks/cpu-profiler-overhead.md); 0 on a device basis,
    without both steps, or for a profile no slower than the step or beyond :data:`PROFILE_RATIO_MAX` (a busy host)."""
    calls = sum(op.calls for op in table.ops) / table.active_steps if table is not None and table.basis == "cpu" else 0
    if not calls or not unprofiled_ms or not 1 < (profiled_step_ms or 0) / unprofiled_ms <= PROFILE_RATIO_MAX:
        return 0.0
    return (profiled_step_ms - unprofiled_ms) * 1e3 / calls


def deflate(table: OpTable | None, profiled_step_ms: float | None, unprofiled_ms: float | None) -> OpTable | None:
    """A CPU-basis ``table`` less the profiler's cost: :func:`per_call_us` off each call's self time (at least 0),
    shares taken again, then all times scaled to hold at most the unprofiled step (by ``unprofiled / profiled step``
    where no cost per call is taken off). Other tables, or without both steps: ``table`` (kernel time is not slowed)."""
    if table is None or table.basis != "cpu" or not profiled_step_ms or not unprofiled_ms or not table.total_us:
        return table
    each = per_call_us(table, profiled_step_ms, unprofiled_ms)
    times = {op.name: max(op.self_cpu_us - each * op.calls, 0.0) for op in table.ops}
    total = table.total_us - sum(op.self_cpu_us - times[op.name] for op in table.ops)  # a row left out stays in it
    step = unprofiled_ms if each else profiled_step_ms  # the profiled step less the cost taken off
    scale = min(unprofiled_ms / max(step, total / table.active_steps / 1e3), 1.0)
    rows = (replace(op, self_cpu_us=times[op.name] * scale, share=times[op.name] / (total or 1.0)) for op in table.ops)
    return replace(table, ops=tuple(sorted(rows, key=lambda op: -op.share)), total_us=total * scale)


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
        matched = reference is not None and ev.kernel_table is not None
        out.append(replace(ev, kernel_table=match_eager(ev.kernel_table, reference)) if matched else ev)
    return out


def _sibling_key(ev: ConfigEvidence) -> tuple:
    r = ev.result
    return (r.model, r.input_shape, r.inputs, r.batch, r.precision, r.device)
