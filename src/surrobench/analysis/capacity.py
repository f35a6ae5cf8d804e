"""The capacity at a P99 target: predicted from the unloaded service times, then searched under load.

The prediction simulates the batcher (:func:`~surrobench.execution.batcher.serve_open_loop` on a
:class:`~surrobench.execution.batcher.VirtualClock`) over Poisson arrivals, each batch's service time drawn from
the unloaded samples of its padded size: isolated with probability ``min(1, idle / gap)``, else back to back.
The batcher's own time is not modelled. The verification brackets the measured capacity in 10% steps and
bisects (:func:`find_capacity`); a target the isolated batch-1 P99 exceeds is infeasible (:func:`infeasible_reason`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from surrobench.analysis.serve_load import NothingCompleted, load_point
from surrobench.execution.arrivals import MAX_ARRIVALS_PER_LOAD, constant_arrivals, poisson_arrivals
from surrobench.execution.batcher import VirtualClock, serve_open_loop
from surrobench.records.serve import Capacity, LoadPoint, SearchStep, ServePolicy, UnloadedLatency, padded_size

#: The peak search's bracket width at which it stops, a fraction of the lower end (below a P99's spread; ours).
SEARCH_TOLERANCE = 0.05
#: At most this many rates per search (bounds a search's time at about this many durations).
MAX_SEARCH_STEPS = 12
#: The first bracketing step around a prediction (a prediction within 10% closes in two loads); squared up to 2.
PREDICTED_STEP = 1.1
#: The simulation's requests per rate (measured, after its warm-up): enough that its P99 is the 40th-slowest.
SIMULATED_REQUESTS = 4000
#: The simulated search's resolution and step limit: it costs milliseconds per rate, not seconds.
SIMULATED_TOLERANCE = 0.01
SIMULATED_STEPS = 40


def find_capacity(
    measure: Callable[[float], LoadPoint],
    target_p99_ms: float,
    start_rps: float,
    *,
    tolerance: float = SEARCH_TOLERANCE,
    max_steps: int = MAX_SEARCH_STEPS,
    max_rps: float = float("inf"),
    factor: float = 2.0,
) -> tuple[Capacity, list[LoadPoint]]:
    """The highest rate whose P99 stays within ``target_p99_ms`` (MLPerf LoadGen's FindPeakPerformance): widen by
    ``factor`` (squared up to 2) from ``start`` to the first failure, then bisect to ``tolerance``; nothing above
    ``max_rps``. Returns the capacity (0 if none passed in ``max_steps``) and the points, by rate."""
    steps: list[SearchStep] = []
    points: list[LoadPoint] = []

    def passes(rate: float, phase: str) -> bool:
        try:
            point = measure(rate)
        except NothingCompleted:  # far past capacity: every request dropped, a failing rate like any other
            steps.append(SearchStep(rate, None, False, phase))
            return False
        points.append(point)
        steps.append(SearchStep(rate, point.p99_ms, bool(point.passed), phase))
        return bool(point.passed)

    lo, hi, rate = None, None, min(start_rps, max_rps)
    up = passes(rate, "bound")
    while len(steps) < max_steps and (lo is None or hi is None):
        if up:
            if rate >= max_rps:  # passes at the most a load may offer: no failing rate to bracket with
                lo = rate
                break
            lo, rate = rate, min(rate * factor, max_rps)
            if not passes(rate, "bound"):
                hi = rate
        else:
            hi, rate = rate, rate / factor
            if passes(rate, "bound"):
                lo = rate
        factor = min(factor * factor, 2.0)
    while lo is not None and hi is not None and (hi - lo) / lo > tolerance and len(steps) < max_steps:
        mid = (lo + hi) / 2
        if passes(mid, "bisect"):
            lo = mid
        else:
            hi = mid
    capacity = Capacity(target_p99_ms, lo or 0.0, hi, tuple(steps))
    return capacity, sorted(points, key=lambda p: p.target_rps or 0.0)


class SampledService:
    """A virtual-clock :data:`~surrobench.execution.batcher.Service` drawing a batch's time from its padded size's samples, seeded."""

    def __init__(self, unloaded: dict[int, UnloadedLatency], clock: VirtualClock, seed: int = 0) -> None:
        self.unloaded, self.clock = unloaded, clock
        self.sizes = tuple(sorted(unloaded))
        self.rng = np.random.default_rng(seed)
        self.last_end = -np.inf

    def __call__(self, k: int) -> float:
        u = self.unloaded[padded_size(k, self.sizes)]
        idle_s = self.clock.now() - self.last_end
        isolated = self.rng.random() < min(1.0, idle_s / (u.gap_ms / 1e3))
        pool = u.isolated_ms if isolated else u.back_to_back_ms
        seconds = pool[int(self.rng.integers(len(pool)))] / 1e3
        self.clock.advance(seconds)
        self.last_end = self.clock.now()
        return seconds


def simulated_point(
    unloaded: dict[int, UnloadedLatency],
    policy: ServePolicy,
    rate_rps: float,
    target_p99_ms: float,
    seed: int = 0,
    arrival: str = "poisson",
) -> LoadPoint:
    """A simulated open-loop load of ``rate_rps`` through ``policy``. Raises NothingCompleted (as ``load_point``)."""
    n = min(1.1 * SIMULATED_REQUESTS, MAX_ARRIVALS_PER_LOAD)
    duration_s, warmup_s = n / rate_rps, 0.1 * SIMULATED_REQUESTS / rate_rps
    clock = VirtualClock()
    service = SampledService(unloaded, clock, seed)
    if arrival == "constant":
        arrivals = constant_arrivals(rate_rps, duration_s)
    else:
        arrivals = poisson_arrivals(rate_rps, duration_s, seed)
    trace = serve_open_loop(arrivals, service, policy, clock, drain_s=duration_s)
    return load_point(
        trace,
        arrival=arrival,
        max_batch=policy.max_batch,
        warmup_s=warmup_s,
        target_rps=rate_rps,
        target_p99_ms=target_p99_ms,
    )


def predict_capacity(
    unloaded: dict[int, UnloadedLatency],
    policy: ServePolicy,
    target_p99_ms: float,
    seed: int = 0,
    arrival: str = "poisson",
) -> float:
    """Predicted capacity (requests/s) at ``target_p99_ms`` by :func:`find_capacity` on the simulation; 0: none."""
    if infeasible_reason(unloaded, target_p99_ms) is not None:
        return 0.0
    full = unloaded[max(s for s in unloaded if s <= policy.max_batch)]
    start = 0.5 * policy.max_batch / (full.back_to_back_p50_ms / 1e3)
    capacity, _ = find_capacity(
        lambda rate: simulated_point(unloaded, policy, rate, target_p99_ms, seed, arrival),
        target_p99_ms,
        start,
        tolerance=SIMULATED_TOLERANCE,
        max_steps=SIMULATED_STEPS,
    )
    return capacity.capacity_rps


def infeasible_reason(unloaded: dict[int, UnloadedLatency], target_p99_ms: float) -> str | None:
    """Why no rate meets ``target_p99_ms`` (the isolated batch-1 P99 exceeds it), naming both P99s; None otherwise."""
    one = unloaded.get(1)
    if one is None or one.isolated_p99_ms <= target_p99_ms:
        return None
    return (
        f"no rate meets P99 <= {target_p99_ms:g} ms: an isolated request's P99 is already {one.isolated_p99_ms:.3g} ms "
        f"unloaded (median {one.isolated_p50_ms:.3g} ms; back to back {one.back_to_back_p50_ms:.3g} ms median, "
        f"{one.back_to_back_p99_ms:.3g} ms P99: isolated is {one.isolated_p50_ms / one.back_to_back_p50_ms:.2g}x)"
    )
