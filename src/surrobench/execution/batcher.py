"""A dynamic batcher over an injected ``service(k)`` (serves k requests, returns its compute time, s), open or
closed loop, on a wall or virtual clock: the waiting requests (up to ``max_batch``, oldest first) dispatched once
``max_batch`` wait or the oldest has waited ``max_wait_ms`` (Triton's dynamic batcher); latency = completion
(``service`` returned) - arrival.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from surrobench.execution.arrivals import MAX_ARRIVALS_PER_LOAD, poisson_arrivals
from surrobench.records.serve import ServePolicy, UnloadedLatency

#: ``service(k) -> compute_s``: serve a batch of ``k`` requests and return its compute time in seconds.
Service = Callable[[int], float]

#: A wall-clock sleep ends this early and the rest is spun, since ``time.sleep`` overshoots by up to about a
#: millisecond on Linux (timer slack, scheduler wake-up latency).
_SPIN_S = 1e-3


class WallClock:
    """``time.perf_counter`` seconds; :meth:`sleep_until` sleeps, then spins the last millisecond."""

    def now(self) -> float:
        return time.perf_counter()

    def sleep_until(self, t: float) -> None:
        left = t - time.perf_counter()
        if left > _SPIN_S:
            time.sleep(left - _SPIN_S)
        while time.perf_counter() < t:
            pass


class VirtualClock:
    """A clock that moves only when told: :meth:`sleep_until` jumps to ``t`` and on by ``wake_s`` (a loop's own step
    after each wait, s), :meth:`advance` adds time (a planted service time)."""

    def __init__(self, start: float = 0.0, wake_s: float = 0.0) -> None:
        self.t, self.wake_s = start, wake_s

    def now(self) -> float:
        return self.t

    def sleep_until(self, t: float) -> None:
        self.t = max(self.t, t) + self.wake_s

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class ServeTrace:
    """What one load did, s from the schedule's start: ``completion_s`` NaN for a dropped request; ``wake_late_s``,
    each idle wake's lateness; ``server_seen`` False for an HTTP endpoint (``start_s`` the send time)."""

    arrival_s: np.ndarray
    start_s: np.ndarray
    completion_s: np.ndarray
    batch_size: list[int] = field(default_factory=list)
    batch_start_s: list[float] = field(default_factory=list)
    batch_end_s: list[float] = field(default_factory=list)
    batch_compute_s: list[float] = field(default_factory=list)
    wake_late_s: list[float] = field(default_factory=list)
    loop_s: float = 0.0
    elapsed_s: float = 0.0
    server_seen: bool = True
    errors: dict[str, int] = field(default_factory=dict)


class _Loop:
    """The batcher's state over one load: the arrivals known so far (they may grow in closed loop)."""

    def __init__(self, service: Service, policy: ServePolicy, clock) -> None:
        self.service, self.policy, self.clock = service, policy, clock
        self.arrivals: list[float] = []
        self.start: list[float] = []
        self.completion: list[float] = []
        self.trace = ServeTrace(np.empty(0), np.empty(0), np.empty(0))
        self.origin = clock.now()
        self.busy_s = 0.0  # serving or sleeping: not the loop's own time
        self.woke = 0.0  # the last event slept until: now is never before it (origin + t may round below it)

    def now(self) -> float:
        return max(self.clock.now() - self.origin, self.woke)

    def sleep_until(self, t: float) -> None:
        before = self.clock.now()
        self.woke = t
        self.clock.sleep_until(self.origin + t)
        self.busy_s += self.clock.now() - before
        self.trace.wake_late_s.append(max(0.0, self.now() - t))

    def step(self, i: int) -> int:
        """Serve or wait once, ``i`` the first request not yet dispatched; the new ``i``."""
        if self.arrivals[i] > self.now():  # nothing waits: idle until the next arrival
            self.sleep_until(self.arrivals[i])
            return i
        now = self.now()
        waiting = bisect.bisect_right(self.arrivals, now) - i
        k = min(waiting, self.policy.max_batch)
        deadline = self.arrivals[i] + self.policy.max_wait_ms / 1e3
        if k < self.policy.max_batch and now < deadline:  # a batcher waits for more until the deadline
            later = self.arrivals[i + waiting] if i + waiting < len(self.arrivals) else deadline
            self.sleep_until(min(deadline, later))
            return i
        began = self.clock.now()
        compute_s = self.service(k)
        end = self.clock.now()
        self.busy_s += end - began
        t = self.trace
        t.batch_size.append(k)
        t.batch_start_s.append(began - self.origin)
        t.batch_end_s.append(end - self.origin)
        t.batch_compute_s.append(compute_s)
        self.start.extend([began - self.origin] * k)
        self.completion.extend([end - self.origin] * k)
        return i + k

    def finish(self) -> ServeTrace:
        t = self.trace
        t.elapsed_s = self.now()  # the load's, not the trace's assembly below
        t.arrival_s = np.asarray(self.arrivals, dtype=float)
        pad = [np.nan] * (len(self.arrivals) - len(self.completion))
        t.start_s = np.asarray(self.start + pad, dtype=float)
        t.completion_s = np.asarray(self.completion + pad, dtype=float)
        t.loop_s = max(0.0, t.elapsed_s - self.busy_s)
        return t


def serve_open_loop(
    arrivals_s: np.ndarray, service: Service, policy: ServePolicy, clock=None, drain_s: float = 10.0
) -> ServeTrace:
    """Serve the requests arriving at ``arrivals_s`` (s from now, ascending) with ``policy``; those still waiting
    ``drain_s`` after the last arrival are dropped (completion NaN). ``clock``: a :class:`WallClock` when None."""
    loop = _Loop(service, policy, clock or WallClock())
    loop.arrivals = [float(a) for a in arrivals_s]
    end_by = (loop.arrivals[-1] if loop.arrivals else 0.0) + drain_s
    i = 0
    while i < len(loop.arrivals) and loop.now() <= end_by:
        i = loop.step(i)
    return loop.finish()


def serve_closed_loop(
    concurrency: int,
    duration_s: float,
    service: Service,
    policy: ServePolicy,
    clock=None,
    *,
    min_requests: int = 0,
    warmup_s: float = 0.0,
    max_duration_s: float | None = None,
    max_requests: int | None = None,
) -> ServeTrace:
    """Keep ``concurrency`` requests outstanding (Triton perf_analyzer's concurrency mode) for ``duration_s``, or
    up to ``max_duration_s`` until ``min_requests`` were sent at or after ``warmup_s``; at most ``max_requests``
    in all (None: no limit); times in s."""
    loop = _Loop(service, policy, clock or WallClock())
    loop.arrivals = [0.0] * concurrency
    last_s = duration_s if max_duration_s is None else max(duration_s, max_duration_s)
    measured = concurrency if warmup_s <= 0 else 0
    i = 0
    while i < len(loop.arrivals):
        before = len(loop.completion)
        i = loop.step(i)
        done = len(loop.completion) - before
        t = loop.completion[-1] if done else 0.0
        if done and (t < duration_s or (measured < min_requests and t < last_s)):
            if max_requests is not None:
                done = max(0, min(done, max_requests - len(loop.arrivals)))
            loop.arrivals.extend([t] * done)
            measured += done if t >= warmup_s else 0
    return loop.finish()


#: Back-to-back and isolated samples per padded batch size, at most (a P99 of 200 isolated samples is their
#: second-slowest; the budget below cuts them for slow models, down to :data:`MIN_UNLOADED_SAMPLES`).
BACK_TO_BACK_SAMPLES = 100
ISOLATED_SAMPLES = 200
MIN_UNLOADED_SAMPLES = 10
#: The saturated probe's batches kept beside the back-to-back samples, at most (every n-th); its time per size, s (a
#: quarter warm-up, then ~300 batches of 1 ms), and its rate over the back-to-back bound (full if up to 2x slower).
SUSTAINED_SAMPLES = 3 * BACK_TO_BACK_SAMPLES
SATURATED_S = 0.4
OVER_OFFER = 2.0
#: Batches after the longest idle probed, at least (their P99 is then their max; a short budget gets these).
MIN_IDLE_SAMPLES = 3
#: The idle threshold's probes (:func:`idle_threshold`): gaps doubling from :data:`MIN_GAP_S` to :data:`MAX_GAP_S`
#: (the trial's slow isolated requests came 40 ms apart), :data:`PROBES` batches per gap, :data:`REFINE` halvings.
MIN_GAP_S = 2.5e-4
MAX_GAP_S = 0.05
PROBES = 3
REFINE = 3
#: The unloaded measurement's time, s, over every padded size (a slow 3-D model gets fewer samples, not more time).
UNLOADED_BUDGET_S = 6.0
#: Rounds of :func:`interleaved`: a block of every size each (at least one sample each of the fewest, 10).
ROUNDS = 10


def idle_threshold(timed_after: Callable[[float], float], back_s: list[float], probes: int = PROBES) -> float:
    """The shortest idle gap (s) after which a batch runs slower than back to back: the median of ``probes``
    batches ``timed_after(gap)`` above the P90 of ``back_s`` at that gap and the next on the doubling ladder,
    refined below it; :data:`MAX_GAP_S` when none is slow."""
    limit = sorted(back_s)[min(len(back_s) - 1, int(0.9 * len(back_s)))]

    def slow(gap: float) -> bool:
        return sorted(timed_after(gap) for _ in range(probes))[probes // 2] > limit

    ladder = [MIN_GAP_S * 2**j for j in range(8)] + [MAX_GAP_S]  # 0.25 .. 32 ms, 50 ms
    for j, gap in enumerate(ladder):
        if slow(gap) and (j + 1 == len(ladder) or slow(ladder[j + 1])):
            lo, hi = (ladder[j - 1] if j else 0.0), gap
            for _ in range(REFINE if j else 0):
                mid = (lo * hi) ** 0.5
                lo, hi = (lo, mid) if slow(mid) else (mid, hi)
            return hi
    return MAX_GAP_S


def saturated_cycles(
    service: Service, unloaded: dict[int, UnloadedLatency], clock=None, budget_s: float = UNLOADED_BUDGET_S
) -> dict[int, UnloadedLatency]:
    """``unloaded`` with each size's cycle saturated: :func:`serve_open_loop` on ``clock`` (None: a :class:`WallClock`)
    under Poisson arrivals at :data:`OVER_OFFER` times the back-to-back median's rate, for :data:`SATURATED_S` (or
    :data:`MIN_UNLOADED_SAMPLES` batches after its first quarter, a warm-up), the sizes in order until one would pass
    ``budget_s`` (s; it and the rest left as they were): after it, of its full batches only (an arrival rate capped
    at :data:`MAX_ARRIVALS_PER_LOAD` may fill none: None), ``saturated_ms`` (wall time from one's start to the next
    batch's), ``loop_ms`` (the loop's own per batch) and :data:`SUSTAINED_SAMPLES` among the back-to-back samples."""
    clock = clock or WallClock()
    out = dict(unloaded)
    for k, u in unloaded.items():
        duration_s = max(SATURATED_S, 4 / 3 * MIN_UNLOADED_SAMPLES * u.back_to_back_p50_ms / 1e3)
        rate = min(OVER_OFFER * k * 1e3 / max(u.back_to_back_p50_ms, 1e-6), MAX_ARRIVALS_PER_LOAD / duration_s)
        if (budget_s := budget_s - duration_s) < 0:  # this and the rest unprobed: loop_ms None, nothing charged
            break
        trace = serve_open_loop(poisson_arrivals(rate, duration_s, k), service, ServePolicy(k, 0.0), clock, 0.0)
        first = min(bisect.bisect_left(trace.batch_start_s, duration_s / 4), len(trace.batch_size) - 1)
        full = np.equal(trace.batch_size[first:], k)  # the batches after the warm-up that held k
        served = np.subtract(trace.batch_end_s, trace.batch_start_s)[first:][full]
        kept = tuple(1e3 * served[:: max(1, len(served) // SUSTAINED_SAMPLES)])
        cycles = np.diff([*trace.batch_start_s[first:], trace.batch_end_s[-1]])[full]
        cycle_ms = 1e3 * float(np.mean(cycles)) if full.any() else None
        loop_ms = 1e3 * trace.loop_s / len(trace.batch_size)
        out[k] = replace(u, back_to_back_ms=u.back_to_back_ms + kept, loop_ms=loop_ms, saturated_ms=cycle_ms)
    return out


def interleaved(counts: dict[int, int], block: Callable[[int, int], list], rng: np.random.Generator) -> dict[int, list]:
    """The items of ``block(k, m)`` per size, ``counts[k]`` split evenly (``m`` > 0) over :data:`ROUNDS` rounds, the
    sizes shuffled (``rng``) each round: spread over the whole window, no size charged a warm-up or drift alone."""
    out: dict[int, list] = {k: [] for k in counts}
    for r in range(ROUNDS):
        for k in rng.permutation(list(counts)).tolist():
            if m := (r + 1) * counts[k] // ROUNDS - r * counts[k] // ROUNDS:
                out[k] += block(k, m)
    return out


def unloaded_latency(
    service: Service, sizes: tuple[int, ...], budget_s: float = UNLOADED_BUDGET_S, clock=None
) -> dict[int, UnloadedLatency]:
    """The unloaded latency of ``service`` per batch size of ``sizes``, within ``budget_s`` on ``clock`` (a
    :class:`WallClock` when None): the idle threshold (:func:`idle_threshold`), back-to-back and isolated batches, and
    up to :data:`MIN_UNLOADED_SAMPLES` batches (at least :data:`MIN_IDLE_SAMPLES`) after :data:`MAX_GAP_S` (why:
    docs/design.md, "Capacity"; :func:`saturated_cycles` follows where a prediction needs it). After one warm-up
    batch of every size, each kind is :func:`interleaved` over the sizes (seeded), back to back first (an idle gap
    may clock the device down), the threshold probed per size between. At most :data:`BACK_TO_BACK_SAMPLES` /
    :data:`ISOLATED_SAMPLES`, fewer where ``budget_s`` (split evenly over sizes and kinds) would be exceeded, never
    under :data:`MIN_UNLOADED_SAMPLES`; the probes on top."""
    clock = clock or WallClock()
    rng = np.random.default_rng(0)

    def timed(k: int) -> float:
        began = clock.now()
        service(k)
        return clock.now() - began

    def timed_after(k: int, gap_s: float) -> float:
        clock.sleep_until(clock.now() + gap_s)
        return timed(k)

    def count(limit: int, least: int, per_s: float) -> int:  # samples within the share, at least ``least``
        return int(min(limit, max(least, share_s / per_s)))

    def spaced(limit: int, least: int, gaps: dict[int, float]) -> dict[int, list[float]]:
        counts = {k: count(limit, least, g + median[k]) for k, g in gaps.items()}
        return interleaved(counts, lambda k, m: [timed_after(k, gaps[k]) for _ in range(m)], rng)

    share_s = budget_s / max(1, 2 * len(sizes))
    first = {k: max(timed(k), 1e-9) for k in sizes}  # the warm-up pass, which sets the counts
    counts = {k: count(BACK_TO_BACK_SAMPLES, MIN_UNLOADED_SAMPLES, first[k]) for k in sizes}
    back = interleaved(counts, lambda k, m: [timed(k) for _ in range(m)], rng)
    median = {k: max(float(np.median(back[k])), 1e-9) for k in sizes}
    probes = {k: PROBES if share_s >= 12 * PROBES * median[k] else 1 for k in sizes}
    gap = {k: idle_threshold(lambda g, k=k: timed_after(k, g), back[k], probes[k]) for k in sizes}
    isolated = spaced(ISOLATED_SAMPLES, MIN_UNLOADED_SAMPLES, gap)
    idle = spaced(MIN_UNLOADED_SAMPLES, MIN_IDLE_SAMPLES, {k: MAX_GAP_S for k in sizes if gap[k] < MAX_GAP_S})

    def ms(seconds) -> tuple[float, ...]:
        return tuple(1e3 * t for t in seconds)

    return {
        k: UnloadedLatency(k, gap[k] * 1e3, ms(isolated[k]), ms(back[k]), idle_ms=ms(idle.get(k, []))) for k in sizes
    }
