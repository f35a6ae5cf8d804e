"""Latency statistics of one config's per-iteration samples: the median and P95 (docs/sources.md, method §1: surrogates
show long tails from allocator jitter), P99, mean, std, min, max, IQR and a bootstrap interval of the median."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surrobench.records import schemas

NS_PER_MS = 1e6
MS_PER_S = 1000.0
#: Resamples for the bootstrap CI. 2000 gives a CI whose end points move by well under 1% between seeds on
#: 50-sample latency sets (Efron & Tibshirani 1993, ch. 13: 1000-2000 for percentile intervals).
BOOTSTRAP_RESAMPLES = 2000
#: Fixed seed so that the same samples always give the same interval (reproducible run records).
BOOTSTRAP_SEED = 0
#: Under this many samples the P95 rests on fewer than ~3 points above it and is not trustworthy:
#: the k-th largest of n samples estimates the (1 - k/n) quantile; k = n * 0.05 >= 3 needs n >= 60.
MIN_SAMPLES_FOR_P95 = 60
#: Relative IQR above which a measurement is flagged as noisy, as torch.utils.benchmark does
#: (``_IQR_WARN_THRESHOLD = 0.1`` in torch/utils/benchmark/utils/common.py).
IQR_WARN_FRACTION = 0.1


@dataclass(frozen=True)
class LatencyStats(schemas.Plain):
    """Summary of a sample of latencies, ms: percentiles interpolated linearly (numpy's default, Hyndman & Fan
    type 7), ``std`` with ddof=1 (0.0 for one sample), ``ci95_median`` the percentile-bootstrap 95% interval of the
    median (as scipy.stats.bootstrap draws it)."""

    median: float
    p95: float
    p99: float
    mean: float
    std: float
    min: float
    max: float
    iqr: float
    ci95_median: tuple[float, float]

    @classmethod
    def from_samples(cls, samples_ms: "np.typing.ArrayLike", rounds: int = 1) -> "LatencyStats":
        """The statistics of ``samples_ms`` (1-D, ms); ``rounds`` > 1: that many equal consecutive blocks measured
        at different times (``run --rounds``), the CI from the two-stage bootstrap of :func:`bootstrap_ci`.

        Raises:
            ValueError: empty sample, or a non-finite value in it.
        """
        x = np.asarray(samples_ms, dtype=np.float64).ravel()
        if x.size == 0:
            raise ValueError("no samples")
        if not np.all(np.isfinite(x)):
            raise ValueError("samples contain NaN or Inf")
        p25, p50, p75, p95, p99 = np.percentile(x, [25, 50, 75, 95, 99])
        return cls(
            median=float(p50),
            p95=float(p95),
            p99=float(p99),
            mean=float(x.mean()),
            std=float(x.std(ddof=1)) if x.size > 1 else 0.0,
            min=float(x.min()),
            max=float(x.max()),
            iqr=float(p75 - p25),
            ci95_median=bootstrap_ci(x, rounds=rounds),
        )

    @property
    def noisy(self) -> bool:
        """True when IQR / median exceeds :data:`IQR_WARN_FRACTION`."""
        return self.median > 0 and self.iqr / self.median > IQR_WARN_FRACTION


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den``; None when ``num`` is unknown or ``den`` is unknown or 0."""
    return num / den if num is not None and den else None


def number_or_none(text: str) -> float | None:
    """A number written as text (``"250"``, ``"1.5e3"``, blanks around it allowed); None for any other text, NaN and
    infinity. Read so: a Kineto time (:mod:`surrobench.trace.kineto_events`), an ncu metric (``collect.ncu_parse``)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def bootstrap_ci(x: np.ndarray, *, rounds: int = 1) -> tuple[float, float]:
    """Percentile-bootstrap 95% confidence interval (Efron & Tibshirani 1993, ch. 13; :data:`BOOTSTRAP_RESAMPLES`
    resamples) of the median of the 1-D sample ``x``.

    Percentile rather than BCa: BCa's jackknife degenerates on samples with many ties (quantized timer
    readings), the percentile interval does not. One sample gives the degenerate interval (x0, x0).
    With ``rounds`` > 1 the resampling is two-stage (see :func:`two_stage_resamples`).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size < 2 or np.all(x == x[0]):
        v = float(np.median(x))
        return (v, v)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    if rounds > 1:
        drawn = two_stage_resamples(x, rounds, BOOTSTRAP_RESAMPLES, rng)
    else:  # the indices scipy.stats.bootstrap(method="percentile") draws, without its import (0.5-1 CPU s)
        drawn = x[rng.integers(0, x.size, (BOOTSTRAP_RESAMPLES, x.size))]
    lo, hi = np.percentile(np.median(drawn, axis=-1), [2.5, 97.5])
    return (float(lo), float(hi))


def two_stage_resamples(x: np.ndarray, rounds: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap resamples ``(resamples, x.size)`` of a sample made of ``rounds`` equal consecutive blocks
    (time-separated rounds): blocks drawn with replacement, then each chosen block's values (Davison & Hinkley 1997,
    "Bootstrap Methods and their Application", §3.8, two-stage sampling); variation between rounds widens the interval.

    Raises:
        ValueError: ``x.size`` is not a multiple of ``rounds``.
    """
    if x.size % rounds:
        raise ValueError(f"{x.size} samples do not split into {rounds} equal rounds")
    blocks = x.reshape(rounds, -1)
    size = blocks.shape[1]
    chosen = rng.integers(0, rounds, size=(resamples, rounds))
    within = rng.integers(0, size, size=(resamples, rounds, size))
    return blocks[chosen[:, :, None], within].reshape(resamples, -1)
