"""The speedup rule on planted timings: ratio of medians, two-stage CI over rounds, A/A noise floor."""

from __future__ import annotations

import numpy as np
import pytest

from surrobench.results.speedup import break_even_calls, noise_floor, speedup, window_speedups


def _rounds(median_ms: float, drifts: list[float], iters: int = 20, jitter: float = 0.01, seed: int = 0):
    """One round per drift factor: ``median_ms * drift`` with multiplicative jitter."""
    rng = np.random.default_rng(seed)
    return [list(median_ms * d * (1 + rng.normal(0, jitter, iters))) for d in drifts]


# the host drifts by +-3% from round to round, the same for both variants (interleaved rounds)
DRIFT = [1.0, 1.03, 0.97, 1.03, 1.0, 0.97]


def test_one_percent_faster_inside_the_noise_floor_is_not_accepted():
    base = _rounds(10.0, DRIFT, seed=1)
    cand = _rounds(10.0 / 1.01, DRIFT[::-1], seed=2)
    sp = speedup(base, cand)
    assert 0.97 < sp.median < 1.06
    assert sp.noise_floor > 0.01  # the baseline's even and odd rounds differ by more than the effect
    assert not sp.faster


def test_thirty_percent_faster_is_accepted():
    base = _rounds(10.0, DRIFT, seed=3)
    cand = _rounds(10.0 / 1.3, DRIFT, seed=4)
    sp = speedup(base, cand)
    assert sp.median == pytest.approx(1.3, rel=0.03)
    assert sp.ci95[0] > 1 + sp.noise_floor and sp.faster
    assert sp.ci95[0] <= sp.median <= sp.ci95[1]


def test_slower_candidate_has_speedup_below_one():
    sp = speedup(_rounds(10.0, DRIFT, seed=5), _rounds(15.0, DRIFT, seed=6))
    assert sp.ci95[1] < 1.0 and not sp.faster


def test_noise_floor_is_the_aa_split_of_the_baseline():
    steady = [[10.0] * 5 for _ in range(4)]
    assert noise_floor(steady) == 0.0
    # even rounds at 10 ms, odd rounds at 11 ms: the same code differs by 10% against itself
    alternating = [[10.0] * 5, [11.0] * 5, [10.0] * 5, [11.0] * 5]
    assert noise_floor(alternating) == pytest.approx(0.1)
    # one round: its even and odd iterations
    assert noise_floor([[10.0, 12.0, 10.0, 12.0]]) == pytest.approx(0.2)


def _windows(median_ms: float, per_window: list[float], rounds: int = 6, seed: int = 0) -> list[list[float]]:
    """``rounds`` rounds per window at ``median_ms * factor`` each, 0.5% jitter: the rounds of all windows in order."""
    rng = np.random.default_rng(seed)
    return [
        r
        for i, f in enumerate(per_window)
        for r in _rounds(median_ms * f, [1.0] * rounds, jitter=0.005, seed=seed + i + rng.integers(1000))
    ]


def test_windows_drifting_apart_widen_the_interval_over_windows():
    """A recipe 1.20 ms in three windows and 1.35 ms in one (an H200 window a minute later, docs/benchmarks/
    h200-optimize.md): drawn over windows, the interval reaches towards the slow window's 5.2x, where the
    two-stage interval over the pooled rounds stays near the fast windows."""
    base = _windows(7.0, [1.0, 1.0, 1.0, 1.0], seed=10)
    recipe = _windows(1.2, [1.0, 1.0, 1.125, 1.0], seed=20)
    per_window = window_speedups(base, recipe, 4)
    assert per_window[2] == pytest.approx(7.0 / 1.35, rel=0.01) and per_window[0] == pytest.approx(7.0 / 1.2, rel=0.01)
    pooled_rounds, over_windows = speedup(base, recipe), speedup(base, recipe, windows=4)
    assert over_windows.median == pooled_rounds.median  # the same ratio of medians; only the interval differs
    assert over_windows.ci95[0] < pooled_rounds.ci95[0] - 0.1
    assert over_windows.ci95[0] <= over_windows.median <= over_windows.ci95[1]


def test_steady_windows_do_not_widen_the_interval():
    base = _windows(7.0, [1.0] * 4, seed=30)
    recipe = _windows(1.2, [1.0] * 4, seed=40)
    lo, hi = speedup(base, recipe, windows=4).ci95
    assert 7.0 / 1.2 * 0.98 < lo < hi < 7.0 / 1.2 * 1.02


def test_rounds_that_do_not_split_into_windows_are_refused():
    base, recipe = _windows(7.0, [1.0] * 3, rounds=2), _windows(1.2, [1.0] * 3, rounds=2)
    with pytest.raises(ValueError, match="equal windows"):
        speedup(base, recipe, windows=4)


def test_ragged_rounds_are_refused():
    with pytest.raises(ValueError):
        speedup([[1.0, 2.0], [1.0]], [[1.0, 1.0], [1.0, 1.0]])


def test_break_even_calls():
    # 900 ms more setup, 0.9 ms saved per call: pays after 1000 calls
    assert break_even_calls(1000.0, 100.0, 0.1, 1.0) == pytest.approx(1000.0)
    assert break_even_calls(50.0, 100.0, 0.5, 1.0) == 0.0  # cheaper setup: pays at once
    assert break_even_calls(1000.0, 100.0, 1.2, 1.0) is None  # slower: never pays
