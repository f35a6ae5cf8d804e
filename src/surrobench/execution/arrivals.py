"""Open-loop arrival schedules for ``surrobench serve`` (s from the start): the schedule does not wait for the
server, so a slow server's queue grows (MLPerf Inference LoadGen, Server scenario: Poisson arrivals).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from surrobench.errors import UsageError

#: The most arrivals one offered load may hold (rate x offered duration): each costs the load generator memory
#: and time of its own, a million about 300 MB and seconds (docs/benchmarks/h200-serve.md, "The load generator's
#: own cost per arrival"), where a P99 needs 368 (:data:`surrobench.analysis.serve_load.P99_BOUNDING_REQUESTS`).
MAX_ARRIVALS_PER_LOAD = 1_000_000


def check_load(rate_rps: float, duration_s: float, advice: str = "lower the rate or {duration_s}") -> None:
    """Raise UsageError (naming ``rates``) for a load of more than :data:`MAX_ARRIVALS_PER_LOAD` expected arrivals,
    ``advice`` ending the line."""
    expected = rate_rps * duration_s
    if expected > MAX_ARRIVALS_PER_LOAD:
        detail = (
            f"{rate_rps:g}: {expected:.3g} arrivals in {duration_s:g} s, more than the "
            f"{MAX_ARRIVALS_PER_LOAD:,} one load may hold (the load generator's memory and time): {advice}"
        )
        raise UsageError.bad("rates", detail, others=("duration_s",))


def _check(rate_rps: float, duration_s: float) -> None:
    if not (rate_rps > 0 and np.isfinite(rate_rps)):
        raise UsageError.bad("rates", f"{rate_rps}: a request rate must be a finite number > 0 (requests per second)")
    if not (duration_s > 0 and np.isfinite(duration_s)):
        raise UsageError.bad("duration_s", f"{duration_s}: must be a finite number > 0")
    check_load(rate_rps, duration_s)


def poisson_arrivals(rate_rps: float, duration_s: float, seed: int) -> np.ndarray:
    """Arrival times (s, ascending, in ``[0, duration_s)``) of a Poisson process of rate ``rate_rps``, as LoadGen's
    Server scenario draws them: PCG64 seeded with ``seed`` and the rate's bits, so each rate draws its own stream
    (the points of a search err independently, as the offered-rate check assumes) and a seed and rate the same.

    Raises:
        UsageError: a rate or duration not finite and positive, or too many arrivals (:func:`check_load`).
    """
    _check(rate_rps, duration_s)
    rng = np.random.default_rng([seed, int(np.float64(rate_rps).view(np.uint64))])
    # draw a few standard deviations more than expected, then keep those inside the duration
    expected = rate_rps * duration_s
    n = int(expected + 6 * np.sqrt(expected) + 16)
    times = np.cumsum(rng.exponential(1.0 / rate_rps, size=n))
    while times[-1] < duration_s:  # rare: extend the same stream
        times = np.concatenate([times, times[-1] + np.cumsum(rng.exponential(1.0 / rate_rps, size=n))])
    return times[times < duration_s]


def constant_arrivals(rate_rps: float, duration_s: float) -> np.ndarray:
    """Arrivals every ``1 / rate_rps`` s from 0; raises UsageError as :func:`poisson_arrivals`."""
    _check(rate_rps, duration_s)
    return np.arange(0.0, duration_s, 1.0 / rate_rps)


def replay_arrivals(path: str | Path) -> np.ndarray:
    """Arrival times from a text file, one timestamp (s) per line or a CSV's first column (header, blank and
    ``#`` lines skipped), shifted to start at 0.

    Raises:
        UsageError: unreadable, no timestamp, a value not a finite number, timestamps going back, or more than
            :data:`MAX_ARRIVALS_PER_LOAD`.
    """
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError.bad("arrivals_file", f"{str(path)!r}: cannot read ({exc})") from None
    values = []
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].split(",", 1)[0].strip()
        if not text:
            continue
        try:
            values.append(float(text))
        except ValueError:
            if values or number > 1:  # only a first line may be a header
                detail = f"{str(path)!r} line {number}: {text[:40]!r} is not a number"
                raise UsageError.bad("arrivals_file", detail) from None
    times = np.asarray(values, dtype=float)
    if times.size == 0:
        raise UsageError.bad("arrivals_file", f"{str(path)!r}: no timestamps (one time in seconds per line)")
    if not np.isfinite(times).all() or (np.diff(times) < 0).any():
        raise UsageError.bad("arrivals_file", f"{str(path)!r}: timestamps must be finite and in increasing order")
    if times.size > MAX_ARRIVALS_PER_LOAD:
        raise UsageError.bad(
            "arrivals_file", f"{str(path)!r}: {times.size:,} timestamps, over the {MAX_ARRIVALS_PER_LOAD:,} of a load"
        )
    return times - times[0]
