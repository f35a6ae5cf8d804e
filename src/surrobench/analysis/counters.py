"""What Nsight Compute's counters say about a config's kernels: each launch's speed-of-light verdict, roofline
point, kernel-table row and findings. Verdicts (Kernel Profiling Guide, ``SOLBottleneck``: > 80% of a peak is
limited by it, :data:`HIGH`; < 60% of both latency-limited, :data:`LOW`; fixtures in tests/fixtures/ncu/):

1. DRAM >= :data:`HIGH`: ``memory``;
2. a compute pipe (tensor, FMA, FP64) or SM issue >= :data:`HIGH`: ``compute`` (before caches: a Hopper GEMM
   streams through shared memory);
3. else the busier of memory (DRAM, L2, L1) and compute if >= :data:`LOW`;
4. else ``latency``, its cause from the launch statistics (:func:`latency_cause`)."""

from __future__ import annotations

import math
import re

from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import TENSOR_SOURCES, KernelCounters, MeasuredKernel, function_name
from surrobench.records.kernels import KernelStat, KernelTable
from surrobench.records.run import grouped

#: Near a unit's peak (SOLBottleneck: "greater than 80.0% of the available compute or memory performance").
HIGH = 0.80
#: Below this on every unit, latency limits the kernel (SOLBottleneck: < 60% "typically indicate latency issues").
LOW = 0.60
#: Theoretical occupancy under this names the register or shared-memory limit (Best Practices Guide, "Occupancy").
LOW_OCCUPANCY = 0.50
#: Idle SM-time share of the last wave, ``(ceil(w) - w) / ceil(w)``, from which the tail is the cause (ncu's rule).
TAIL_IDLE = 0.20


def latency_cause(k: KernelCounters) -> str:
    """Why a launch is latency-bound: small grid, tail wave, occupancy limiter, low occupancy, else stalls."""
    if k.grid_size is not None and k.sm_count and k.grid_size < k.sm_count:
        return "grid_too_small"
    w = k.waves_per_sm
    if w is not None and w >= 1 and (math.ceil(w) - w) / math.ceil(w) >= TAIL_IDLE:
        return "tail_wave"
    if k.theoretical_occupancy is not None and k.theoretical_occupancy < LOW_OCCUPANCY:
        if k.occupancy_limiter in ("registers", "shared_mem"):
            return "registers" if k.occupancy_limiter == "registers" else "shared_memory"
    if k.achieved_occupancy is not None and k.achieved_occupancy < LOW_OCCUPANCY:
        return "low_occupancy"
    return "stalls"


def speed_of_light(k: KernelCounters) -> tuple[str, str, str | None]:
    """``(bound, limiter, cause)`` of a launch by the rules of the module docstring."""
    memory = {"DRAM": k.dram_of_peak, "L2": k.l2_of_peak, "L1": k.l1_of_peak}
    compute = {"tensor pipe": k.tensor_pipe_active, "FMA pipe": k.fma_pipe_active, "FP64 pipe": k.fp64_pipe_active}
    memory = {u: v for u, v in memory.items() if v is not None}
    compute = {u: v for u, v in compute.items() if v is not None}
    if (k.dram_of_peak or 0) >= HIGH:
        return "memory", "DRAM", None
    pipe = max(compute, key=compute.get) if compute else None
    if pipe is not None and compute[pipe] >= HIGH:
        return "compute", pipe, None
    top_memory = max(memory, key=memory.get) if memory else "DRAM"
    mem, comp = memory.get(top_memory, 0.0), max([*compute.values(), k.sm_of_peak or 0.0])
    if (k.sm_of_peak or 0) >= HIGH or (comp > mem and comp >= LOW):  # rule 2's SM issue, or rule 3's compute
        return "compute", pipe if pipe is not None and compute[pipe] >= LOW else "SM", None
    if mem >= LOW:  # rule 3: memory the busier (a compute as busy at LOW would have been the one above)
        return "memory", top_memory, None
    return "latency", top_memory if mem >= comp else (pipe or "SM"), latency_cause(k)


def precision_of(k: KernelCounters) -> str | None:
    """Ceiling precision of a launch: its tensor-core source, ``fp32`` for FMA float work, else None."""
    src = k.tensor_source()
    scalar = (k.fp32_flops or 0) + (k.fp16_flops or 0)
    if src is not None and k.tensor_ops[src] >= scalar:
        return TENSOR_SOURCES[src]
    return "fp32" if scalar > 0 else None


def measure(k: KernelCounters, ceilings: Ceilings | None, row: KernelStat | None = None) -> MeasuredKernel:
    """A launch read: bound, roofline point against ``ceilings`` (None: no roof), and its table ``row``."""
    bound, limiter, cause = speed_of_light(k)
    seconds, dram = k.duration_ns * 1e-9, k.dram_bytes
    flops, precision = k.flops(), precision_of(k)
    ai = flops / dram if dram else None
    achieved = flops / seconds / 1e12 if seconds > 0 else None
    roof = None
    if ceilings is not None and precision is not None and ai is not None and ceilings.unusable(precision) is None:
        roof = min(ceilings.peak_tflops(precision), ai * ceilings.copy_gbps / 1e3)
    return MeasuredKernel(
        counters=k,
        bound=bound,
        limiter=limiter,
        cause=cause,
        precision=precision,
        arithmetic_intensity=ai,
        achieved_tflops=achieved,
        roof_tflops=roof,
        dram_gbps=dram / seconds / 1e9 if dram is not None and seconds > 0 else None,
        kernel_class=row.kernel_class if row else None,
        op=row.op if row else None,
        module=row.module if row else None,
        trace_name=row.name if row else None,
    )


def _tokens(name: str) -> set[str]:
    """Identifier and number tokens of a kernel name, for telling same-function kernels apart."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\d+", name)) - {"void", "const", "at", "native", "std", "ul"}


def measure_all(
    launches: tuple[KernelCounters, ...], table: KernelTable | None, ceilings: Ceilings | None
) -> tuple[MeasuredKernel, ...]:
    """Every launch measured (:func:`measure`), in launch order, with its kernel-table row: same base function name,
    most shared name tokens, ties to the longest (None without one)."""
    by_function = grouped(table.kernels if table is not None else (), lambda row: function_name(row.name))
    measured = []
    for k in launches:
        rows = by_function.get(k.function, [])
        theirs = _tokens(k.name)
        row = max(rows, key=lambda r: (len(_tokens(r.name) & theirs), r.device_us)) if rows else None
        measured.append(measure(k, ceilings, row))
    return tuple(measured)
