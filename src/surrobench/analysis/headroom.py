"""How far a step is from its physical limit: its time against its roofline bound from the measured counters.

A launch's bound is ``max(FLOPs / peak, DRAM bytes / bandwidth)`` (Williams et al., "Roofline", CACM 52(4), 2009)
with ncu's FLOPs and DRAM bytes (:class:`~surrobench.records.counters.KernelCounters`), the peak of its precision
and the device's copy bandwidth. The step's bound sums its launches' (one stream runs them in turn), each at most
the launch's measured time; the headroom, step time over bound, is what ``optimize`` left (1.0: at the roofline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters, KernelCounters


@dataclass(frozen=True)
class RooflineHeadroom:
    """A step (timed median ``step_ms``) against the summed :func:`launch_bound_ms` of its ``launches`` measured
    under ncu (``kernel_ms`` their own time), all ms. ``covered_share``: the share of the profiled step's kernel
    time their names hold (the bound is a lower bound). ``past_ceiling``: launches faster than their bound (the
    calibrated ceiling is below the device's, :func:`surrobench.analysis.detect_ops.ceiling_suspect`): their time is their bound."""

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

    def to_json(self) -> dict:
        """The attributes and ``headroom``."""
        return {
            "step_ms": self.step_ms,
            "roofline_bound_ms": self.roofline_bound_ms,
            "headroom": self.headroom,
            "kernel_ms": self.kernel_ms,
            "launches": self.launches,
            "covered_share": self.covered_share,
            "past_ceiling": self.past_ceiling,
        }


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
