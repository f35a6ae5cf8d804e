"""The fresh-process verdict on planted process rounds (:mod:`surrobench.results.optimize`)."""

from __future__ import annotations


import numpy as np
import pytest

from surrobench.records.vocab import FRESH_VERDICTS
from surrobench.results.optimize import (
    FreshCheck,
    agreement,
    fresh_verdict,
    judge_fresh,
    process_speedups,
)
from surrobench.records.paired import Speedup

OPTIMIZED = Speedup(5.0, (4.8, 5.2), 0.01)
#: Optimize's windows of a steady recipe: within 2% of each other.
STEADY = (4.95, 5.05, 5.0, 4.98, 5.02)


def _rounds(medians_ms: list[float], seed: int) -> list[list[float]]:
    """One round per process: 40 iterations with 1% jitter around its median."""
    rng = np.random.default_rng(seed)
    return [list(m * (1 + 0.01 * rng.standard_normal(40))) for m in medians_ms]


def test_agreement_is_the_paired_rule_over_process_units():
    """Optimize's units over the fresh ones, each unit a process: the same Speedup and rule as any pair."""
    same = agreement(STEADY, [5.0, 5.01])
    assert same.verdict() == "unchanged" and same.median == pytest.approx(5.0 / 5.005, rel=1e-3)
    far = agreement(STEADY, [2.0, 2.01, 1.99])
    assert far.faster() and far.ci95[0] > 2.4
    with pytest.raises(ValueError):
        agreement([], [1.0])
    with pytest.raises(ValueError):
        agreement([1.0], [0.0])


def test_a_speedup_that_holds_in_fresh_processes_is_reproduced():
    check = judge_fresh(OPTIMIZED, _rounds([5.0, 5.02, 4.98], 0), _rounds([1.0, 1.0, 1.0], 1), units=STEADY, pairs=3)
    assert check.verdict == "reproduced" and 4.8 <= check.speedup.median <= 5.2
    assert check.baseline_ms[0] == pytest.approx(5.0, rel=0.02)
    each = [b / r for b, r in zip(check.baseline_ms, check.recipe_ms)]  # pair by pair, as the reason gives them
    assert each == pytest.approx([4.99, 5.04, 4.99], abs=0.005) and "4.99x, 5.04x, 4.99x" in check.reason


def test_a_narrow_ci_missed_by_a_fraction_of_a_percent_is_reproduced_by_the_process_units():
    """The H200 PINN case: optimize's interval 0.2% wide over 8 windows, the fresh pairs half a percent off."""
    narrow = Speedup(1.876, (1.875, 1.878), 0.001)
    windows = (1.87, 1.89, 1.87, 1.87, 1.87, 1.88, 1.87, 1.88)
    check = judge_fresh(narrow, _rounds([2.292, 2.295], 0), _rounds([1.233, 1.228], 1), units=windows, pairs=2)
    assert not 1.875 <= check.speedup.median <= 1.878
    assert check.verdict == "reproduced" and "no difference beyond" in check.reason


def test_a_launch_bound_baseline_that_drifts_is_judged_against_the_spread_of_optimize_windows():
    """The H200 DeepONet 65,536 case: optimize 3.09x [2.59, 3.32] over windows from 2.54x to 3.38x; the fresh
    baseline read 0.416 ms in one process and 0.503 ms in the next against a steady 0.171 ms recipe."""
    claimed = Speedup(3.09, (2.59, 3.32), 0.01)
    windows = (2.54, 2.64, 3.38, 3.33, 3.11)
    base, recipe = _rounds([0.38, 0.46], 0), _rounds([0.171, 0.172], 1)
    check = judge_fresh(claimed, base, recipe, units=windows, pairs=2)
    assert not 2.59 <= check.speedup.median <= 3.32  # it misses optimize's CI ...
    assert check.verdict == "reproduced" and "a difference beyond" not in check.reason  # ... not this
    agree = agreement(windows, [b / r for b, r in zip(check.baseline_ms, check.recipe_ms)])
    wider = agree.ci95[0] < 1 / (1 + agree.margin()) or agree.ci95[1] > 1 + agree.margin()
    assert not agree.faster() and not agree.slower() and wider  # its interval does not show agreement either
    assert "inconclusive" in check.reason
    spread = max(check.baseline_ms) / min(check.baseline_ms) - 1  # 0.46 / 0.38 - 1, with the planted jitter
    assert spread == pytest.approx(0.22, abs=0.005) and "moved 22%" in check.reason
    # the same fresh pairs against steady windows at 3.6x: a real difference, not reproduced
    steady = judge_fresh(Speedup(3.6, (3.55, 3.65), 0.01), base, recipe, units=(3.6, 3.62, 3.58), pairs=2)
    assert steady.verdict == "not_reproduced" and "a difference beyond" in steady.reason


def test_fresh_processes_without_a_speedup_never_reproduce():
    """The CPU trial's case: optimize 1.15x [1.08, 1.20]; in fresh processes the recipe was faster in one pair
    and slower in the other, so their interval runs from below 1 to just past 1.15."""
    claimed = Speedup(1.15, (1.08, 1.20), 0.01)
    check = judge_fresh(claimed, _rounds([9.33, 10.6], 0), _rounds([10.01, 9.2], 1), units=(1.1, 1.2), pairs=2)
    assert check.speedup.ci95[0] < 1.0
    assert check.verdict in ("overlaps", "not_reproduced") and not check.speedup.faster()
    assert "no speedup" in check.reason


def test_a_baseline_that_drifts_against_steady_windows_is_named():
    # the eager baseline reads 2.5 ms in one process and 4 ms in others, where optimize's windows agreed on 5x
    check = judge_fresh(OPTIMIZED, _rounds([2.5, 4.0, 4.1], 0), _rounds([1.0, 1.01, 0.99], 1), units=STEADY, pairs=3)
    assert check.verdict == "not_reproduced" and check.speedup.median < 4.8
    spread = max(check.baseline_ms) / min(check.baseline_ms) - 1  # 4.1 / 2.5 - 1
    assert spread == pytest.approx(0.64, abs=0.005) and "moved 64%" in check.reason
    # the interval drew whole processes: it is wide enough to hold both the slow and the fast baseline
    assert check.speedup.ci95[0] < 3.0 and check.speedup.ci95[1] > 3.9


def test_a_clear_miss_is_not_reproduced():
    check = judge_fresh(OPTIMIZED, _rounds([2.0, 2.01, 1.99], 0), _rounds([1.0, 1.0, 1.0], 1), units=STEADY, pairs=3)
    assert check.verdict == "not_reproduced" and "a difference beyond" in check.reason
    assert check.speedup.median / OPTIMIZED.median - 1 == pytest.approx(-0.6, abs=5e-4)  # speedup ~2.0 vs 5.0
    assert "-60.0%" in check.reason
    assert check.to_json()["speedup"]["ci95"][1] < 4.8


def test_unknown_verdicts_and_ragged_rounds_are_refused():
    with pytest.raises(ValueError, match="unknown verdict"):
        FreshCheck(pairs=2, verdict="maybe", reason="")
    with pytest.raises(ValueError, match="equal length"):
        judge_fresh(OPTIMIZED, [[1.0, 1.0], [1.0]], [[1.0, 1.0], [1.0, 1.0]], pairs=2)
    with pytest.raises(ValueError, match="recipe processes"):
        judge_fresh(OPTIMIZED, [[1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], pairs=2)
    assert set(FRESH_VERDICTS) == {"reproduced", "overlaps", "not_reproduced", "failed", "interrupted"}


def test_the_windows_of_one_process_are_one_unit_and_each_process_window_another():
    units = process_speedups((4.0, 9.0, 3.0, 5.0), 2)  # two windows in the optimize process, two in pairs
    assert units == pytest.approx((6.0, 3.0, 5.0))  # sqrt(4 * 9), then each pair of processes
    assert process_speedups((4.0, 9.0), 0) == pytest.approx((6.0,)) and process_speedups((3.0, 5.0), 2) == (3.0, 5.0)
    assert process_speedups((), 0) == ()


def test_a_stored_fresh_object_is_judged_by_the_same_rule():
    fresh = Speedup(2.44, (2.21, 2.70), 0.01)
    verdict, reason = fresh_verdict(
        Speedup(3.09, (2.59, 3.32), 0.01), fresh, (0.38, 0.46), (0.171, 0.172), (3.0, 2.6, 3.2)
    )
    assert verdict == "reproduced" and "2.22x, 2.67x" in reason  # 0.38 / 0.171, 0.46 / 0.172
    with pytest.raises(ValueError, match="recipe processes"):
        fresh_verdict(OPTIMIZED, fresh, (), (), ())
