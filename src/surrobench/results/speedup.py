"""The speedup of a candidate over a reference measured in interleaved rounds, its CI and the noise floor.

**Rule.** ``speedup = median(reference) / median(candidate)`` of the host latencies (> 1 is faster), with
the two-stage percentile-bootstrap 95% interval over rounds of :func:`surrobench.records.stats.bootstrap_ratio_ci`
(rounds drawn first, then samples within them, so between-round drift widens the interval). The **noise
floor** is an A/A comparison of the reference with itself: its even rounds against its odd rounds, same
statistic; the floor is how far that ratio lies from 1 (``|median(odd) / median(even) - 1|``): the drift
the same code shows against itself within the measurement. A candidate counts as faster only when the lower end of its interval clears ``1 + noise floor``: the
minimum-effect form of a test (Lakens, Scheel & Isager 2018, Adv. Methods Pract. Psychol. Sci. 1(2)) with
the smallest effect of interest set by what the same code shows against itself on this host right now
(Kalibera & Jones 2013, "Rigorous benchmarking in reasonable time", ISMM, on run-to-run variation).

**Windows.** A pair timed together in several windows (the same rounds, minutes apart) is given with
``windows``: the interval then comes from the three-stage bootstrap of
:func:`surrobench.records.stats.windowed_ratio_ci` (windows drawn first, the same for both sides), because one
window's interval covers the drift between its rounds, not between windows: on the H200 the same recipe's
speedup moved by 6-13% between windows seconds apart, as much as between fresh processes
(docs/benchmarks/h200-optimize.md, "Windows and processes").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surrobench.records.stats import bootstrap_ratio_ci, windowed_ratio_ci


@dataclass(frozen=True)
class Speedup:
    """``median`` (reference / candidate median latency), its 95% CI ``ci95`` and the reference's A/A
    ``noise_floor`` (a fraction: 0.02 means the same code moved by up to 2% against itself)."""

    median: float
    ci95: tuple[float, float]
    noise_floor: float

    @property
    def faster(self) -> bool:
        """The interval's lower end clears ``1 + noise_floor`` (module docstring)."""
        return self.ci95[0] > 1.0 + self.noise_floor

    def reason(self, over: str) -> str:
        """The verdict in words against ``over`` (what it is a speedup over): faster (and by what floor),
        slower, or not faster beyond the noise (and the lower bound it needed)."""
        text = f"{self.median:.2f}x [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}] over {over}"
        if self.faster:
            return f"{text}, clears 1 + noise floor {self.noise_floor:.1%}"
        if self.ci95[1] < 1.0:
            return f"slower: {text}"
        return f"not faster beyond the noise: {text}, lower bound needs > {1 + self.noise_floor:.3f}"

    def to_json(self) -> dict:
        """``{"median", "ci95": [lo, hi], "noise_floor"}``."""
        return {"median": self.median, "ci95": list(self.ci95), "noise_floor": self.noise_floor}


def _flat(rounds: list[list[float]]) -> tuple[np.ndarray, int]:
    sizes = {len(r) for r in rounds}
    if not rounds or len(sizes) != 1 or 0 in sizes:
        raise ValueError("rounds must be non-empty and of equal length")
    return np.asarray(rounds, dtype=np.float64).ravel(), len(rounds)


def noise_floor(ref_rounds: list[list[float]]) -> float:
    """The A/A noise floor of the reference's rounds, a fraction >= 0 (module docstring). One round is
    split into its even and odd iterations instead (no between-round drift is seen then).

    Raises:
        ValueError: no samples, or rounds of unequal length.
    """
    x, rounds = _flat(ref_rounds)
    if rounds >= 2:
        blocks = x.reshape(rounds, -1)
        a, b = blocks[0::2], blocks[1::2]
    else:
        a, b = x[0::2], x[1::2]
    if a.size == 0 or b.size == 0:
        return 0.0
    return abs(float(np.median(b) / np.median(a)) - 1.0)


def speedup(ref_rounds: list[list[float]], cand_rounds: list[list[float]], *, windows: int = 1) -> Speedup:
    """The :class:`Speedup` of the candidate over the reference, both given as latency rounds (ms,
    ``rounds x iters``, interleaved with each other); with ``windows`` > 1 the rounds of each side are that
    many consecutive windows of equally many rounds, window w of one timed with window w of the other
    (module docstring, "Windows").

    Raises:
        ValueError: empty or ragged rounds, a reference median that is not positive, or rounds that do not
            split into ``windows`` equal windows alike on both sides.
    """
    ref, r_rounds = _flat(ref_rounds)
    cand, c_rounds = _flat(cand_rounds)
    ratio = float(np.median(ref) / np.median(cand))
    # the ratio CIs give statistic(new) / statistic(base): new = reference, base = candidate
    if windows > 1:
        ci = windowed_ratio_ci(_windowed(cand, c_rounds, windows), _windowed(ref, r_rounds, windows), np.median)
    else:
        ci = bootstrap_ratio_ci(cand, ref, np.median, base_rounds=c_rounds, new_rounds=r_rounds)
    return Speedup(ratio, ci, noise_floor(ref_rounds))


def _windowed(x: np.ndarray, rounds: int, windows: int) -> np.ndarray:
    if rounds % windows:
        raise ValueError(f"{rounds} rounds do not split into {windows} equal windows")
    return x.reshape(windows, rounds // windows, -1)


def window_speedups(ref_rounds: list[list[float]], cand_rounds: list[list[float]], windows: int) -> list[float]:
    """Each window's own ratio of medians (rounds as for :func:`speedup`), in time order: how far the pair
    drifted between windows.

    Raises:
        ValueError: as :func:`speedup`.
    """
    ref, r_rounds = _flat(ref_rounds)
    cand, c_rounds = _flat(cand_rounds)
    r, c = _windowed(ref, r_rounds, windows), _windowed(cand, c_rounds, windows)
    return [float(np.median(r[w]) / np.median(c[w])) for w in range(windows)]


def break_even_calls(setup_ms: float, ref_setup_ms: float, median_ms: float, ref_median_ms: float) -> float | None:
    """Calls after which a remedy has paid for its extra setup (compilation, capture, autotuning):
    ``(setup - ref_setup) / (ref_median - median)``; 0 when it costs no extra setup, None when it saves
    nothing per call (it never pays)."""
    saved = ref_median_ms - median_ms
    if saved <= 0:
        return None
    return max(0.0, (setup_ms - ref_setup_ms) / saved)
