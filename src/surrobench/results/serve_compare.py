"""Two serve runs compared by their capacity at the P99 target (the best policy of each)."""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.errors import UsageError
from surrobench.records.serve import ServeRecord


@dataclass(frozen=True)
class CapacityComparison:
    """``ratio`` = new / base capacity (rps); ``ratio_interval``: from the two search brackets, ``[new_lo /
    base_hi, new_hi / base_lo]`` (None where a bracket is open or a capacity is 0). ``verdict``: ``higher`` or
    ``lower`` when the brackets do not overlap, else ``same`` (the searches cannot tell them apart)."""

    target_p99_ms: float
    base_rps: tuple[float, float | None]
    new_rps: tuple[float, float | None]
    ratio: float | None
    ratio_interval: tuple[float | None, float | None]
    verdict: str


def compare_capacity(base: ServeRecord, new: ServeRecord) -> CapacityComparison:
    """Raises:
    UsageError: a run without a capacity search, or targets that differ."""
    best = [r.best() for r in (base, new)]
    if any(b is None for b in best):
        raise UsageError("compare of serve runs needs two runs of `serve --find-max` (a capacity on each)")
    if base.target_p99_ms != new.target_p99_ms:
        raise UsageError(f"the runs searched different P99 targets ({base.target_p99_ms} and {new.target_p99_ms} ms)")
    (b_lo, b_hi), (n_lo, n_hi) = best[0].capacity.interval_rps, best[1].capacity.interval_rps
    low = n_lo / b_hi if b_hi else None
    high = n_hi / b_lo if n_hi is not None and b_lo else None
    if b_hi is not None and n_lo >= b_hi:
        verdict = "higher"
    elif n_hi is not None and b_lo >= n_hi:
        verdict = "lower"
    else:
        verdict = "same"
    return CapacityComparison(
        base.target_p99_ms, (b_lo, b_hi), (n_lo, n_hi), n_lo / b_lo if b_lo else None, (low, high), verdict
    )
