"""The one rule for "faster" on planted paired samples: ratio of medians, hierarchical bootstrap over the units
that vary (processes, windows, rounds), the A/A noise floor and the smallest effect of interest."""

from __future__ import annotations

import numpy as np
import pytest

from surrobench.records.paired import FasterRule, PairedSamples, break_even_calls, noise_floor, split_rounds


def _rounds(median_ms: float, drifts: list[float], iters: int = 20, jitter: float = 0.01, seed: int = 0):
    """One round per drift factor: ``median_ms * drift`` with multiplicative jitter."""
    rng = np.random.default_rng(seed)
    return [list(median_ms * d * (1 + rng.normal(0, jitter, iters))) for d in drifts]


# the host drifts by +-3% from round to round, the same for both variants (interleaved rounds)
DRIFT = [1.0, 1.03, 0.97, 1.03, 1.0, 0.97]


def test_one_percent_faster_inside_the_noise_is_never_faster():
    for seed in range(5):
        pair = PairedSamples.interleaved(
            _rounds(10.0, DRIFT, seed=seed), _rounds(10.0 / 1.01, DRIFT[::-1], seed=seed + 9)
        )
        sp = pair.speedup()
        assert 0.97 < sp.median < 1.06
        assert not sp.faster() and sp.verdict() != "faster"


def test_one_percent_faster_with_no_noise_is_still_inside_the_smallest_effect():
    """Steady timings (0.1% jitter): the interval is tight around 1.01, yet 1% is within the 2% band."""
    sp = PairedSamples.interleaved(
        _rounds(10.0, [1.0] * 6, jitter=0.001), _rounds(10.0 / 1.01, [1.0] * 6, jitter=0.001, seed=1)
    ).speedup()
    assert sp.ci95[0] > 1.0 and not sp.faster() and sp.verdict() == "unchanged"
    assert sp.faster(FasterRule(min_effect=0.0))  # the band is the rule's parameter


def test_thirty_percent_faster_is_faster():
    sp = PairedSamples.interleaved(_rounds(10.0, DRIFT, seed=3), _rounds(10.0 / 1.3, DRIFT, seed=4)).speedup()
    assert sp.median == pytest.approx(1.3, rel=0.03)
    assert sp.ci95[0] > 1 + sp.margin() and sp.faster() and sp.verdict() == "faster"
    assert sp.ci95[0] <= sp.median <= sp.ci95[1]


def test_slower_candidate_is_slower_by_the_same_rule():
    sp = PairedSamples.interleaved(_rounds(10.0, DRIFT, seed=5), _rounds(15.0, DRIFT, seed=6)).speedup()
    assert sp.ci95[1] < 1.0 and not sp.faster() and sp.slower() and sp.verdict() == "slower"


def test_an_interval_too_wide_to_judge_is_said_inconclusive_not_unchanged():
    """optimize on a busy CPU: 4.50x [0.28, 23.15] under a noise floor of 1137% was "not faster beyond the noise".
    An estimate within the margin is no evidence of no change unless its interval is inside the band too, whether the
    noise floor or the smallest effect of interest sets it: a fresh-user trial's A/A compare read "unchanged" for
    0.998 [0.705, 1.442] under a 1.5% noise floor (the 2% band)."""
    from surrobench.records.paired import Speedup

    wide, flat = Speedup(4.50, (0.28, 23.15), 11.375), Speedup(1.0, (0.97, 1.03), 0.05)
    assert (wide.verdict(), flat.verdict()) == ("inconclusive", "unchanged")
    assert Speedup(1.0, (0.9, 1.1), 0.05).verdict() == "inconclusive"  # past the 5% the noise sets
    assert Speedup(1.0, (0.97, 1.03), 0.01).verdict() == "inconclusive"  # past the 2% band
    assert Speedup(1.0, (0.985, 1.015), 0.01).verdict() == "unchanged"  # inside it
    a_a = Speedup(0.998, (0.705, 1.442), 0.0148)
    assert a_a.verdict() == "inconclusive" and a_a.words()[0] == "inconclusive, too noisy to judge"
    assert wide.reason("the baseline").startswith("inconclusive, too noisy to judge: 4.50x [0.28, 23.15]")
    assert flat.reason("the baseline").startswith("unchanged: 1.00x")  # the verdict's own word, as diagnose says it


def test_a_narrow_interval_across_the_margins_edge_is_not_called_too_noisy():
    """A fresh-user trial read "inconclusive, too noisy to judge" for 0.97x [0.96, 0.98] at a 2% margin: narrow, it
    straddles the margin's edge. An interval wider than 2x the margin is too noisy; a narrower one is at the edge."""
    from surrobench.records.paired import Speedup

    edge, slow_edge, wide = (
        Speedup(1.04, (1.01, 1.07), 0.05),
        Speedup(0.97, (0.955, 0.985), 0.01),
        Speedup(1.0, (0.9, 1.1), 0.05),
    )
    assert (edge.verdict(), slow_edge.verdict(), wide.verdict()) == ("inconclusive",) * 3  # the verdicts unchanged
    assert "edge" in edge.words()[0] and "noisy" in wide.words()[0]
    assert slow_edge.words()[0] == "slower, within the margin"  # all below 1: slower, not by the margin
    assert "edge" in edge.reason("x") and "noisy" not in edge.reason("x") and "noisy" in wide.reason("x")


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
    return [
        r for i, f in enumerate(per_window) for r in _rounds(median_ms * f, [1.0] * rounds, jitter=0.005, seed=seed + i)
    ]


def _ids(windows: int, rounds: int = 6) -> list[int]:
    """Each round's window id for ``windows`` windows of ``rounds`` rounds."""
    return [i // rounds for i in range(windows * rounds)]


def test_windows_drifting_apart_widen_the_interval():
    """A recipe 1.20 ms in three windows and 1.35 ms in one (an H200 window a minute later, docs/benchmarks/
    h200-optimize.md): drawn over windows, the interval reaches towards the slow window's 5.2x, where the
    interval of the same rounds as one window stays near the fast windows."""
    base = _windows(7.0, [1.0, 1.0, 1.0, 1.0], seed=10)
    recipe = _windows(1.2, [1.0, 1.0, 1.125, 1.0], seed=20)
    by_window = PairedSamples.interleaved(base, recipe, windows=_ids(4))
    per_window = by_window.unit_speedups()
    assert per_window[2] == pytest.approx(7.0 / 1.35, rel=0.01) and per_window[0] == pytest.approx(7.0 / 1.2, rel=0.01)
    one_window, over_windows = PairedSamples.interleaved(base, recipe).speedup(), by_window.speedup()
    assert over_windows.median == one_window.median  # the same ratio of medians; only the interval differs
    assert over_windows.ci95[0] < one_window.ci95[0] - 0.1
    assert over_windows.ci95[0] <= over_windows.median <= over_windows.ci95[1]


def test_steady_windows_do_not_widen_the_interval():
    lo, hi = (
        PairedSamples.interleaved(_windows(7.0, [1.0] * 4, seed=30), _windows(1.2, [1.0] * 4, seed=40), windows=_ids(4))
        .speedup()
        .ci95
    )
    assert 7.0 / 1.2 * 0.98 < lo < hi < 7.0 / 1.2 * 1.02


def _with_processes(baseline_factors: list[float]) -> PairedSamples:
    """Four steady windows in one process (10 ms against 5 ms), then one window in each of
    ``len(baseline_factors)`` fresh processes whose baseline runs ``factor`` times as long (the recipe steady)."""
    pair = PairedSamples.interleaved(
        _windows(10.0, [1.0] * 4, seed=50), _windows(5.0, [1.0] * 4, seed=60), windows=_ids(4)
    )
    for i, f in enumerate(baseline_factors):
        pair = pair.add_windows(
            _windows(10.0 * f, [1.0], seed=70 + i), _windows(5.0, [1.0], seed=80 + i), rounds=6, process=i + 1
        )
    return pair


def test_drift_between_processes_widens_the_interval():
    """A launch-bound eager baseline that reads 30% slower in one fresh process and 20% faster in the next
    (docs/benchmarks/h200-optimize.md, "Windows and processes"): with processes as the units the interval spans
    them, where two steady fresh processes leave it tight."""
    steady, drifting = _with_processes([1.0, 1.0]), _with_processes([1.3, 0.8])
    assert all(len({p for p, _ in r.baseline_units}) == 3 for r in (steady, drifting))  # three processes
    s, d = steady.speedup(), drifting.speedup()
    assert s.ci95[1] - s.ci95[0] < 0.1
    assert d.ci95[0] < 1.75 and d.ci95[1] > 2.35  # the fresh pairs read 1.6x and 2.6x
    assert drifting.unit_speedups()[-2:] == pytest.approx([2.6, 1.6], rel=0.02)


def test_separate_runs_draw_their_rounds_independently():
    base, new = _rounds(10.0, DRIFT, seed=1), _rounds(10.0 / 1.3, DRIFT, seed=2)
    separate = PairedSamples.separate(base, new)
    assert not separate.paired and separate.speedup().faster()
    with pytest.raises(ValueError, match="same"):
        PairedSamples(separate.baseline, separate.candidate, separate.baseline_units, separate.candidate_units)


@pytest.mark.parametrize(
    "base, cand",
    [
        ([[1.0, 2.0], [1.0]], [[1.0, 1.0], [1.0, 1.0]]),
        ([[1.0]], [[0.0]]),
        ([[1.0]], []),
        ([[1.0, float("nan")]], [[1.0, 1.0]]),
    ],
)
def test_ragged_empty_or_non_positive_samples_are_refused(base, cand):
    with pytest.raises(ValueError):
        PairedSamples.separate(base, cand)


def test_rounds_without_one_window_id_each_are_refused():
    with pytest.raises(ValueError, match="window ids"):
        PairedSamples.interleaved(
            _windows(7.0, [1.0] * 3, rounds=2), _windows(1.2, [1.0] * 3, rounds=2), windows=_ids(4)
        )


def test_a_p95_ratio_comes_from_the_same_draws():
    pair = PairedSamples.separate(_rounds(10.0, DRIFT, seed=1), _rounds(5.0, DRIFT, seed=2))
    ratio, (lo, hi) = pair.ratio(0.95)
    assert ratio == pytest.approx(2.0, rel=0.05) and lo <= ratio <= hi


def test_break_even_calls():
    # 900 ms more setup, 0.9 ms saved per call: pays after 1000 calls
    assert break_even_calls(1000.0, 100.0, 0.1, 1.0) == pytest.approx(1000.0)
    assert break_even_calls(50.0, 100.0, 0.5, 1.0) == 0.0  # cheaper setup: pays at once
    assert break_even_calls(1000.0, 100.0, 1.2, 1.0) is None  # slower: never pays


def test_a_slow_round_widens_the_interval_instead_of_faking_a_difference():
    rng = np.random.default_rng(1)
    base = rng.normal(1.0, 0.01, 200)
    new = np.concatenate([rng.normal(1.0, 0.01, 150), rng.normal(1.6, 0.05, 50)])  # one slow round of 4

    def ratio_ci(rounds: int, candidate: np.ndarray) -> tuple[float, float]:
        """The interval of median(candidate) / median(base), two separate runs of ``rounds`` rounds each."""
        pair = PairedSamples.separate(split_rounds(candidate, rounds), split_rounds(base, rounds))
        return pair.ratio(0.5)[1]

    flat, staged = ratio_ci(1, new), ratio_ci(4, new)
    assert flat[1] - flat[0] < 0.01  # one round: a tight interval, as if all 200 draws agreed
    assert staged[0] < 1.0 < staged[1] and staged[1] > 1.3  # four rounds: the spell shows as round-to-round noise
    # a real 10% shift present in every round stays significant
    lo, hi = ratio_ci(4, rng.normal(1.1, 0.01, 200))
    assert 1.05 < lo < hi < 1.15


def test_split_rounds_falls_back_to_one_round():
    assert split_rounds((1.0, 2.0, 3.0, 4.0), 2) == ((1.0, 2.0), (3.0, 4.0))
    assert split_rounds((1.0, 2.0, 3.0), 2) == ((1.0, 2.0, 3.0),)


def test_a_bound_names_what_it_is_whether_cleared_or_not():
    """A fresh-user trial read "compile: ..., clears 1 + smallest effect 2.0%" beside "threads=2: inconclusive ...,
    lower bound needs > 1.110" (1 + an 11% noise floor, unnamed): one helper words both, naming what set the bound."""
    from surrobench.records.findings import MeasuredRemedy
    from surrobench.records.paired import FasterRule, Speedup

    assert Speedup(1.0, (0.9, 1.1), 0.11).margin_text() == "noise floor 11.0%"
    assert Speedup(1.0, (0.9, 1.1), 0.01).margin_text(cleared=True) == "clears 1 + smallest effect of interest 2.0%"
    assert Speedup(1.0, (0.9, 1.1), 0.11).margin_text(FasterRule(0.05), cleared=False) == (
        "needs > 1.110 (1 + noise floor 11.0%)"
    )
    noisy = Speedup(0.93, (0.63, 1.07), 0.11)
    assert noisy.verdict() == "inconclusive"
    assert noisy.reason("the baseline").endswith(", lower bound needs > 1.110 (1 + noise floor 11.0%)")
    assert Speedup(1.13, (1.10, 1.16), 0.01).reason("x").endswith(", clears 1 + smallest effect of interest 2.0%")
    m = MeasuredRemedy("threads=2", "inconclusive", 0.93, (0.63, 1.07), 4.5, None, noise_floor=0.11, margin=0.11)
    assert m.text().endswith(f"{noisy.words()[0]}, lower bound needs > 1.110 (1 + noise floor 11.0%)")


@pytest.mark.parametrize("rounds", [1, 2])
def test_a_candidate_150x_slower_in_every_call_reads_slower_from_one_or_two_rounds(rounds):
    """A trial's threads=2 at 1 free core: 1596 ms a call against a 10 ms baseline whose two rounds sat 38% apart
    (its noise floor), in a window cut to two rounds, or one. Every bootstrap resample's ratio of medians is at most
    max(baseline) / min(candidate), so the interval's upper end lies below 1 / (1 + margin): slower by the rule."""
    base = _rounds(10.0, [1.3, 0.8][:rounds], iters=21, jitter=0.05, seed=80)
    slow = _rounds(1596.0, [1.0] * rounds, iters=21, jitter=0.005, seed=81)
    sp = PairedSamples.interleaved(base, slow).speedup()
    assert max(max(r) for r in base) / min(min(r) for r in slow) < 1 / (1 + sp.margin())
    assert sp.verdict() == "slower" and sp.ci95[1] < 0.01


def test_a_candidate_as_fast_as_the_baseline_in_half_of_one_of_two_rounds_is_not_slower():
    """Why the trial read 0.01x [0.01, 1.29], "inconclusive": its threads=2 ran as fast as the baseline while the
    other core was free (about half of one round's calls) and 150 times slower while it was not. Rounds are the
    units drawn: a quarter of the resamples draw that round twice, and their median is the baseline's."""
    base = _rounds(10.0, [1.3, 0.8], iters=21, jitter=0.05, seed=82)
    mixed = _rounds(1596.0, [1.0, 1.0], iters=21, jitter=0.005, seed=83)
    mixed[0][:12] = [10.4] * 12
    sp = PairedSamples.interleaved(base, mixed).speedup()
    assert sp.median < 0.01 and sp.ci95[1] > 1.0 and sp.verdict() == "inconclusive"


def test_windows_cut_short_pair_by_their_ids():
    base, cand = _rounds(10.0, [1.0] * 5, seed=84), _rounds(8.0, [1.0] * 5, seed=85)
    pair = PairedSamples.interleaved(base, cand, windows=[0, 0, 0, 3, 3])  # a window of 3 rounds, one cut to 2
    assert pair.baseline_units == ((0, 0),) * 3 + ((0, 3),) * 2 and len(pair.unit_speedups()) == 2
    with pytest.raises(ValueError, match="window ids"):
        PairedSamples.interleaved(base, cand, windows=[0, 0, 3])
