"""The capacity at a P99 target: predicted from the unloaded service times, then searched under load (the method
step by step: docs/design.md, "Capacity: predicted from the service times, verified under load").

**The prediction** (:func:`predict_capacity`) simulates the batcher itself
(:func:`~surrobench.execution.batcher.serve_open_loop` on a :class:`~surrobench.execution.batcher.VirtualClock`) over
the load generator's open-loop arrivals, each batch's service time drawn from the samples of its padded size measured
before any load (:class:`~surrobench.records.serve.UnloadedLatency`: after ``MAX_GAP_S`` of idle or more, after the
idle threshold, else back to back) plus the loop's own time (``loop_ms``; back to back, ``loaded_excess_ms``, of the
cycle :func:`~surrobench.execution.batcher.saturated_cycles` measured). Not modelled: late wake-ups, slower loads.

**The verification** brackets the measured capacity around the prediction and bisects the bracket
(:func:`find_capacity`). A target the isolated batch-1 P99 already exceeds is answered without a load
(:func:`infeasible_reason`). Going down, the search stops at the :func:`sparse_rate`, and once the P99 does not fall
with the rate (:func:`flat_tail`); where the simulation finds no passing rate, it starts at the sparse rate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import binom

from surrobench.analysis.serve_load import NothingCompleted, load_point
from surrobench.execution.arrivals import MAX_ARRIVALS_PER_LOAD, constant_arrivals, poisson_arrivals
from surrobench.execution.batcher import MAX_GAP_S, VirtualClock, serve_open_loop
from surrobench.records.serve import Capacity, LoadPoint, SearchStep, ServePolicy, UnloadedLatency, padded_size

#: The peak search stops when its bracket is this narrow, a fraction of the lower end (our own precision
#: goal: a 5% bracket is below the run-to-run spread of a P99 at a few thousand requests).
SEARCH_TOLERANCE = 0.05
#: At most this many rates per search (bounds a search's time at about this many durations).
MAX_SEARCH_STEPS = 12
#: The first bracketing step around a prediction, a factor (the goal: a prediction within 10% of the measured
#: capacity, so the bracket is usually closed in two loads); each further step the same way squares it, up to 2.
PREDICTED_STEP = 1.1
#: The simulation's requests per rate after its warm-up: near saturation its queue grows as in a load of seconds
#: (with 4,000, planted services were over-predicted by 5-10%).
SIMULATED_REQUESTS = 8000
#: The simulated search's resolution, downward step and floor (a fraction of the full-batch bound).
SIMULATED_TOLERANCE = 0.01
SIMULATED_STEP = 1.1
SIMULATED_FLOOR = 1e-2
#: A search going down stops once a rate this many times below a failing one fails with a P99 no lower: a tail that does
#: not fall with the load is not the queue's, and lower rates will not meet the target either (our own threshold: a
#: queue's P99 falls steeply with the load, M/D/1 waiting ~ rho / (1 - rho); docs/benchmarks/h200-capacity.md).
FLAT_TAIL_STEP = 1.5
#: Going up from failing sparse rates, a queue has formed once the P99 exceeds this many times the highest failing
#: P99 (our own threshold, above the 1.46x spread of the eager AFNO's, docs/benchmarks/h200-capacity.md).
QUEUE_P99_STEP = 2.0
#: A load whose batches took this many times the unloaded back-to-back mean of their size is served slower than
#: predicted (our own threshold: near saturation the capacity scales as 1 / service, so a 25% slower service alone
#: moves it 20%, twice the prediction goal).
SLOWER_UNDER_LOAD = 1.25
#: Failing loads above the capacity whose P99 misses the target by less than this factor, over rates at least
#: :data:`FLAT_TAIL_STEP` apart, are a tail sitting just above the target (our own threshold: the H100's tf32 U-Net
#: missed 5 ms by 9-15% from 270 to 2,525 rps asked, passed at 236, docs/benchmarks/h200-capacity.md, 2026-12-07).
NEAR_TARGET = 1.15
#: At the sparse rate a batch-1 service is busy this share of the time: a Poisson arrival finds it busy as often
#: (PASTA), so nine requests in ten are served alone (our own threshold).
SPARSE_UTILISATION = 0.1


def find_capacity(
    measure: Callable[[float], LoadPoint],
    target_p99_ms: float,
    start_rps: float,
    *,
    max_rps: float = float("inf"),
    factor: float = 2.0,
    min_rps: float = 0.0,
) -> tuple[Capacity, list[LoadPoint]]:
    """The highest rate whose P99 stays within ``target_p99_ms`` (MLPerf LoadGen's FindPeakPerformance):

        r = start; f = factor; measure r
        while r passes: lo = r; r = f r; f = min(f², 2)   (or, when start fails: hi = r; r = r / f ... until one passes)
        hi = the first failing r
        while (hi - lo) / lo > SEARCH_TOLERANCE: mid = (lo + hi) / 2; measure; pass -> lo = mid, fail -> hi = mid

    ``measure(rate_rps)`` runs one load with a ``passed`` verdict. No rate above ``max_rps`` is measured (the most
    one load may offer): the start and the widening stop there, and when ``max_rps`` passes the capacity is at least
    it, with no failing rate. ``factor``: 2 doubles from a guess; :data:`PREDICTED_STEP` brackets a prediction. No
    rate below ``min_rps`` (:func:`sparse_rate`) is measured (a start below starts there), and one failing there
    ends the search (sparser loads serve requests alone too); a start there that fails, or a :func:`flat_tail`,
    turns it upward (a busier device may serve faster: the eager AFNO, docs/benchmarks/h200-capacity.md): rates
    doubling above the highest tried, until one passes (then bracketed and bisected as above) or its P99 exceeds
    :data:`QUEUE_P99_STEP` times the highest failing one's (a queue forms: no rate passes). Returns the capacity
    (0 when no rate passed within :data:`MAX_SEARCH_STEPS`) and the load points measured, by rate.
    """
    steps: list[SearchStep] = []
    points: list[LoadPoint] = []

    def passes(rate: float, phase: str) -> bool:
        try:
            point = measure(rate)
        except NothingCompleted:  # every request failed (an endpoint's errors): a failing rate like any other
            steps.append(SearchStep(rate, None, False, phase))
            return False
        points.append(point)
        steps.append(SearchStep(rate, point.p99_ms if point.completed != 0 else None, bool(point.passed), phase))
        return bool(point.passed)

    lo, hi, rate = None, None, min(max(start_rps, min_rps), max_rps)
    up = passes(rate, "bound")
    while len(steps) < MAX_SEARCH_STEPS and (lo is None or hi is None):
        if up:
            if rate >= max_rps:  # passes at the most a load may offer: no failing rate to bracket with
                lo = rate
                break
            lo, rate = rate, min(rate * factor, max_rps)
            if not passes(rate, "bound"):
                hi = rate
        else:
            hi, rate = rate, max(rate / factor, min_rps)
            if hi <= min_rps < max(s.rate_rps for s in steps):  # down to the floor from failing rates above
                break
            if hi > min_rps and passes(rate, "bound"):
                lo = rate
            elif hi <= min_rps or flat_tail(steps):  # a failing floor, or not the queue's tail: look above
                flat_p99, rate = max(s.p99_ms or 0.0 for s in steps), max(s.rate_rps for s in steps)
                while not up and len(steps) < MAX_SEARCH_STEPS and rate < max_rps and steps[-1].p99_ms is not None:
                    rate = min(2.0 * rate, max_rps)
                    up = passes(rate, "bound")
                    if not up and (steps[-1].p99_ms is None or steps[-1].p99_ms > QUEUE_P99_STEP * flat_p99):
                        break
                if not up:
                    hi = min(s.rate_rps for s in steps)
                    break
                lo, hi = rate, None
        factor = min(factor * factor, 2.0)
    while lo is not None and hi is not None and (hi - lo) / lo > SEARCH_TOLERANCE and len(steps) < MAX_SEARCH_STEPS:
        mid = (lo + hi) / 2
        if passes(mid, "bisect"):
            lo = mid
        else:
            hi = mid
    capacity = Capacity(target_p99_ms, lo or 0.0, hi, tuple(steps))
    return capacity, sorted(points, key=lambda p: p.target_rps or 0.0)


def simulated_point(
    unloaded: dict[int, UnloadedLatency],
    policy: ServePolicy,
    rate_rps: float,
    target_p99_ms: float,
    seed: int = 0,
    arrival: str = "poisson",
) -> LoadPoint:
    """One open-loop load of ``rate_rps`` (``arrival`` ``poisson`` or ``constant``) through the batcher with
    ``policy``, simulated over ``unloaded`` (by padded size): a warm-up of a tenth of :data:`SIMULATED_REQUESTS`,
    then those (at most :data:`~surrobench.execution.arrivals.MAX_ARRIVALS_PER_LOAD` in all). Raises
    NothingCompleted: as :func:`~surrobench.analysis.serve_load.load_point`."""
    n = min(1.1 * SIMULATED_REQUESTS, MAX_ARRIVALS_PER_LOAD)
    duration_s, warmup_s = n / rate_rps, 0.1 * SIMULATED_REQUESTS / rate_rps
    sizes, rng, last_end = tuple(sorted(unloaded)), np.random.default_rng(seed), [-np.inf]
    clock = VirtualClock(wake_s=unloaded[sizes[0]].loop_charge_ms / 1e3)  # the loop's step after each wake too
    excess = {k: u.loaded_excess_ms for k, u in unloaded.items()}  # a mean over the samples: once, not per batch

    def service(k: int) -> float:  # a batch's time, drawn from its padded size's samples (module docstring)
        u, idle_s = unloaded[padded_size(k, sizes)], clock.now() - last_end[0]
        busy = idle_s < u.gap_ms / 1e3
        pool = u.back_to_back_ms if busy else u.isolated_ms
        pool = u.idle_ms if u.idle_ms and idle_s >= MAX_GAP_S else pool
        seconds = (pool[int(rng.integers(len(pool)))] + (excess[u.batch] if busy else u.loop_charge_ms)) / 1e3
        clock.advance(seconds)
        last_end[0] = clock.now()
        return seconds

    constant = arrival == "constant"
    arrivals = constant_arrivals(rate_rps, duration_s) if constant else poisson_arrivals(rate_rps, duration_s, seed)
    trace = serve_open_loop(arrivals, service, policy, clock, drain_s=duration_s)
    targets = dict(target_rps=rate_rps, target_p99_ms=target_p99_ms, window_s=duration_s - warmup_s)
    return load_point(trace, arrival=arrival, max_batch=policy.max_batch, warmup_s=warmup_s, **targets)


def predict_capacity(
    unloaded: dict[int, UnloadedLatency],
    policy: ServePolicy,
    target_p99_ms: float,
    seed: int = 0,
    arrival: str = "poisson",
) -> float:
    """The capacity (requests/s) at ``target_p99_ms`` the simulation predicts for ``policy``: rates tried downward
    from the full-batch bound (``max_batch`` / a full batch's back-to-back median) by :data:`SIMULATED_STEP` until
    one passes (halving from a failing one could skip every passing rate), the step above it bisected. 0 when none
    passes down to :data:`SIMULATED_FLOOR` of the bound, or the target is infeasible (:func:`infeasible_reason`)."""
    if infeasible_reason(unloaded, target_p99_ms) is not None:
        return 0.0

    def passes(rate: float) -> bool:
        try:
            return bool(simulated_point(unloaded, policy, rate, target_p99_ms, seed, arrival).passed)
        except NothingCompleted:
            return False

    full = unloaded[max(s for s in unloaded if s <= policy.max_batch)]
    hi, lo = None, policy.max_batch / ((full.back_to_back_p50_ms + full.loaded_excess_ms) / 1e3)
    bound = lo
    while not passes(lo):
        if lo < SIMULATED_FLOOR * bound:
            return 0.0
        hi, lo = lo, lo / SIMULATED_STEP
    while hi is not None and (hi - lo) / lo > SIMULATED_TOLERANCE:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return lo


def infeasible_reason(unloaded: dict[int, UnloadedLatency], target_p99_ms: float) -> str | None:
    """Why no rate meets ``target_p99_ms``: the isolated batch-1 P99 already exceeds it (the lowest rates serve
    every request alone, after an idle device) with 95% confidence: its distribution-free lower bound, the k-th
    smallest of n samples, k the 5% quantile of Binomial(n, 0.99) (Hahn & Meeker, Statistical Intervals, 2nd ed.,
    5.3), is above it (of 10 samples the second largest: one slow sample on a busy host is no verdict); else None."""
    one = unloaded.get(1)
    ordered = sorted(one.isolated_ms) if one is not None else []
    if not ordered or (floor := ordered[max(int(binom.ppf(0.05, len(ordered), 0.99)), 1) - 1]) <= target_p99_ms:
        return None
    return (
        f"no rate meets P99 <= {target_p99_ms:g} ms: an isolated request's P99 is already {one.isolated_p99_ms:.3g} ms "
        f"unloaded, at least {floor:.3g} ms with 95% confidence over {len(ordered)} samples "
        f"(median {one.isolated_p50_ms:.3g} ms; back to back {one.back_to_back_p50_ms:.3g} ms median, "
        f"{one.back_to_back_p99_ms:.3g} ms P99: isolated is {one.isolated_p50_ms / one.back_to_back_p50_ms:.2g}x)"
    )


def flat_tail(steps: list[SearchStep] | tuple[SearchStep, ...]) -> tuple[SearchStep, SearchStep] | None:
    """The last step, failing, and a failing one at least :data:`FLAT_TAIL_STEP` times its rate whose P99 was no
    higher (``(above, last)``), else None."""
    last = steps[-1] if steps else None
    if last is None or last.passed or last.p99_ms is None:
        return None
    above = (s for s in steps[:-1] if not s.passed and s.rate_rps >= FLAT_TAIL_STEP * last.rate_rps)
    return next(((s, last) for s in above if s.p99_ms is not None and s.p99_ms <= last.p99_ms), None)


def sparse_rate(unloaded: dict[int, UnloadedLatency]) -> float:
    """The rate (requests/s) that keeps the smallest batch's isolated median (plus its loop time) busy
    :data:`SPARSE_UTILISATION` of the time."""
    one = unloaded[min(unloaded)]
    return SPARSE_UTILISATION / ((one.isolated_p50_ms + one.loop_charge_ms) / 1e3)


def no_rate_found(target_p99_ms: float, capacity: Capacity, sparse_rps: float = 0.0) -> str | None:
    """Why a search that passed no rate ended: a load at or below ``sparse_rps`` (:func:`sparse_rate`) failed; or
    the tail did not fall with the load (:func:`flat_tail`). None when a rate passed or the search ended otherwise."""
    steps, head = capacity.steps, f"no rate found for P99 <= {target_p99_ms:g} ms: "
    if capacity.capacity_rps or not steps or steps[-1].p99_ms is None:
        return None
    floor, top = next((s for s in steps if s.rate_rps <= sparse_rps), None), max(s.rate_rps for s in steps)
    flat = next((f for i in range(1, len(steps) + 1) if (f := flat_tail(steps[:i]))), None)  # read where no floor
    if floor is None and flat is None:
        return None
    above = f"; the rates above, up to {top:.4g} rps, failed too" if top > (floor or flat[0]).rate_rps else ""
    if floor is not None:
        sparse = f"{floor.rate_rps:.4g} rps, sparse enough that nine requests in ten are served alone"
        return head + f"a load at {sparse}, measured P99 {floor.p99_ms:.3g} ms{above}"
    a, b = flat
    return head + (
        f"lowering the rate {a.rate_rps / b.rate_rps:.2g}x ({a.rate_rps:.4g} -> {b.rate_rps:.4g} rps) did not lower "
        f"the P99 ({a.p99_ms:.3g} -> {b.p99_ms:.3g} ms): the tail at light load is not the queue's{above}"
    )


def slowdown_under_load(point: LoadPoint, unloaded: dict[int, UnloadedLatency]) -> tuple[float, int] | None:
    """``(ratio, size)``: a load's mean service a request (``compute_share`` x ``mean_ms``) over the unloaded
    back-to-back mean of the batch size nearest its mean padded batch, when above :data:`SLOWER_UNDER_LOAD`; None
    below it, or where the service was not timed (an endpoint) or nothing completed."""
    if not unloaded or point.compute_share is None or not point.mean_ms or not point.mean_padded_batch:
        return None
    size = min(unloaded, key=lambda k: abs(k - point.mean_padded_batch))
    ratio = point.compute_share * point.mean_ms / float(np.mean(unloaded[size].back_to_back_ms))
    return (ratio, size) if ratio > SLOWER_UNDER_LOAD else None
