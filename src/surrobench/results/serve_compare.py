"""Two serve runs compared by their capacity at the P99 target (the best policy of each)."""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.serve import ServePolicy, ServeRecord

#: The verdicts of a capacity comparison, NEW against BASE.
CAPACITY_VERDICTS = ("higher", "lower", "same", "inconclusive")


@dataclass(frozen=True)
class CapacityComparison(schemas.Plain):
    """NEW's capacity at the P99 target against BASE's, each the best policy's (:meth:`ServeRecord.best`):
    each search's bracket ``(capacity_rps, failing_rps)`` (:class:`surrobench.records.serve.Capacity`; open where
    ``failing_rps`` is None); ``ratio`` NEW / BASE (None when BASE's is 0) and ``ratio_interval``
    ``[new_lo / base_hi, new_hi / base_lo]`` (a side None where a bracket is open or a capacity 0); ``verdict``
    ``higher`` or ``lower`` when the brackets do not overlap, ``same`` when both are closed and overlap (the
    searches, at 5% resolution, cannot tell them apart), ``inconclusive`` when they overlap and one is open."""

    base_run_id: str
    new_run_id: str
    target_p99_ms: float
    base_policy: ServePolicy | None
    new_policy: ServePolicy | None
    base_rps: tuple[float, float | None]
    new_rps: tuple[float, float | None]
    ratio: float | None
    ratio_interval: tuple[float | None, float | None]
    verdict: str

    def to_json(self) -> dict:
        """The ``surrobench/compare-serve-v1`` object (keys as the attributes; a policy as
        ``{max_batch, max_wait_ms}`` or null for an HTTP endpoint's own batching)."""
        return {"schema": schemas.COMPARE_SERVE, **super().to_json()}


def capacity_verdict(base: tuple[float, float | None], new: tuple[float, float | None]) -> str:
    """NEW's capacity bracket ``(capacity_rps, failing_rps)`` against BASE's: one of :data:`CAPACITY_VERDICTS`
    (:class:`CapacityComparison`'s ``verdict``)."""
    (b_lo, b_hi), (n_lo, n_hi) = base, new
    # strictly above the other's capacity too: two infeasible targets, [0, 0) each, are the same
    if b_hi is not None and n_lo >= b_hi and n_lo > b_lo:
        return "higher"
    if n_hi is not None and b_lo >= n_hi and b_lo > n_lo:
        return "lower"
    return "same" if b_hi is not None and n_hi is not None else "inconclusive"


def compare_capacity(base: ServeRecord, new: ServeRecord) -> CapacityComparison:
    """Compare the capacities the two runs' peak searches found at their (equal) P99 target.

    Raises:
        UsageError: a run without a capacity search, or targets that differ."""
    best = [r.best() for r in (base, new)]
    if any(b is None for b in best):
        text = "compare of serve runs needs two runs of serve with {find_max} (a capacity on each)"
        raise UsageError.naming(text, ("find_max",))
    if base.target_p99_ms != new.target_p99_ms:
        raise UsageError(f"the runs searched different P99 targets ({base.target_p99_ms} and {new.target_p99_ms} ms)")
    (b_lo, b_hi), (n_lo, n_hi) = best[0].capacity.interval_rps, best[1].capacity.interval_rps
    low = n_lo / b_hi if b_hi else None
    high = n_hi / b_lo if n_hi is not None and b_lo else None
    return CapacityComparison(
        base.run_id,
        new.run_id,
        base.target_p99_ms,
        best[0].policy,
        best[1].policy,
        (b_lo, b_hi),
        (n_lo, n_hi),
        n_lo / b_lo if b_lo else None,
        (low, high),
        capacity_verdict((b_lo, b_hi), (n_lo, n_hi)),
    )
