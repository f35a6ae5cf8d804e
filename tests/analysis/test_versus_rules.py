"""The versus rules on planted curves: a solver whose error falls as ``0.1 / t`` (a straight line in log-log), so
the matched-error speedup, the crossover and the interval's truth are known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from surrobench.analysis import versus as rules
from surrobench.records.versus import BEYOND_COARSEST, BEYOND_FINEST, MATCHED

TIMES_MS = 2.0 ** np.arange(7)  # 1 .. 64 ms
ERRORS = 0.1 / TIMES_MS  # 0.1 .. 0.0016


def test_matched_error_speedup_is_the_planted_one():
    m = rules.match_error(0.01, 3.0, ERRORS, TIMES_MS)  # the solver needs 10 ms for error 0.01
    assert m.status == MATCHED
    assert m.solver_ms == pytest.approx(10.0)
    assert m.speedup == pytest.approx(10.0 / 3.0)


def test_dominated_levels_leave_the_front():
    errors = np.append(ERRORS, 0.05)  # slower than every level and less accurate than most
    times = np.append(TIMES_MS, 100.0)
    assert rules.pareto_front(errors, times).tolist() == list(range(7))
    assert rules.match_error(0.01, 3.0, errors, times).speedup == pytest.approx(10.0 / 3.0)


def test_matched_time_and_crossover():
    t = rules.match_time(0.01, 3.0, ERRORS, TIMES_MS)
    assert t.solver_error == pytest.approx(0.1 / 3.0)
    assert t.error_ratio == pytest.approx(10.0 / 3.0)
    assert rules.crossover_level(3.0, ERRORS, TIMES_MS) == 1  # the 2 ms level is the most accurate one faster
    assert rules.crossover_level(0.5, ERRORS, TIMES_MS) is None


def test_errors_past_the_ladder_are_reported_not_extrapolated():
    finer = rules.match_error(1e-4, 2.0, ERRORS, TIMES_MS)
    assert (finer.status, finer.speedup, finer.bound, finer.bound_level) == (BEYOND_FINEST, None, 32.0, 6)
    coarser = rules.match_error(0.5, 2.0, ERRORS, TIMES_MS)
    assert (coarser.status, coarser.speedup, coarser.bound, coarser.bound_level) == (BEYOND_COARSEST, None, 0.5, 0)


def test_rollout_crossover_step():
    # the surrogate's error grows with the step while each step costs it 1 ms; the solver's 8 ms level reaches
    # 0.0125 at the horizon: the surrogate wins while its error stays small
    matches = [rules.match_error(e, 1.0 * k, ERRORS, TIMES_MS) for k, e in enumerate([0.002, 0.01, 0.05, 0.2], 1)]
    assert [m.status for m in matches][:3] == [MATCHED] * 3
    assert matches[1].speedup == pytest.approx(5.0)  # 10 ms against 2 ms
    assert matches[2].speedup == pytest.approx(2.0 / 3.0)
    assert rules.crossover_step(matches) == 3


def test_bootstrap_interval_covers_the_planted_speedup():
    rng = np.random.default_rng(1)
    n = 40
    level_errors = ERRORS[:, None] * rng.lognormal(0.0, 0.1, size=(7, n))
    level_ms = TIMES_MS[:, None] * np.ones((7, n))
    surrogate_errors = 0.01 * rng.lognormal(0.0, 0.2, size=n)
    interval = rules.speedup_interval(level_errors, level_ms, surrogate_errors, np.full(n, 3.0), resamples=400)
    assert interval.matched_fraction == 1.0
    assert interval.low < 10.0 / 3.0 < interval.high
    assert interval.high / interval.low < 2.0


def test_band_errors_add_up_to_the_relative_l2():
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(32, 32))
    prediction = reference + 0.1 * rng.normal(size=(32, 32))
    bands = rules.band_errors(prediction, reference)
    assert sum(v**2 for v in bands.values()) == pytest.approx(rules.relative_l2(prediction, reference) ** 2)
    smooth = reference.copy()
    x = np.arange(32) / 32
    smooth_err = 0.1 * np.sin(2 * np.pi * x)[:, None] * np.ones(32)  # wavenumber 1: the low band only
    low_only = rules.band_errors(smooth + smooth_err, smooth)
    assert low_only["mid"] == pytest.approx(0.0, abs=1e-12) and low_only["high"] == pytest.approx(0.0, abs=1e-12)
    assert low_only["low"] > 0


def test_trivial_error_is_the_better_of_zeros_and_persistence():
    reference = [np.ones((4, 4)), np.ones((4, 4))]
    assert rules.trivial_errors([1.1 * np.ones((4, 4))] * 2, reference) == pytest.approx(0.1)
    assert rules.trivial_errors([None, None], reference) == 1.0
