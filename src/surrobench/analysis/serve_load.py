"""One offered load summarized as a :class:`~surrobench.records.serve.LoadPoint`, and the pass rule."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from surrobench.errors import UsageError
from surrobench.execution.batcher import ServeTrace
from surrobench.records.serve import PERCENTILES, LoadPoint, Percentile, padded_size, padded_sizes, rate_text

#: Confidence of the percentile intervals.
CONFIDENCE = 0.95
#: The batcher loop's share of the run above which the generator may limit the rate (ours; as MLPerf LoadGen).
GENERATOR_OVERHEAD_WARN = 0.05
#: Confidence of the offered-rate interval: wide, so an honest Poisson load trips the note once in 1,000 points,
#: not once in 20 (the load points of one search are many).
OFFERED_CONFIDENCE = 0.999


def quantile_ci(sorted_ms: np.ndarray, q: float) -> tuple[float | None, float | None]:
    """Distribution-free :data:`CONFIDENCE` interval ``[x_(r), x_(s)]`` for the ``q`` quantile of ``sorted_ms``
    ``(n,)`` ascending, from Binomial(n, q) quantiles (Conover 1999, §3.2; Hahn & Meeker 1991, §5.2); a side None
    when n is too small (a P99's upper bound needs n >= 368)."""
    n = sorted_ms.size
    alpha = 1.0 - CONFIDENCE
    r = int(stats.binom.ppf(alpha / 2, n, q))
    s = int(stats.binom.ppf(1 - alpha / 2, n, q)) + 1
    lo = float(sorted_ms[r - 1]) if r >= 1 else None
    hi = float(sorted_ms[s - 1]) if s <= n else None
    return lo, hi


def bounding_requests(q: float) -> int:
    """Fewest requests for an upper bound on quantile ``q``: least n with ``q**n < (1 - CONFIDENCE) / 2``."""
    return math.floor(math.log((1 - CONFIDENCE) / 2) / math.log(q)) + 1


#: Requests behind a P99 before its interval has an upper bound (:func:`bounding_requests`).
P99_BOUNDING_REQUESTS = bounding_requests(0.99)


def poisson_rate_interval(rate_rps: float, window_s: float) -> tuple[float, float]:
    """The rates (requests/s) a Poisson process of ``rate_rps`` offers over ``window_s`` seconds: the central
    :data:`OFFERED_CONFIDENCE` interval of a Poisson(rate x window) count (``scipy.stats.poisson.interval``)."""
    lo, hi = stats.poisson.interval(OFFERED_CONFIDENCE, rate_rps * window_s)
    return float(lo) / window_s, float(hi) / window_s


def _percentile(sorted_ms: np.ndarray, q: float, dropped: int = 0, waited_ms: float = 0.0) -> Percentile:
    """The ``q`` quantile of ``sorted_ms`` (completed requests' latencies, ascending) and ``dropped`` requests
    that never completed, counted as slower than any: where the quantile falls among them it is the slowest
    completed latency (``waited_ms``, the least any dropped request waited, when none completed), marked a lower
    bound, and its interval's upper side None."""
    slowest = float(sorted_ms[-1]) if sorted_ms.size else waited_ms
    every = np.concatenate([sorted_ms, np.full(dropped, _NEVER)])
    value = float(np.quantile(every, q))
    tail = int(every.size - np.searchsorted(every, value, side="right"))
    lo, hi = quantile_ci(every, q)
    hi = None if hi is None or hi > slowest else hi
    if value <= slowest:
        return Percentile(q, value, (lo, hi), tail)
    return Percentile(q, slowest, (None if lo is None else min(lo, slowest), None), tail, lower_bound=True)


#: A dropped request's latency in :func:`_percentile`: finite (numpy interpolates 0 * inf to NaN), above any.
_NEVER = 1e300


#: A load passes only while its latency grows by at most this many seconds per second of arrivals
#: (``LoadPoint.backlog_growth``): a queue whose service falls this share short of the offered rate grows at it, so
#: a P99 under the target in a short load would not hold in a longer one. Our own threshold: a sustained queue's
#: slope over a load of seconds is its latency spread over the window, ms over s (about 0.003 for 5 ms over 1.5 s);
#: without it an overloaded CPU service passed its P99 target (docs/benchmarks/capacity-trials.md).
MAX_BACKLOG_GROWTH = 0.05


class NothingCompleted(UsageError):
    """No request arrived after the warm-up, or every measured one failed (an endpoint's errors)."""


def load_point(
    trace: ServeTrace,
    *,
    arrival: str,
    max_batch: int,
    warmup_s: float,
    target_rps: float | None = None,
    concurrency: int | None = None,
    target_p99_ms: float | None = None,
    window_s: float | None = None,
) -> LoadPoint:
    """Summarize ``trace`` after ``warmup_s``; ``window_s``: the arrival schedule's length after the warm-up, s
    (None: unknown, the measured arrivals' span stands for it). A load far past capacity, whose measured requests
    were all dropped, is a failing point: achieved 0 rps, every percentile a lower bound (the least any dropped
    request waited), ``max_ms``, ``mean_ms`` and the shares None.

    Raises:
        NothingCompleted: no request arrived after the warm-up, or none completed and some failed (named).
    """
    measured = trace.arrival_s >= warmup_s
    arrivals = trace.arrival_s[measured]
    completion = trace.completion_s[measured]
    done = ~np.isnan(completion)
    if not arrivals.size:
        detail = f"no request arrived after the {warmup_s:g} s warm-up: shorten {{warmup_s}} or lengthen {{duration_s}}"
        raise NothingCompleted.naming(detail, ("warmup_s", "duration_s"))
    if not done.any() and trace.errors:  # an endpoint that refused or failed every request: name why
        failed = ", ".join(f"{n} x {name}" for name, n in sorted(trace.errors.items(), key=lambda e: -e[1]))
        raise NothingCompleted(f"no request completed: {failed}")
    latency_s = completion[done] - arrivals[done]
    wait_s = trace.start_s[measured][done] - arrivals[done]
    sorted_ms = np.sort(latency_s * 1e3)
    waited_ms = max(0.0, (trace.elapsed_s - arrivals[~done].max()) * 1e3) if not done.all() else 0.0
    first, last = arrivals[0], completion[done].max() if done.any() else trace.elapsed_s
    # achieved over the offered window (from the warm-up's end), or on to the last completion after it
    span = max(max(last, warmup_s + window_s) - warmup_s if window_s else last - first, 1e-12)
    offered_s = window_s or (max(arrivals[-1] - first, 1e-12) if arrivals.size > 1 else 0.0)  # the arrival span
    sizes = padded_sizes(max_batch)
    batches = [i for i, start in enumerate(trace.batch_start_s) if start >= first]
    batch = np.asarray([trace.batch_size[i] for i in batches] or [0], dtype=float)
    compute = sum(trace.batch_compute_s[i] for i in batches)
    lost = int((~done).sum())
    p99 = float(np.quantile(np.concatenate([sorted_ms, np.full(lost, _NEVER)]), 0.99))
    spread = done.sum() >= 2 and np.ptp(arrivals[done]) > 0
    growth = float(np.polyfit(arrivals[done], latency_s, 1)[0]) if spread else None
    sustained = growth is None or growth <= MAX_BACKLOG_GROWTH
    any_dropped = bool(np.isnan(trace.completion_s).any())  # a warm-up request dropped fails the point too
    seen = trace.server_seen
    queue = float(wait_s.mean() / latency_s.mean()) if seen and done.any() else None
    padded = (float(np.mean([padded_size(int(k), sizes) for k in batch])) if batches else 0.0) if seen else None
    return LoadPoint(
        arrival=arrival,
        target_rps=target_rps,
        concurrency=concurrency,
        offered_rps=float(arrivals.size / offered_s) if offered_s else 0.0,
        achieved_rps=float(done.sum() / span),
        requests=int(arrivals.size),
        warmup_requests=int((~measured).sum()),
        dropped=lost,
        late=None if target_p99_ms is None else int((sorted_ms > target_p99_ms).sum()) + lost,
        completed=int(done.sum()),
        slo_attainment=None if target_p99_ms is None else float((sorted_ms <= target_p99_ms).sum() / arrivals.size),
        errors=dict(trace.errors),
        percentiles=tuple(_percentile(sorted_ms, q, lost, waited_ms) for q in PERCENTILES),
        max_ms=float(sorted_ms[-1]) if sorted_ms.size else None,
        mean_ms=float(sorted_ms.mean()) if sorted_ms.size else None,
        queue_share=queue,
        compute_share=None if queue is None else 1.0 - queue,
        mean_batch=float(batch.mean()) if seen else None,
        mean_padded_batch=padded,
        device_busy=float(min(1.0, compute / span)) if seen else None,
        generator_overhead_share=float(trace.loop_s / trace.elapsed_s) if trace.elapsed_s > 0 else 0.0,
        wake_late_p99_ms=float(np.quantile(trace.wake_late_s, 0.99) * 1e3) if trace.wake_late_s else 0.0,
        passed=False if any_dropped else None if target_p99_ms is None else bool(p99 <= target_p99_ms and sustained),
        offered_interval_rps=poisson_rate_interval(target_rps, window_s) if target_rps and window_s else None,
        backlog_growth=growth,
    )


def load_warnings(point: LoadPoint) -> list[str]:
    """What makes a load point less than trustworthy: an offered rate outside the Poisson interval of the one
    asked for (:attr:`~surrobench.records.serve.LoadPoint.offered_interval_rps`; without it, under half), a P99
    with no upper bound (too few requests behind it), a load generator that took more than
    :data:`GENERATOR_OVERHEAD_WARN` of the run, dropped requests."""
    rate = point.load()
    notes = []
    interval = point.offered_interval_rps
    if interval is not None and not interval[0] <= point.offered_rps <= interval[1]:
        notes.append(
            f"{rate}: offered {rate_text(point.offered_rps)}, outside the {OFFERED_CONFIDENCE:.1%} Poisson interval of the "
            f"rate asked for ({rate_text(interval[0])} to {rate_text(interval[1])} over this duration)"
        )
    elif interval is None and point.target_rps and point.offered_rps < point.target_rps / 2:
        notes.append(f"{rate}: offered only {rate_text(point.offered_rps)}, under half the rate asked for")
    if point.percentile(0.99).ci95_ms[1] is None and not point.percentile(0.99).lower_bound:
        completed = point.requests - point.dropped if point.completed is None else point.completed
        notes.append(
            f"{rate}: {completed} requests completed, too few to bound the P99 "
            f"(>= {P99_BOUNDING_REQUESTS} needed): lengthen the duration"
        )
    if point.errors:
        failed = ", ".join(f"{n} x {name}" for name, n in sorted(point.errors.items(), key=lambda e: -e[1]))
        notes.append(f"{rate}: requests failed: {failed}")
    if point.generator_overhead_share > GENERATOR_OVERHEAD_WARN:
        notes.append(
            f"{rate}: the load generator took {point.generator_overhead_share:.0%} of the run; it may be the bottleneck"
        )
    if point.dropped:
        notes.append(
            f"{rate}: {point.dropped} requests dropped (still waiting when the drain time ran out); the point "
            f"fails{', its P99 is unbounded' if point.percentile(0.99).lower_bound else ''}"
        )
    return notes
