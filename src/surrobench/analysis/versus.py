"""Surrogate against solver at equal accuracy and at equal runtime (``surrobench versus``; McGreivy & Hakim,
Nature Machine Intelligence 2024, arXiv:2407.07218). The solver is the Pareto front of its ladder; between front
levels time is interpolated as a power of the error (``error ~ C * cost^-p``), never extrapolated. Numpy on
measured numbers (relative L2 errors, ms)."""

from __future__ import annotations

import numpy as np

from surrobench.records.versus import BEYOND_COARSEST, BEYOND_FINEST, MATCHED, Match, SpeedupInterval, TimeMatch

#: Bootstrap resamples and confidence of the speedup's interval (Efron & Tibshirani 1993, ch. 13).
CASE_RESAMPLES = 2000
CONFIDENCE = 0.95

#: PDEBench's Fourier bands (Takamoto et al., NeurIPS 2022, ``metric_func(iLow=4, iHigh=12)``) of radial |k|.
BAND_EDGES = (4, 12)
BANDS = ("low", "mid", "high")


def pareto_front(errors: np.ndarray, times_ms: np.ndarray) -> np.ndarray:
    """Indices ``(F,)`` of the error–time front of ``errors``/``times_ms`` ``(L,)``, cheapest first."""
    errors, times_ms = np.asarray(errors, float), np.asarray(times_ms, float)
    ok = np.flatnonzero(np.isfinite(errors) & np.isfinite(times_ms) & (errors > 0) & (times_ms > 0))
    front: list[int] = []
    for i in ok[np.lexsort((errors[ok], times_ms[ok]))]:  # by time, ties by error
        if not front or errors[i] < errors[front[-1]]:
            front.append(int(i))
    return np.asarray(front, dtype=int)


def _loglog(x: float, xs: np.ndarray, ys: np.ndarray) -> float:
    """``y`` at ``x`` on the piecewise line through ``(log xs, log ys)``; ``xs`` increasing, ``x`` inside."""
    return float(np.exp(np.interp(np.log(x), np.log(xs), np.log(ys))))


def match_error(surrogate_error: float, surrogate_ms: float, errors: np.ndarray, times_ms: np.ndarray) -> Match:
    """Solver ms at ``surrogate_error`` on the front of ``(L,)`` levels, and the speedup: a :class:`Match`."""
    front = pareto_front(errors, times_ms)
    if front.size == 0:
        return Match(BEYOND_COARSEST, None, None)
    e, t = errors[front][::-1], times_ms[front][::-1]  # errors increasing
    if surrogate_error < e[0]:
        return Match(BEYOND_FINEST, None, None, float(t[0] / surrogate_ms), int(front[-1]))
    if surrogate_error > e[-1]:
        return Match(BEYOND_COARSEST, None, None, float(t[-1] / surrogate_ms), int(front[0]))
    solver_ms = _loglog(surrogate_error, e, t)
    return Match(MATCHED, solver_ms, solver_ms / surrogate_ms)


def match_time(surrogate_error: float, surrogate_ms: float, errors: np.ndarray, times_ms: np.ndarray) -> TimeMatch:
    """The solver's error at ``surrogate_ms`` on its front, against the surrogate's (arguments: :func:`match_error`)."""
    front = pareto_front(errors, times_ms)
    if front.size == 0:
        return TimeMatch(BEYOND_COARSEST, None, None)
    t, e = times_ms[front], errors[front]  # times increasing
    if surrogate_ms > t[-1]:
        return TimeMatch(BEYOND_FINEST, None, None)
    if surrogate_ms < t[0]:
        return TimeMatch(BEYOND_COARSEST, None, None)
    solver_error = _loglog(surrogate_ms, t, e)
    return TimeMatch(MATCHED, solver_error, solver_error / surrogate_error)


def crossover_level(surrogate_ms: float, errors: np.ndarray, times_ms: np.ndarray) -> int | None:
    """The most accurate front level faster than the surrogate (speedup < 1 from there); None if none."""
    faster = [int(i) for i in pareto_front(errors, times_ms) if times_ms[i] < surrogate_ms]
    return faster[-1] if faster else None


def crossover_step(matches: list[Match]) -> int | None:
    """First rollout step (1-based) where the surrogate stops winning at equal accuracy; None if never."""
    for k, m in enumerate(matches, start=1):
        value = m.speedup if m.status == MATCHED else m.bound if m.status == BEYOND_COARSEST else None
        if value is not None and value < 1:
            return k
    return None


def aggregate(case_errors: np.ndarray, case_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean error and median time over cases of each row: ``(..., n)`` -> ``(...)``."""
    return np.mean(case_errors, axis=-1), np.median(case_ms, axis=-1)


def speedup_interval(
    level_errors: np.ndarray,
    level_ms: np.ndarray,
    surrogate_errors: np.ndarray,
    surrogate_ms: np.ndarray,
    *,
    resamples: int = CASE_RESAMPLES,
    seed: int = 0,
) -> SpeedupInterval:
    """Paired bootstrap :data:`CONFIDENCE` interval of the matched speedup over cases: levels ``(L, n)``, surrogate
    ``(n,)``."""
    level_errors, level_ms = np.asarray(level_errors, float), np.asarray(level_ms, float)
    surrogate_errors, surrogate_ms = np.asarray(surrogate_errors, float), np.asarray(surrogate_ms, float)
    n = surrogate_errors.size
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    speedups = []
    for idx in draws:
        errors, times = aggregate(level_errors[:, idx], level_ms[:, idx])
        s_err, s_ms = aggregate(surrogate_errors[idx], surrogate_ms[idx])
        m = match_error(float(s_err), float(s_ms), errors, times)
        if m.status == MATCHED:
            speedups.append(m.speedup)
    if not speedups:
        return SpeedupInterval(None, None, 0.0, resamples)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(speedups, [tail, 100 - tail])
    return SpeedupInterval(float(low), float(high), len(speedups) / resamples, resamples)


def relative_l2(prediction: np.ndarray, reference: np.ndarray) -> float:
    """``||prediction - reference||_2 / ||reference||_2`` over all values (the FNO paper's relative L2 error)."""
    prediction, reference = np.asarray(prediction, float), np.asarray(reference, float)
    return float(np.linalg.norm(prediction - reference) / np.linalg.norm(reference))


def band_errors(prediction: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Relative L2 error per wavenumber band over ``(..., H, W)``; squares sum to :func:`relative_l2`'s."""
    diff = np.fft.fft2(np.asarray(prediction, float) - np.asarray(reference, float))
    h, w = diff.shape[-2:]
    ky, kx = np.fft.fftfreq(h, 1 / h), np.fft.fftfreq(w, 1 / w)
    k = np.sqrt(ky[:, None] ** 2 + kx[None, :] ** 2)
    norm = np.linalg.norm(np.fft.fft2(np.asarray(reference, float)))
    edges = (0, *BAND_EDGES, np.inf)
    return {
        band: float(np.sqrt(np.sum(np.abs(diff[..., (k >= lo) & (k < hi)]) ** 2)) / norm)
        for band, lo, hi in zip(BANDS, edges[:-1], edges[1:])
    }


def trivial_errors(inputs: list[np.ndarray], references: list[np.ndarray]) -> float:
    """The better trivial predictor's mean error: zeros (error 1) or persistence (the input, when shapes match)."""
    persistence = [
        relative_l2(x, r) for x, r in zip(inputs, references) if x is not None and np.shape(x) == np.shape(r)
    ]
    zero = 1.0
    return min(zero, float(np.mean(persistence))) if len(persistence) == len(references) else zero
