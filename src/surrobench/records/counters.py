"""Hardware counters of GPU kernels, as Nsight Compute (``ncu``) measured them, and what they say: one launch
(:class:`KernelCounters`; percentages of peak as fractions, times in ns, FLOPs as counts), its verdict
(:class:`MeasuredKernel`), one config's step (:class:`ConfigCounters`).

FLOPs come from the SASS instruction counters, as Nsight Compute's own roofline sections count them
(Nsight Compute "Kernel Profiling Guide", Roofline Charts: a fused multiply-add is two operations):
fp32 = 2 ffma + fadd + fmul, fp64 = 2 dfma + dadd + dmul, fp16 = 2 hfma + hadd + hmul; tensor-core operations
come from the ``sm__ops_path_tensor_src_*`` counters, which count both the mma.sync (HMMA) and Hopper's
warp-group (GMMA) path, two per multiply-add (tests/fixtures/ncu).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from surrobench.records import schemas

#: Bound verdicts (:attr:`MeasuredKernel.bound`), Nsight Compute's speed-of-light reading.
BOUNDS: dict[str, str] = {
    "memory": "a memory unit (DRAM, L2, L1/shared) runs near its peak: the kernel waits on data",
    "compute": "an SM pipe (tensor, FMA, FP64) or the SM issue runs near its peak: arithmetic-limited",
    "latency": "neither memory nor compute is near peak: too few warps or blocks to hide latency",
}
#: Why a latency-bound kernel is (:attr:`MeasuredKernel.cause`).
LATENCY_CAUSES: dict[str, str] = {
    "grid_too_small": "fewer thread blocks than SMs: most SMs idle",
    "tail_wave": "the last wave of blocks fills few SMs: the GPU idles while it drains",
    "registers": "registers per thread cap the warps per SM (theoretical occupancy low)",
    "shared_memory": "shared memory per block caps the blocks per SM (theoretical occupancy low)",
    "low_occupancy": "few warps active per SM though the launch allows more (imbalance, scheduling)",
    "stalls": "occupancy is fine: warps stall on dependencies (memory latency, synchronization)",
}
#: Why no counters were measured (:attr:`CounterProblem.kind`), each with the fix the message gives.
PROBLEMS: dict[str, str] = {
    "ncu_missing": "ncu is not installed or not on PATH",
    "permission": "the driver refuses the GPU performance counters to this user (ERR_NVGPUCTRPERM)",
    "unsupported": "this GPU, driver or virtualization exposes no performance counters",
    "no_kernels": "ncu ran but profiled no kernel (the NVTX range or the kernel filter matched none)",
    "failed": "ncu or the profiled step failed",
    "not_cuda": "counters are measured on CUDA configs only: Nsight Compute (ncu) reads a GPU's hardware counters "
    "(run on a CUDA device)",
}
#: Tensor-core source precisions of the ``sm__ops_path_tensor_src_<src>`` counters, and the ceiling
#: (:class:`surrobench.records.ceilings.Ceilings` precision) each runs against.
TENSOR_SOURCES: dict[str, str | None] = {
    "bf16_dst_fp32": "bf16",
    "fp16": "fp16",
    "tf32_dst_fp32": "tf32",
    "fp64": None,
    "fp8": None,
    "int8": None,
    "int1": None,
}

_TEMPLATE = re.compile(r"<[^<>]*>")
_ARGS = re.compile(r"\([^()]*\)")


def function_name(kernel: str) -> str:
    """The kernel's base function name: no return type, template arguments, parameters or namespaces.

    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)`` -> ``vectorized_elementwise_kernel``
    (Kineto's demangler and ncu's differ inside the brackets, ``at::native::`` against ``at::``, so the join of
    :mod:`surrobench.analysis.counters` and ncu's ``--kernel-name-base function`` filter both use this).
    """
    name = kernel.strip()
    for pattern in (_TEMPLATE, _ARGS):
        previous = None
        while previous != name:  # nested brackets: innermost first
            previous, name = name, pattern.sub("", name)
    name = name.split("::")[-1].strip()
    return name.split()[-1] if name.split() else kernel.strip()


@dataclass(frozen=True)
class KernelCounters(schemas.Plain):
    """One kernel launch under ncu. Fractions of peak are 0..1; None where this ncu or GPU lacks the metric.

    Attributes:
        launch: ncu's ID, the launch's order among the profiled kernels (0 first).
        name: the demangled name as ncu prints it; ``function`` its :func:`function_name`.
        duration_ns: ``gpu__time_duration.sum`` under ncu (clocks not locked, caches as ``--cache-control``).
        dram_read_bytes, dram_write_bytes: ``dram__bytes_{read,write}.sum``.
        dram_of_peak, l2_of_peak, l1_of_peak: ``dram__``/``lts__``/``l1tex__throughput`` % of peak / 100.
        sm_of_peak: ``sm__throughput``; ``memory_of_peak``: ``gpu__compute_memory_throughput`` (the max over
            the memory units, ncu's "Memory Throughput").
        achieved_occupancy: ``sm__warps_active`` of the maximum; ``theoretical_occupancy``:
            ``sm__maximum_warps_per_active_cycle_pct`` / 100.
        grid_size, block_size, waves_per_sm, registers_per_thread, shared_mem_per_block_bytes, sm_count: the
            launch statistics (``launch__*``); ``occupancy_limiter``: the ``launch__occupancy_limit_*`` with
            the fewest blocks per SM (``registers``, ``shared_mem``, ``warps``, ``blocks``, ``barriers``).
        tensor_pipe_active, fma_pipe_active, fp64_pipe_active: ``sm__pipe_*_cycles_active`` of peak.
        gmma_inst, hmma_inst: tensor instructions on Hopper's warp-group path / the mma.sync path.
        fp32_flops, fp64_flops, fp16_flops: from the SASS counters (module docstring).
        tensor_ops: ``{source: operations}`` of the ``sm__ops_path_tensor_src_*`` counters, zeros left out.
        passes: ``profiler__replayer_passes``, the replays ncu needed for this launch.
    """

    launch: int
    name: str
    duration_ns: float
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    dram_of_peak: float | None = None
    l2_of_peak: float | None = None
    l1_of_peak: float | None = None
    sm_of_peak: float | None = None
    memory_of_peak: float | None = None
    achieved_occupancy: float | None = None
    theoretical_occupancy: float | None = None
    grid_size: int | None = None
    block_size: int | None = None
    waves_per_sm: float | None = None
    registers_per_thread: int | None = None
    shared_mem_per_block_bytes: int | None = None
    sm_count: int | None = None
    occupancy_limiter: str | None = None
    tensor_pipe_active: float | None = None
    fma_pipe_active: float | None = None
    fp64_pipe_active: float | None = None
    gmma_inst: float | None = None
    hmma_inst: float | None = None
    fp32_flops: float | None = None
    fp64_flops: float | None = None
    fp16_flops: float | None = None
    tensor_ops: dict[str, float] = field(default_factory=dict)
    passes: int | None = None

    @property
    def function(self) -> str:
        return function_name(self.name)

    @property
    def dram_bytes(self) -> float | None:
        """DRAM bytes read + written, None when ncu reported neither."""
        if self.dram_read_bytes is None and self.dram_write_bytes is None:
            return None
        return (self.dram_read_bytes or 0.0) + (self.dram_write_bytes or 0.0)

    def tensor_source(self) -> str | None:
        """The tensor-core source precision with the most operations, None when the tensor cores did none."""
        live = {k: v for k, v in self.tensor_ops.items() if v > 0}
        return max(live, key=live.get) if live else None

    def flops(self) -> float:
        """All floating-point operations: SASS fp32 + fp64 + fp16 and the float tensor-core operations."""
        tensor = sum(v for k, v in self.tensor_ops.items() if k not in ("int8", "int1"))
        return sum(x or 0.0 for x in (self.fp32_flops, self.fp64_flops, self.fp16_flops)) + tensor


@dataclass(frozen=True)
class MeasuredKernel(schemas.Plain):
    """A launch's counters read: bound, limiting unit, roofline point, and its kernel-table row.

    Attributes:
        counters: the launch.
        bound: one of :data:`BOUNDS`; ``limiter``: the unit near peak (``DRAM``, ``L2``, ``L1``, ``tensor pipe``,
            ``FMA pipe``, ``FP64 pipe``, ``SM``), or the highest one for a latency-bound kernel.
        cause: for ``latency``, one of :data:`LATENCY_CAUSES`; None otherwise.
        precision: the ceiling its roofline point runs against (``bf16``, ``tf32``, ``fp32``...), None for
            none (integer or FP64 work).
        arithmetic_intensity: FLOP per DRAM byte; None without DRAM bytes.
        achieved_tflops, roof_tflops: achieved, and the roof at its intensity (``min(peak, AI * copy)``; Williams
            et al., CACM 52(4), 2009), TFLOP/s, None without ceilings; ``dram_gbps`` DRAM bytes / duration, GB/s.
        kernel_class, op, module, trace_name: of the kernel-table row it joined, None when none.
    """

    counters: KernelCounters
    bound: str
    limiter: str
    cause: str | None = None
    precision: str | None = None
    arithmetic_intensity: float | None = None
    achieved_tflops: float | None = None
    roof_tflops: float | None = None
    dram_gbps: float | None = None
    kernel_class: str | None = None
    op: str | None = None
    module: str | None = None
    trace_name: str | None = None

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS or (self.cause is not None and self.cause not in LATENCY_CAUSES):
            raise ValueError(f"bound {self.bound!r} / cause {self.cause!r} not in the vocabulary")


@dataclass(frozen=True)
class CounterProblem(schemas.Plain):
    """Why a config has no counters: ``kind`` of :data:`PROBLEMS`, ``message`` one line with the fix."""

    kind: str
    message: str

    def __post_init__(self) -> None:
        if self.kind not in PROBLEMS:
            raise ValueError(f"counter problem {self.kind!r}; one of {tuple(PROBLEMS)}")


@dataclass(frozen=True)
class ConfigCounters(schemas.Plain):
    """The counters of one config's step, or the problem that stopped them.

    Attributes:
        kernels: the measured launches in launch order (empty with a ``problem``).
        selected: the kernel function names ncu was restricted to (:func:`function_name`).
        covered_share: the share of the profiled step's kernel time those names hold (kernel table), 0..1.
        passes: replay passes summed over the launches (a launch credited from an identical one,
            :mod:`surrobench.collect.ncu_dedup`, has 0: :attr:`measured_launches`); ``ncu_wall_s``: wall seconds
            of the whole ncu run, the child's start included.
        command: the ncu command line; ``problem``: set when nothing was measured.
    """

    DERIVED = ("measured_launches",)

    kernels: tuple[MeasuredKernel, ...] = ()
    selected: tuple[str, ...] = ()
    covered_share: float | None = None
    passes: int = 0
    ncu_wall_s: float | None = None
    command: tuple[str, ...] = ()
    problem: CounterProblem | None = None

    @property
    def measured_launches(self) -> int | None:
        """The launches ncu replayed when identical ones were credited (those with ``passes`` 0 were), None when
        every launch was replayed."""
        credited = sum(1 for k in self.kernels if k.counters.passes == 0)
        return len(self.kernels) - credited if credited else None
