"""Every threshold the diagnosis uses, in one place, with its source; overridable by a TOML file.

The benchmarking method (docs/sources.md, method §4) gives its judgment thresholds "for teaching only, calibrate on your
hardware". Ours are calibrated on what the H200 showed (``docs/benchmarks/h200-baseline.md``, the fixture
traces in ``tests/fixtures/traces``) and say so below; thresholds defined by the analyses this module
builds on (gap length, small-kernel length, fragment share) are quoted from there, so each number still
lives in one place.

Override any of them with ``--config FILE.toml``: top-level keys named like the fields below, e.g.::

    severity_high_fraction = 0.3
    superlinear_ratio = 2.0
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from surrobench.analysis.op_readings import CPU_SMALL_CALL_US, FRAGMENTED_SHARE
from surrobench.errors import UsageError


@dataclass(frozen=True)
class Thresholds:
    """The diagnosis thresholds. Fractions are 0..1, times ms, memory bytes.

    Severity (all kinds): a finding's *stake* is the step time it concerns, its estimated gain where one
    can be computed, else the time of the ops or gaps behind it, as a fraction of the step; so within the
    findings that have gains, a higher severity never carries a smaller gain.

    Attributes:
        severity_high_fraction: stake >= this is ``high``. 0.25: on the H200, launch-bound fno2d 128 b1
            loses ~0.8 of its 1.0-1.3 ms step, a CUDA graph removes it (4.3-4.7x); a quarter of the step is
            the smallest loss we would act on before anything else.
        severity_medium_fraction: stake >= this is ``medium``. 0.10, twice the ~5% run-to-run spread of
            configs between processes in the H200 baseline (fno2d 128 b1: 1.30 vs 1.94 ms across runs is
            larger, so gains under 10% are not worth chasing first).
        report_min_fraction: stake below this is not reported (a healthy workload gets no alarm). 0.03:
            the harness's own per-step sync-and-relaunch gap on the H200 is ~10-20 µs, 1-2% of a 1 ms step.
        fragmented_share: share of kernel time in elementwise/copy/concat ops that flags fragmentation
            (:data:`surrobench.analysis.op_readings.FRAGMENTED_SHARE`; H200 fixtures: FNO 0.54, U-Net 0.09).
        bound_op_share_min: an op must hold at least this share of the op table's time to get a
            memory- or compute-bound verdict. 0.10, as ``op_readings.MEMORY_SHARE_MIN``.
        compute_share_min: without a roofline, GEMM/convolution ops (each above ``bound_op_share_min``)
            holding at least this share of the op table's time get the ``compute_bound`` verdict. 0.5: they
            hold most of the time (a majority), our choice.
        compute_efficient_fraction: a compute-bound op reaching this fraction of the calibrated matmul
            peak is healthy (``info``), and it is the target a slower op's gain is measured to. 0.5: cuBLAS
            GEMMs at 8192^3 reach the peak itself (docs/benchmarks/h200-diagnosis.md, calibration); half of
            it is what a large convolution or GEMM in a model reaches on the H200 baseline.
        calibration_stale_ratio: an op (holding at least ``bound_op_share_min`` of the time) above this
            multiple of the calibrated matmul peak or copy bandwidth means the calibration is stale or too low
            (a busy host, another machine state, a calibration at tiny sizes, a peak measured for a GEMM that
            the op's kernel beats, e.g. a CPU's fp16 matmul next to its fp16 convolution): a ``ceiling_suspect``
            finding says so instead of "healthy" or a share over 100%. For the copy bandwidth a second reading
            is data kept in cache (the roofline counts every byte from memory), which the finding names. 1.25: the calibration is a median over
            10 calls at one size, and timer resolution and clock boost put a measured op a few percent above
            it (on the H200 a bf16 GEMM reached 107% of a 767 TFLOP/s calibration, 102% of the 794 TFLOP/s one,
            docs/benchmarks/h200-diagnosis.md); a quarter above is beyond that spread.
        cpu_small_call_us: on a CPU basis, a low-intensity op (normalization, elementwise, copy...) whose calls
            average under this (µs, profiler overhead removed by the step scale) is a fragmented small op, not
            a memory-bound one. 20: PyTorch's eager dispatch costs a few µs per op on a CPU; 20 µs at the ~20 GB/s
            of a CPU memory copy (this machine's calibration: 21 GB/s) moves ~400 KB, which a core's L2 or
            the L3 holds, so the DRAM bandwidth is not what limits such calls.
        parallelism_bound_fraction: a memory-bound op under this fraction of the copy bandwidth is not
            limited by bandwidth but by too little parallelism (too few thread blocks to fill the SMs).
            0.25: on the H200, unet2d's GroupNorm at 512x512 batch 1 moves 130 GB/s (3% of 4084 GB/s) with
            batch x groups = 8 rows to reduce; elementwise ops on the same tensors reach 26% and more
            (docs/benchmarks/h200-diagnosis.md).
        gpu_idle_busy_max: GPU busy share under which the GPU counts as idle for the system-view rule.
        cpu_util_io_max: CPUs in use under which a process with an idle GPU is waiting (I/O or sync).
            0.5 is the rule of docs/sources.md, tools §4 ( "CPU 利用率低（< 50%），大概率瓶颈在 IO 或 GPU 同步").
        hotspot_share_min: a non-framework host function with at least this share of host samples inside
            the step is host preprocessing. 0.10: the profiling tools text's example (docs/sources.md, tools §1) hot spot held 42%; a tenth is
            where a single function becomes worth naming.
        throughput_drop_min: throughput falling by more than this fraction from one batch to the next
            larger one is memory pressure (docs/sources.md, method §4, "批量增大吞吐不升反降"). 0.10: larger than the
            CI width of the H200 baseline medians (under 3%).
        peak_mem_near_limit: peak allocated memory above this fraction of the device's memory.
        pressure_mem_share: a throughput fall is memory pressure only when the larger batch's peak holds at
            least this fraction of the device's memory: further from the limit the allocator has room and the
            fall has another cause (a busy host, a cache-size effect). 0.5, our choice.
        reserved_over_allocated: reserved / peak-allocated above this ratio is allocator churn. 2.0: the
            H200 baseline's unet2d 128 b8 reached 1210 MiB for a 92 MiB model-and-activations footprint
            (a cuDNN workspace); factors under 2 are ordinary caching-allocator rounding.
        reserved_min_bytes: ...and only when the reserve is at least this large (256 MiB).
        superlinear_ratio: an op's time ratio over its FLOP ratio across adjacent ladder rungs above this
            is superlinear. 1.5; the method's example (docs/sources.md, method §2) is 0.3 -> 4 ms for 4x FLOPs, a ratio of 3.3.
        superlinear_min_ms: ...only for ops taking at least this long per step at the larger rung.
        precision_slower_min: fp16/bf16 slower than fp32 by more than this fraction is a mismatch.
            0.05: H200 fno2d 128 b1 was 45% slower under fp16, far above the medians' CI widths.
        fp32_under_autocast_share: compute ops (GEMM, conv) left in fp32/complex64 under autocast holding at
            least this share of the FLOPs are flagged. 0.2, our choice.
        straggler_late_share_min: a rank is a straggler only when it enters at least this fraction of the
            matched collectives last. 0.75: with two ranks and jitter alone each rank is last about half
            the time; three quarters is consistently late, our choice.
    """

    severity_high_fraction: float = 0.25
    severity_medium_fraction: float = 0.10
    report_min_fraction: float = 0.03
    fragmented_share: float = FRAGMENTED_SHARE
    bound_op_share_min: float = 0.10
    compute_share_min: float = 0.5
    compute_efficient_fraction: float = 0.5
    calibration_stale_ratio: float = 1.25
    cpu_small_call_us: float = CPU_SMALL_CALL_US
    parallelism_bound_fraction: float = 0.25
    gpu_idle_busy_max: float = 0.5
    cpu_util_io_max: float = 0.5
    hotspot_share_min: float = 0.10
    throughput_drop_min: float = 0.10
    peak_mem_near_limit: float = 0.90
    pressure_mem_share: float = 0.5
    reserved_over_allocated: float = 2.0
    reserved_min_bytes: int = 256 * 2**20
    superlinear_ratio: float = 1.5
    superlinear_min_ms: float = 0.05
    precision_slower_min: float = 0.05
    fp32_under_autocast_share: float = 0.2
    straggler_late_share_min: float = 0.75

    def severity(self, fraction: float) -> str | None:
        """``high``/``medium``/``low`` for a stake of ``fraction`` of the step; None under the report floor."""
        if fraction >= self.severity_high_fraction:
            return "high"
        if fraction >= self.severity_medium_fraction:
            return "medium"
        return "low" if fraction >= self.report_min_fraction else None


DEFAULT_THRESHOLDS = Thresholds()


def _bad_value(key: str, value: object) -> str | None:
    """Why ``value`` cannot be the threshold ``key`` (None when it can): each is a finite number >= 0 (a NaN
    would make every comparison with it false, silently dropping or lowering a finding)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # an int is finite (math.isfinite would overflow on a huge one); nan < 0 is false, hence the own test
    if not number or value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        return f"{key} = {value!r} must be a finite non-negative number"
    return None


def check_thresholds(thresholds: object) -> None:
    """Refuse ``thresholds`` unless it is a :class:`Thresholds` whose every value is a finite number >= 0.

    Raises:
        UsageError: naming ``thresholds``: another type (``"x"``, a dict), or the first bad value.
    """
    if not isinstance(thresholds, Thresholds):
        raise UsageError.bad(
            "thresholds",
            f"{thresholds!r}: must be a surrobench.analysis.thresholds.Thresholds (load_thresholds reads one "
            f"from a TOML file), not {type(thresholds).__name__}",
        )
    for field in dataclasses.fields(Thresholds):
        problem = _bad_value(field.name, getattr(thresholds, field.name))
        if problem:
            raise UsageError.bad("thresholds", f": {problem}")


def load_thresholds(config: Path | None) -> Thresholds:
    """The defaults, overridden by the top-level keys of the TOML file ``config`` (None: defaults).

    Raises:
        UsageError: unreadable file, a file that is not UTF-8 text, invalid TOML, an unknown key, or a value that
            is not a finite non-negative number (``nan``, ``inf``, ``-1``, ``"x"``).
    """
    if config is None:
        return DEFAULT_THRESHOLDS
    try:
        data = tomllib.loads(Path(config).read_text(encoding="utf-8"))  # TOML is UTF-8 (TOML 1.0, "Spec")
    except OSError as exc:
        raise UsageError.bad("config", f"{str(config)!r}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise UsageError.bad(
            "config", f"{str(config)!r}: not a TOML file (not UTF-8 text at byte {exc.start})"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError.bad("config", f"{str(config)!r}: invalid TOML ({exc})") from None
    known = {f.name: f for f in dataclasses.fields(Thresholds)}
    for key, value in data.items():
        if key not in known:
            raise UsageError.bad("config", f"{str(config)!r}: unknown threshold {key!r}; known: {', '.join(known)}")
        problem = _bad_value(key, value)
        if problem:
            raise UsageError.bad("config", f"{str(config)!r}: {problem}")
    return dataclasses.replace(DEFAULT_THRESHOLDS, **data)
