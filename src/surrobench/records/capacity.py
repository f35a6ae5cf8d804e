"""The record of ``optimize --objective capacity`` (``surrobench/capacity-v1``): per candidate recipe its
accuracy, the capacity the simulation predicts per batching policy, and the recipe chosen, verified under load
beside the baseline (eager) as two stored serve runs. Rates in requests/s (``_rps``), times in s."""

from __future__ import annotations

from dataclasses import dataclass, field

from surrobench.records import schemas
from surrobench.records.serve import ServePolicy


@dataclass(frozen=True)
class CapacityCandidate(schemas.Plain):
    """One recipe tried for capacity: ``"baseline"`` or the remedies joined by ``+`` (``"cudagraph+tf32"``), and
    the execution ``settings`` it runs with (precision, mode and the rest).

    Attributes:
        accurate: the accuracy guard's verdict against the fp32 eager (and fp64) output; None when it failed to run.
        accuracy: the guard's reason, or the error that stopped the candidate.
        predicted_rps: per policy label (``batch<=8 wait<=1ms``), the predicted capacity at the target.
        best_policy: the policy with the highest prediction (None when it failed to run).
        service_faster: whether the best policy's full batch is faster than the baseline's at that size by the
            paired rule (back-to-back service times); None for the baseline.
    """

    recipe: str
    settings: dict
    accurate: bool | None
    accuracy: str
    predicted_rps: dict[str, float] = field(default_factory=dict)
    best_policy: ServePolicy | None = None
    service_faster: bool | None = None

    @property
    def best_predicted_rps(self) -> float:
        return max(self.predicted_rps.values(), default=0.0)


@dataclass(frozen=True)
class CapacityOptimization(schemas.Plain):
    """What ``optimize --objective capacity`` found for one config.

    Attributes:
        workload: the config served (as a serve record's ``workload``); target_p99_ms, tolerance (rel L2).
        candidates: every recipe tried, in order (the baseline first).
        top: the candidate ranked first by prediction (accurate, and faster by the paired rule where it is
            not the baseline); verified under load.
        baseline_run_id, top_run_id: the stored serve runs that measured each one's capacity under load (at its
            best predicted policy; ``top_run_id`` None for the baseline), ``baseline_rps``, ``top_rps`` the brackets.
        verdict: the top against the baseline by :func:`surrobench.results.serve_store.capacity_verdict`
            (``higher``, ``lower``, ``same``, ``inconclusive``); None when the top is the baseline.
        recipe: the recipe recommended: the top when its verified capacity is ``higher``, else ``baseline``.
        search_s: wall time of the whole search; ``infeasible`` why no candidate meets the target, else None.
    """

    workload: dict
    target_p99_ms: float
    tolerance: float
    candidates: tuple[CapacityCandidate, ...]
    top: str
    baseline_run_id: str | None
    top_run_id: str | None
    baseline_rps: tuple[float, float | None] | None
    top_rps: tuple[float, float | None] | None
    verdict: str | None
    recipe: str
    search_s: float
    infeasible: str | None = None
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """The ``surrobench/capacity-v1`` object (keys as the attributes)."""
        return {"schema": schemas.CAPACITY, **super().to_json()}

    @classmethod
    def from_json(cls, d: dict) -> CapacityOptimization:
        """Inverse of :meth:`to_json`.

        Raises:
            DocumentError: not a ``surrobench/capacity-v1`` document; KeyError, TypeError: a key missing or of the
                wrong kind.
        """
        schemas.check(d, {schemas.CAPACITY: schemas.anything})
        return super().from_json(d)
