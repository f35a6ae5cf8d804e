import numpy as np
import pytest
from scipy import stats as sps

from surrobench.records.stats import LatencyStats, bootstrap_ci


def test_statistics_match_numpy_on_a_known_sample():
    x = np.arange(1, 101, dtype=float)  # 1..100
    s = LatencyStats.from_samples(x)
    assert s.median == 50.5
    assert s.p95 == pytest.approx(np.percentile(x, 95)) == pytest.approx(95.05)
    assert s.p99 == pytest.approx(99.01)
    assert s.mean == 50.5
    assert s.std == pytest.approx(np.std(x, ddof=1))
    assert (s.min, s.max) == (1.0, 100.0)
    assert s.iqr == pytest.approx(sps.iqr(x))


def test_ci_contains_median_and_matches_scipy_bootstrap():
    x = np.random.default_rng(7).lognormal(mean=1.0, sigma=0.2, size=80)
    s = LatencyStats.from_samples(x)
    lo, hi = s.ci95_median
    assert lo < s.median < hi
    ref = sps.bootstrap((x,), np.median, method="percentile", n_resamples=2000, rng=np.random.default_rng(0))
    assert (lo, hi) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))


def test_ci_narrows_with_more_samples():
    rng = np.random.default_rng(3)
    small = LatencyStats.from_samples(rng.normal(10, 1, 20)).ci95_median
    large = LatencyStats.from_samples(rng.normal(10, 1, 2000)).ci95_median
    assert (large[1] - large[0]) < (small[1] - small[0]) / 3


def test_degenerate_samples():
    one = LatencyStats.from_samples([2.5])
    assert one.std == 0.0 and one.ci95_median == (2.5, 2.5) and one.iqr == 0.0
    assert bootstrap_ci(np.full(10, 3.0)) == (3.0, 3.0)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")]])
def test_rejects_empty_or_nonfinite(bad):
    with pytest.raises(ValueError):
        LatencyStats.from_samples(bad)


def test_noisy_flag_follows_relative_iqr():
    assert not LatencyStats.from_samples(np.linspace(9.9, 10.1, 50)).noisy
    assert LatencyStats.from_samples(np.linspace(5, 15, 50)).noisy


def test_dict_round_trip():
    s = LatencyStats.from_samples([1.0, 2.0, 3.0, 4.0])
    d = s.to_json()
    assert isinstance(d["ci95_median"], list) and LatencyStats.from_json(d) == s


def test_two_stage_resamples_keep_rounds_together():
    from surrobench.records.stats import two_stage_resamples

    x = np.repeat([1.0, 2.0, 3.0], 4)  # three rounds, each constant
    draws = two_stage_resamples(x, 3, 50, np.random.default_rng(0))
    assert draws.shape == (50, 12)
    blocks = draws.reshape(50, 3, 4)
    assert np.all(blocks == blocks[:, :, :1])  # every resampled block comes from one round
    with pytest.raises(ValueError, match="equal rounds"):
        two_stage_resamples(np.arange(10.0), 3, 5, np.random.default_rng(0))
