"""Roofline per operator: achieved FLOP/s and bytes/s against the device's measured ceilings.

Model: Williams, Waterman, Patterson, CACM 52(4), 2009: intensity ``I = F / Q`` (FLOP/byte); below the ridge
``peak / bandwidth`` an op is memory-bound (best time ``Q / bandwidth``), above it compute-bound (``F / peak``).

- FLOPs: FlopCounterMode with :mod:`surrobench.analysis.op_flops`'s formulas; unknown FLOPs -> bound by family
  (:func:`surrobench.analysis.op_families.low_intensity`) or ``"unknown"``.
- Bytes: each tensor input and output once, ``numel * element_size`` (minimum traffic, no cache); metadata ops
  none; a gather's source at most its output's bytes.
- Time: the op table's self time per step (on CPU less the profiler's cost: :func:`surrobench.analysis.evidence.deflate`
  of the table passed in); unseen wrapper/backend ops' time goes to seen ops of the same
  category by bytes; ``other`` (allocations, views) is bookkeeping and stays out.
- Calls: an op the counter saw more times a forward than the profile a step is uncosted (:class:`UncostedOp`;
  docs/design.md, "Kernel attribution").
- Ceilings: ``surrobench calibrate``, else the H200's (said in the report); a zero or non-finite ceiling is
  unusable (:meth:`Ceilings.unusable`).
- Headroom (:func:`roofline_headroom`): step time over the summed ``max(FLOPs / peak, DRAM bytes / copy bandwidth)``
  of its launches under ncu (docs/design.md, "Headroom"): what ``optimize`` left (1.0: at the roofline)."""

from __future__ import annotations

from collections import defaultdict
import math
from dataclasses import dataclass, field

from surrobench.analysis.op_families import low_intensity
from surrobench.records import schemas
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters, KernelCounters
from surrobench.records.ops import OTHER, OpTable, categorize


def format_tflops(tflops: float) -> str:
    """A rate for text: two decimals, three significant digits under 0.1 TFLOP/s."""
    return f"{tflops:.2f}" if not math.isfinite(tflops) or abs(tflops) >= 0.1 else f"{tflops:.3g}"


def format_gbps(gbps: float) -> str:
    """A bandwidth for text, GB/s: whole from 10 up, two significant digits below (0.42, never 0 for a measured rate)."""
    return f"{gbps:.0f}" if gbps >= 10 else f"{gbps:.2g}"


def format_ridge(flop_per_byte: float) -> str:
    """A ridge point for text, FLOP/byte: one decimal, three significant digits under 0.1."""
    return f"{flop_per_byte:.1f}" if flop_per_byte >= 0.1 else f"{flop_per_byte:.3g}"


#: ``surrobench calibrate`` on an H200, 2026-12-02 (docs/benchmarks/h200-counters.md): copy and GEMM rates, fp32 TF32 off.
H200_FALLBACK_NOTE = (
    "no calibration stored for this device: using the built-in H200 ceilings (run surrobench calibrate)"
)
H200_FALLBACK = Ceilings(
    "NVIDIA H200", 4122.0, {"fp32": 50.5, "tf32": 400.2, "fp16": 732.6, "bf16": 762.7}, "", H200_FALLBACK_NOTE
)


def ceiling_share(fraction: float, ceiling: str, stale_ratio: float) -> str:
    """A rate as a share of ``ceiling``: ``"42% of <c>"``, within spread ``100%``, beyond ``"12.5x <c>: suspect"``."""
    if fraction <= 1.0:
        return f"{fraction:.0%} of {ceiling}"
    if fraction <= stale_ratio:
        return f"100% of {ceiling} (within the calibration spread)"
    return f"{fraction:.1f}x {ceiling}: the ceiling is suspect"


@dataclass(frozen=True)
class SuspectCeiling:
    """A calibrated ceiling ops exceed beyond its spread: ``ceiling`` (``"copy"`` GB/s, ``"matmul"`` TFLOP/s), ``precision``,
    ``calibrated``, ``achieved`` (same unit), ``ratio``, ``ops`` above it (fastest first)."""

    ceiling: str
    precision: str
    calibrated: float
    achieved: float
    ratio: float
    ops: tuple[str, ...]


@dataclass
class OpCost:
    """FLOPs and bytes of one ATen op per forward; ``flops`` None when unknown; ``dtypes`` seen."""

    name: str
    calls: int = 0
    flops: int | None = 0
    bytes: int = 0
    dtypes: set[str] = field(default_factory=set)
    flops_unknown: str | None = None  # why ``flops`` is None (op_flops.flops_unknown_reason)


@dataclass(frozen=True)
class RooflineOp(schemas.Plain):
    """One op per step: ms, FLOPs, bytes, TFLOP/s, GB/s; no FLOPs: ``"memory"`` if low-intensity, else ``"unknown"``."""

    name: str
    category: str
    time_ms: float
    share: float
    flops: int | None
    bytes: int
    intensity: float | None
    achieved_tflops: float | None
    achieved_gbps: float
    bound: str  # "memory", "compute" or "unknown"
    ceiling_fraction: float | None  # achieved / attainable at this intensity = best time / time
    gain_ms: float | None  # time minus the roofline's best time
    dtypes: tuple[str, ...]
    calls: int = 0  # per step (one forward), as the byte counter saw them
    flops_unknown: str | None = None  # why ``flops`` is None (op_flops.flops_unknown_reason)


@dataclass(frozen=True)
class UncostedOp(schemas.Plain):
    """An op left out: the FLOP counter saw it ``counted_calls`` times a forward, the profile ``profiled_calls`` times
    a step (fewer): its costs describe calls the step did not run (another decomposition; module docstring, "Calls")."""

    name: str
    counted_calls: int
    profiled_calls: float


@dataclass(frozen=True)
class RooflineReport(schemas.Plain):
    """The ops of one config against ``ceilings`` for ``precision``, largest time first; ``uncosted`` those left out
    (absent from a report stored before them: none)."""

    ceilings: Ceilings
    precision: str
    ridge_flop_per_byte: float
    ops: tuple[RooflineOp, ...]
    uncosted: tuple[UncostedOp, ...] = ()

    def suspect_ceilings(self, stale_ratio: float, share_min: float) -> tuple[SuspectCeiling, ...]:
        """The ceilings an op holding ``share_min`` of the time exceeds by more than ``stale_ratio`` (copy, then matmul)."""
        ops = [o for o in self.ops if o.share >= share_min]
        matmul = [(o.achieved_tflops, o.name) for o in ops if o.achieved_tflops is not None]
        rates = {"copy": (self.ceilings.copy_gbps, [(o.achieved_gbps, o.name) for o in ops])}
        rates["matmul"] = (self.ceilings.peak_tflops(self.precision), matmul)
        suspects = []
        for ceiling, (calibrated, achieved) in rates.items():
            over = sorted((rate, name) for rate, name in achieved if rate > stale_ratio * calibrated)[::-1]
            if over:
                top = over[0][0]
                names = tuple(name for _, name in over)
                suspects.append(SuspectCeiling(ceiling, self.precision, calibrated, top, top / calibrated, names))
        return tuple(suspects)

    def to_json(self) -> dict:
        """The ceilings read at ``precision`` (TFLOP/s, GB/s, FLOP/byte), ``ceilings`` whole, and ``ops``; the fields
        under their names, as :meth:`~surrobench.records.schemas.Plain.from_json` reads them back."""
        c = self.ceilings
        return {
            "device_name": c.device_name,
            "precision": self.precision,
            "peak_tflops": c.peak_tflops(self.precision),
            "copy_gbps": c.copy_gbps,
            "ridge_flop_per_byte": self.ridge_flop_per_byte,
            "ceilings_note": c.note or f"calibrated {c.measured}",
            "ceilings": c.to_json(),
            "ops": [o.to_json() for o in self.ops],
            "uncosted": [u.to_json() for u in self.uncosted],
        }


def _op_times_ms(table: OpTable, costs: dict[str, OpCost], uncosted=frozenset()) -> dict[str, float]:
    """Self ms per step of each costed op, plus its bytes-weighted part of unseen same-category ops; the ops named
    in ``uncosted`` neither lend time nor take any."""
    own = table.ms_per_step()
    times = {name: own.get(name, 0.0) for name in costs if name not in uncosted}
    unseen: dict[str, float] = defaultdict(float)
    for name, ms in own.items():
        if name not in costs and categorize(name) != OTHER:
            unseen[categorize(name)] += ms
    for category, ms in unseen.items():
        mine = [n for n in times if categorize(n) == category and costs[n].bytes > 0]
        total = sum(costs[n].bytes for n in mine)
        for n in mine:
            times[n] += ms * costs[n].bytes / total
    return times


def _roofline_op(name: str, c: OpCost, ms: float, share: float, peak: float, bandwidth: float) -> RooflineOp:
    """``c`` against the roofline of ``peak`` FLOP/s and ``bandwidth`` bytes/s, at ``ms`` per step."""
    s = ms / 1e3
    if c.flops is None:  # unknown FLOPs: the bandwidth roof alone, and only for ops known to be low-intensity
        bound = "memory" if low_intensity(name) else "unknown"
        intensity = achieved = None
        best_s = c.bytes / bandwidth if bound == "memory" else None
    else:
        intensity = c.flops / c.bytes if c.bytes else 0.0
        bound = "compute" if intensity >= peak / bandwidth else "memory"
        achieved = c.flops / s / 1e12
        best_s = max(c.flops / peak, c.bytes / bandwidth)  # the roofline's time for this op
    return RooflineOp(
        name=name,
        category=categorize(name),
        time_ms=ms,
        share=share,
        flops=c.flops,
        bytes=c.bytes,
        intensity=intensity,
        achieved_tflops=achieved,
        achieved_gbps=c.bytes / s / 1e9,
        bound=bound,
        ceiling_fraction=None if best_s is None else best_s / s,
        gain_ms=None if best_s is None else max(ms - best_s * 1e3, 0.0),
        dtypes=tuple(sorted(c.dtypes)),
        calls=c.calls,
        flops_unknown=(c.flops_unknown or "no FLOP formula for this op") if c.flops is None else None,
    )


def roofline(table: OpTable, costs: dict[str, OpCost], ceilings: Ceilings, precision: str) -> RooflineReport:
    """Each costed op of ``table`` against ``ceilings`` at ``precision``, at the table's times.
    Raises ValueError: a ceiling zero, not finite or missing (:meth:`Ceilings.unusable`)."""
    if (problem := ceilings.unusable(precision)) is not None:
        raise ValueError(f"no roofline for {precision} on {ceilings.device_name}: {problem}")
    peak = ceilings.peak_tflops(precision) * 1e12
    bandwidth = ceilings.copy_gbps * 1e9
    calls = {op.name: op.calls / table.active_steps for op in table.ops}  # per profiled step
    uncosted = tuple(UncostedOp(n, c.calls, calls.get(n, 0.0)) for n, c in costs.items() if c.calls > calls.get(n, 0))
    times = _op_times_ms(table, costs, {u.name for u in uncosted})
    total = sum(times.values())
    ops = [_roofline_op(name, costs[name], ms, ms / total, peak, bandwidth) for name, ms in times.items() if ms > 0]
    ops.sort(key=lambda o: -o.time_ms)
    return RooflineReport(ceilings, precision, ceilings.ridge_flop_per_byte(precision), tuple(ops), uncosted)


@dataclass(frozen=True)
class RooflineHeadroom(schemas.Plain):
    """A step (timed median ``step_ms``) against the summed :func:`launch_bound_ms` of its ``launches`` measured
    under ncu (``kernel_ms`` their own time), all ms. ``covered_share``: the share of the profiled step's kernel
    time their names hold (the bound is a lower bound). ``past_ceiling``: launches faster than their bound (the
    calibrated ceiling is below the device's, :func:`surrobench.analysis.detect_ops.ceiling_suspect`): their time is
    their bound. JSON: the attributes and ``headroom``."""

    DERIVED = ("headroom",)

    step_ms: float
    roofline_bound_ms: float
    kernel_ms: float
    launches: int
    covered_share: float | None
    past_ceiling: int = 0

    @property
    def headroom(self) -> float | None:
        """``step_ms / roofline_bound_ms`` (x): how many times slower than its roofline the step runs; None for a
        zero bound."""
        return self.step_ms / self.roofline_bound_ms if self.roofline_bound_ms > 0 else None


def launch_bound_ms(k: KernelCounters, precision: str | None, ceilings: Ceilings) -> float:
    """One launch's roofline bound, ms: ``max(FLOPs / peak(precision), DRAM bytes / copy bandwidth)``; the bytes
    alone for a launch with no float precision (integer or FP64 work: no matmul ceiling) or an unusable ceiling.
    ``ceilings.copy_gbps`` must be > 0 (:func:`roofline_headroom` checks it)."""
    memory_s = (k.dram_bytes or 0.0) / (ceilings.copy_gbps * 1e9)
    compute_s = 0.0
    if precision is not None and ceilings.unusable(precision) is None:
        compute_s = k.flops() / (ceilings.peak_tflops(precision) * 1e12)
    return max(memory_s, compute_s) * 1e3


def roofline_headroom(
    counters: ConfigCounters | None, step_ms: float | None, ceilings: Ceilings | None
) -> RooflineHeadroom | None:
    """The step of ``step_ms`` against the roofline bound of its measured launches (``counters``, read against
    ``ceilings``); None without counters, a step time or ceilings, or when nothing was measured."""
    if counters is None or counters.problem is not None or not counters.kernels or not step_ms or ceilings is None:
        return None
    if not math.isfinite(ceilings.copy_gbps) or ceilings.copy_gbps <= 0:
        return None
    bounds = [
        (launch_bound_ms(m.counters, m.precision, ceilings), m.counters.duration_ns / 1e6) for m in counters.kernels
    ]
    bound = sum(min(roof, took) for roof, took in bounds)  # a launch faster than its roof: the roof is too low
    past = sum(1 for roof, took in bounds if roof > took)
    kernel_ms = sum(took for _, took in bounds)
    return RooflineHeadroom(step_ms, bound, kernel_ms, len(counters.kernels), counters.covered_share, past)
