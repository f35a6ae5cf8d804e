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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surrobench.records.stats import bootstrap_ratio_ci


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


def speedup(ref_rounds: list[list[float]], cand_rounds: list[list[float]]) -> Speedup:
    """The :class:`Speedup` of the candidate over the reference, both given as latency rounds (ms,
    ``rounds x iters``, interleaved with each other).

    Raises:
        ValueError: empty or ragged rounds, or a reference median that is not positive.
    """
    ref, r_rounds = _flat(ref_rounds)
    cand, c_rounds = _flat(cand_rounds)
    ratio = float(np.median(ref) / np.median(cand))
    # bootstrap_ratio_ci gives statistic(new) / statistic(base): new = reference, base = candidate
    ci = bootstrap_ratio_ci(cand, ref, np.median, base_rounds=c_rounds, new_rounds=r_rounds)
    return Speedup(ratio, ci, noise_floor(ref_rounds))


def break_even_calls(setup_ms: float, ref_setup_ms: float, median_ms: float, ref_median_ms: float) -> float | None:
    """Calls after which a remedy has paid for its extra setup (compilation, capture, autotuning):
    ``(setup - ref_setup) / (ref_median - median)``; 0 when it costs no extra setup, None when it saves
    nothing per call (it never pays)."""
    saved = ref_median_ms - median_ms
    if saved <= 0:
        return None
    return max(0.0, (setup_ms - ref_setup_ms) / saved)
