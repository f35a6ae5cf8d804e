"""Every threshold the diagnosis uses, with its source (the method's are "for teaching only, calibrate on your
hardware": docs/sources.md, method §4; ours are calibrated on docs/benchmarks/h200-baseline.md).

Override any of them with ``--config FILE.toml``: top-level keys named like the fields below, e.g.::

    severity_high_fraction = 0.3
    superlinear_ratio = 2.0"""

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
    """The diagnosis thresholds (fractions 0..1, ms, ``_us`` µs, bytes), each with its source in the comment above it.
    A *stake* is the estimated gain, else the time behind a finding, as a fraction of the step."""

    # stake for ``high``: the smallest loss to act on first; a CUDA graph removes ~0.8 of launch-bound fno2d (baseline)
    severity_high_fraction: float = 0.25
    # stake for ``medium``: twice the ~5% run-to-run spread between processes (baseline)
    severity_medium_fraction: float = 0.10
    # stake below this is not reported: the harness's own sync gap is 1-2% of a 1 ms step (baseline)
    report_min_fraction: float = 0.03
    # elementwise/copy/concat share of kernel time that is fragmentation (op_readings.FRAGMENTED_SHARE)
    fragmented_share: float = FRAGMENTED_SHARE
    # an op's least share of op time for a memory/compute-bound verdict (as op_readings.MEMORY_SHARE_MIN)
    bound_op_share_min: float = 0.10
    # without a roofline, GEMM/conv ops holding a majority of op time are ``compute_bound`` (our choice)
    compute_share_min: float = 0.5
    # share of the calibrated matmul peak a compute-bound op needs to be healthy, and a slower op's target (diagnosis)
    compute_efficient_fraction: float = 0.5
    # an op above this multiple of a ceiling makes it ``ceiling_suspect``: beyond the calibration's spread (diagnosis)
    calibration_stale_ratio: float = 1.25
    # CPU basis: a low-intensity op averaging under this many µs per call is dispatch-bound, its bytes fit in cache
    cpu_small_call_us: float = CPU_SMALL_CALL_US
    # a memory-bound op under this share of the copy bandwidth lacks parallelism (GroupNorm at 3%, diagnosis)
    parallelism_bound_fraction: float = 0.25
    # GPU busy share under which the GPU is idle for the system-view rule
    gpu_idle_busy_max: float = 0.5
    # CPUs in use under which a process with an idle GPU waits on I/O or sync (docs/sources.md, tools §4)
    cpu_util_io_max: float = 0.5
    # a non-framework host function's least share of host samples to be named preprocessing (docs/sources.md, tools §1)
    hotspot_share_min: float = 0.10
    # a throughput fall from one batch to the next that is memory pressure (docs/sources.md, method §4; baseline CIs < 3%)
    throughput_drop_min: float = 0.10
    # peak allocated memory above this fraction of the device's memory
    peak_mem_near_limit: float = 0.90
    # a throughput fall is memory pressure only with the larger batch's peak at this share of the device's memory
    # or more (our choice: far from the limit, a fall is a busy host or a cache effect)
    pressure_mem_share: float = 0.5
    # reserved / peak-allocated above this is allocator churn; caching rounding stays under 2 (baseline)
    reserved_over_allocated: float = 2.0
    # ...and only for a reserve at least this large
    reserved_min_bytes: int = 256 * 2**20
    # an op's time ratio over its FLOP ratio between adjacent rungs that is superlinear (docs/sources.md, method §2)
    superlinear_ratio: float = 1.5
    # ...only for ops taking at least this long per step at the larger rung
    superlinear_min_ms: float = 0.05
    # fp16/bf16 slower than fp32 by more than this is a mismatch (far above the medians' CI widths, baseline)
    precision_slower_min: float = 0.05
    # GEMM/conv FLOPs left in fp32/complex64 under autocast flagged from this share (our choice)
    fp32_under_autocast_share: float = 0.2
    # a rank is a straggler when last into at least this share of matched collectives (two ranks by chance: half)
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
    """Why ``value`` cannot be the threshold ``key`` (None when it can): a finite number >= 0 (NaN compares false)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    # an int is finite (math.isfinite would overflow on a huge one); nan < 0 is false, hence the own test
    if not number or value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        return f"{key} = {value!r} must be a finite non-negative number"
    return None


def check_thresholds(thresholds: object) -> None:
    """Refuse ``thresholds`` unless a :class:`Thresholds` of finite numbers >= 0.
    Raises UsageError: naming ``thresholds``: another type, or the first bad value."""
    if not isinstance(thresholds, Thresholds):
        raise UsageError.bad(
            "thresholds",
            f"{thresholds!r}: must be a surrobench.analysis.thresholds.Thresholds (load_thresholds reads one "
            f"from a TOML file), not {type(thresholds).__name__}",
        )
    for field in dataclasses.fields(Thresholds):
        if problem := _bad_value(field.name, getattr(thresholds, field.name)):
            raise UsageError.bad("thresholds", f": {problem}")


def load_thresholds(config: Path | None) -> Thresholds:
    """The defaults overridden by the top-level keys of TOML file ``config`` (None: defaults). Raises UsageError:
    unreadable, not UTF-8, invalid TOML, an unknown key, a value not a finite number >= 0."""
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
        if problem := _bad_value(key, value):
            raise UsageError.bad("config", f"{str(config)!r}: {problem}")
    return dataclasses.replace(DEFAULT_THRESHOLDS, **data)
