"""The fresh-process verdict on planted process rounds (:mod:`surrobench.results.fresh`)."""

from __future__ import annotations

import numpy as np
import pytest

from surrobench.results.fresh import FRESH_VERDICTS, FreshCheck, judge_fresh
from surrobench.results.speedup import Speedup

OPTIMIZED = Speedup(5.0, (4.8, 5.2), 0.01)


def _rounds(medians_ms: list[float], seed: int) -> list[list[float]]:
    """One round per process: 40 iterations with 1% jitter around its median."""
    rng = np.random.default_rng(seed)
    return [list(m * (1 + 0.01 * rng.standard_normal(40))) for m in medians_ms]


def test_a_speedup_that_holds_in_fresh_processes_is_reproduced():
    check = judge_fresh(OPTIMIZED, _rounds([5.0, 5.02, 4.98], 0), _rounds([1.0, 1.0, 1.0], 1), pairs=3)
    assert check.verdict == "reproduced" and 4.8 <= check.speedup.median <= 5.2
    assert "inside the optimize CI" in check.reason and check.baseline_ms[0] == pytest.approx(5.0, rel=0.02)


def test_optimize_median_inside_the_fresh_interval_is_reproduced():
    """The H200 PINN case: a narrow optimize interval a fraction of a percent off, inside the fresh one."""
    narrow = Speedup(5.0, (4.995, 5.005), 0.001)
    check = judge_fresh(narrow, _rounds([4.96, 5.0], 0), _rounds([1.0, 1.0], 1), pairs=2)
    assert check.speedup.ci95[0] <= 5.0 <= check.speedup.ci95[1] and not 4.995 <= check.speedup.median <= 5.005
    assert check.verdict == "reproduced" and "optimize's 5.00x lies inside the fresh CI" in check.reason
    # the same fresh processes against a claim outside their interval: only overlapping, or not reproduced
    other = judge_fresh(Speedup(5.3, (4.995, 5.5), 0.001), _rounds([4.96, 5.0], 0), _rounds([1.0, 1.0], 1), pairs=2)
    assert other.verdict == "overlaps"


def test_fresh_processes_without_a_speedup_never_reproduce():
    """The CPU trial's case: optimize 1.15x [1.08, 1.20]; in fresh processes the recipe was faster in one pair
    and slower in the other, so their interval runs from below 1 to just past 1.15."""
    claimed = Speedup(1.15, (1.08, 1.20), 0.01)
    check = judge_fresh(claimed, _rounds([9.33, 10.6], 0), _rounds([10.01, 9.2], 1), pairs=2)
    assert check.speedup.ci95[0] < 1.0 and check.speedup.ci95[0] <= 1.15 <= check.speedup.ci95[1]
    assert check.verdict == "overlaps" and "show no speedup beyond their noise" in check.reason


def test_a_baseline_that_drifts_between_processes_is_named():
    # the launch-bound case: the eager baseline reads 2.5 ms in one process and 4 ms in others
    check = judge_fresh(OPTIMIZED, _rounds([2.5, 4.0, 4.1], 0), _rounds([1.0, 1.01, 0.99], 1), pairs=3)
    assert check.verdict in ("overlaps", "not_reproduced") and check.speedup.median < 4.8
    assert "baseline median moved 64%" in check.reason  # 4.1 / 2.5 - 1
    # the interval drew whole processes: it is wide enough to hold both the slow and the fast baseline
    assert check.speedup.ci95[0] < 3.0 and check.speedup.ci95[1] > 3.9


def test_disjoint_intervals_are_not_reproduced():
    check = judge_fresh(OPTIMIZED, _rounds([2.0, 2.01, 1.99], 0), _rounds([1.0, 1.0, 1.0], 1), pairs=3)
    assert check.verdict == "not_reproduced" and "disjoint" in check.reason
    assert "(-60.0% against optimize's 5.00x)" in check.reason  # speedup ~2.0 vs 5.0
    assert check.to_json()["speedup"]["ci95"][1] < 4.8


def test_unknown_verdicts_and_ragged_rounds_are_refused():
    with pytest.raises(ValueError, match="unknown verdict"):
        FreshCheck(pairs=2, verdict="maybe", reason="")
    with pytest.raises(ValueError, match="equal length"):
        judge_fresh(OPTIMIZED, [[1.0, 1.0], [1.0]], [[1.0, 1.0], [1.0, 1.0]], pairs=2)
    assert set(FRESH_VERDICTS) == {"reproduced", "overlaps", "not_reproduced", "failed", "interrupted"}
