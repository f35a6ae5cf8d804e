"""Does a recipe's speedup hold up in fresh processes? The record and its verdict.

``optimize`` measures every candidate interleaved with the baseline inside one process, and its recipe in a
few more timing windows, some in pairs of fresh processes (:meth:`surrobench.tune.search.Search.confirm`); a
baseline can move between processes while its recipe stays put (docs/benchmarks/h200-optimize.md). The check
measures the pair again as ``surrobench run`` in new processes, alternating which one starts first (B R, R B,
...), and treats each pair of processes as one unit of
:class:`surrobench.results.paired.PairedSamples` (ratio of medians, its bootstrap CI drawn over the pairs, then
over iterations within them), so the fresh interval includes the between-process drift.

**Verdict.** Both sides are compared process by process: optimize's units are its own process (the geometric
mean of the windows timed there) and each of its windows timed in a pair of fresh processes
(:attr:`surrobench.results.optimize.ConfigOptimization.recipe_process_speedups`); the check's units are its
pairs (each pair's baseline median over its recipe median). Windows of one process are not independent
units for a claim about other processes: they share that process's state (docs/benchmarks/h200-optimize.md),
and counting them as such is pseudoreplication (Hurlbert, "Pseudoreplication and the
design of ecological field experiments", Ecological Monographs 54(2), 1984). The question "does a
replication agree with the original?" is answered by the 95% *prediction interval* of the replication's
estimate, not by the original's confidence interval, which a replication of a few units misses far more often
than 5% of the time even when nothing changed (Patil, Peng & Leek, "What should researchers expect when they
replicate studies?", Perspectives on Psychological Science 11(4), 2016; Spence & Stanley, PLoS ONE 11(9),
2016). On the logarithm of the unit speedups (a ratio's scale), with ``n`` optimize units and ``m`` pairs and their
pooled variance ``s^2`` (``n + m - 2`` degrees of freedom, Student), the interval for the fresh pairs' mean is
``mean(units) +- t(0.975, n + m - 2) * s * sqrt(1/n + 1/m)``: the two-sample t-test's acceptance region,
given back as speedups (the geometric means).

``reproduced``: the fresh processes are faster by the rule of :mod:`surrobench.results.paired` (their
interval's lower end clears 1 + the larger of the smallest effect and their noise floor), and the fresh median lies inside the optimize CI or the
fresh pairs' geometric mean inside the replication interval; ``overlaps``: one of those holds, but the fresh
processes showed no speedup beyond their noise; ``not_reproduced``: neither holds; ``failed``: a fresh process
did not finish; ``interrupted``: Ctrl-C ended the check (the processes that finished are stored and listed).
The reason gives the fresh median's difference from optimize's in percent, each pair's speedup, the interval
that decided, and how far each side moved between processes.

The interval is as wide as the units spread between processes. With optimize's own process as its only unit
(``--processes 0``), the variance comes from the fresh pairs alone, with few degrees of freedom: a wide
interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from surrobench.records import schemas
from surrobench.records.vocab import FRESH_VERDICTS
from surrobench.results.paired import PairedSamples, Speedup


@dataclass(frozen=True)
class FreshCheck(schemas.Plain):
    """The recipe and its baseline measured again in ``pairs`` pairs of fresh processes.

    Attributes:
        pairs: pairs of processes asked for.
        verdict: one of :data:`surrobench.records.vocab.FRESH_VERDICTS`; ``reason`` says why in one line.
        speedup: baseline over recipe across the fresh processes, None when a process failed.
        baseline_ms, recipe_ms: each fresh process's median host latency, ms, in launch order.
        run_ids: the stored runs of the fresh processes, in launch order.
        error: the failed process's last line of output (``failed``).
        elapsed_s: wall time of all fresh processes, seconds.
    """

    pairs: int
    verdict: str
    reason: str
    speedup: Speedup | None = None
    baseline_ms: tuple[float, ...] = ()
    recipe_ms: tuple[float, ...] = ()
    run_ids: tuple[str, ...] = ()
    error: str | None = None
    elapsed_s: float = 0.0

    def __post_init__(self) -> None:
        if self.verdict not in FRESH_VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; one of {FRESH_VERDICTS}")


def process_medians(rounds: list[list[float]]) -> tuple[float, ...]:
    """Each fresh process's median host latency, ms, in launch order (``rounds``: one per process)."""
    return tuple(float(np.median(r)) for r in rounds)


def _spread(medians: tuple[float, ...]) -> float:
    """max / min - 1 of per-process medians: how far the same command moved between processes."""
    return max(medians) / min(medians) - 1.0


def replication_interval(units: Sequence[float], pairs: Sequence[float]) -> tuple[float, float]:
    """The 95% interval in which the geometric mean of ``pairs`` (fresh unit speedups, m >= 1) is expected when
    they measure what the ``units`` (optimize's unit speedups, n >= 1) measured: ``exp(mean(log units) +-
    t(0.975, n + m - 2) * s * sqrt(1/n + 1/m))`` with ``s`` the pooled standard deviation of the log speedups
    (module docstring; Patil, Peng & Leek 2016). With n + m < 3 there is no variance to pool: the interval is
    the units' geometric mean alone.

    Raises:
        ValueError: an empty side, or a speedup that is not positive.
    """
    from scipy import stats as sps  # on first use: scipy.stats takes a second to import, the CLI starts without it

    a, b = np.asarray(units, dtype=np.float64), np.asarray(pairs, dtype=np.float64)
    if (
        a.size == 0
        or b.size == 0
        or not (np.all(a > 0) and np.all(b > 0) and np.isfinite(a).all() and np.isfinite(b).all())
    ):
        raise ValueError("need positive speedups on both sides")
    x, y = np.log(a), np.log(b)
    df = x.size + y.size - 2
    center = float(x.mean())
    if df < 1:
        return (float(np.exp(center)),) * 2
    pooled = (float(((x - x.mean()) ** 2).sum()) + float(((y - y.mean()) ** 2).sum())) / df
    half = float(sps.t.ppf(0.975, df)) * np.sqrt(pooled) * np.sqrt(1 / x.size + 1 / y.size)
    return (float(np.exp(center - half)), float(np.exp(center + half)))


def process_speedups(window_speedups: Sequence[float], process_windows: int) -> tuple[float, ...]:
    """A recipe's speedup per process it was timed in, from its ``window_speedups`` (time order) of which the
    last ``process_windows`` were timed in pairs of fresh processes: the windows of the optimize process as one
    unit (their geometric mean: they share that process, module docstring), then each process window."""
    from scipy import stats as sps  # on first use: scipy.stats takes a second to import, the CLI starts without it

    inside = tuple(window_speedups[: len(window_speedups) - process_windows])
    rest = tuple(window_speedups[len(inside) :])
    return ((float(sps.gmean(inside)),) if inside else ()) + rest


def judge_fresh(
    optimized: Speedup,
    baseline_rounds: list[list[float]],
    recipe_rounds: list[list[float]],
    *,
    units: Sequence[float] = (),
    **fields,
) -> FreshCheck:
    """The :class:`FreshCheck` of fresh processes given as rounds (one per process, ms per iteration, equal
    lengths; process i of each side is pair i) against the ``optimized`` speedup that ``optimize`` measured, with
    its speedup per process in ``units`` (:func:`process_speedups`; none given: its median stands for one
    process). ``fields`` are passed on (``pairs``, ``run_ids``, ``elapsed_s``).

    Raises:
        ValueError: fewer than one process a side, unequal counts or lengths, or a speedup that is not positive.
    """
    each = tuple((i, 0) for i in range(len(baseline_rounds)))  # pair i: baseline process i, recipe process i
    if len(recipe_rounds) != len(each):
        raise ValueError(f"{len(baseline_rounds)} baseline processes but {len(recipe_rounds)} recipe processes")
    fresh = PairedSamples(tuple(map(tuple, baseline_rounds)), tuple(map(tuple, recipe_rounds)), each, each).speedup()
    base_ms, recipe_ms = process_medians(baseline_rounds), process_medians(recipe_rounds)
    verdict, reason = fresh_verdict(optimized, fresh, base_ms, recipe_ms, units)
    return FreshCheck(verdict=verdict, reason=reason, speedup=fresh, baseline_ms=base_ms, recipe_ms=recipe_ms, **fields)


def fresh_verdict(
    optimized: Speedup,
    fresh: Speedup,
    baseline_ms: Sequence[float],
    recipe_ms: Sequence[float],
    units: Sequence[float] = (),
) -> tuple[str, str]:
    """(verdict, reason) of the module docstring for the ``fresh`` speedup over processes whose medians were
    ``baseline_ms`` and ``recipe_ms`` (ms, pair by pair) against ``optimized`` and its ``units``; what
    :func:`judge_fresh` decides, also for a stored optimize-v1 ``fresh`` object.

    Raises:
        ValueError: no pairs, unequal counts, or a speedup that is not positive.
    """
    from scipy import stats as sps  # on first use: scipy.stats takes a second to import, the CLI starts without it

    if not baseline_ms or len(baseline_ms) != len(recipe_ms):
        raise ValueError(f"{len(baseline_ms)} baseline processes but {len(recipe_ms)} recipe processes")
    each = [b / r for b, r in zip(baseline_ms, recipe_ms)]
    units = tuple(units) or (optimized.median,)
    lo, hi = optimized.ci95
    r_lo, r_hi = replication_interval(units, each)
    mean = float(sps.gmean(each))
    in_ci, in_replication = lo <= fresh.median <= hi, r_lo <= mean <= r_hi
    where = f"the optimize CI [{lo:.2f}, {hi:.2f}]"
    if in_ci:
        how = f"inside {where}"
    else:
        how = (
            f"outside {where}; the fresh pairs' geometric mean {mean:.2f}x {'inside' if in_replication else 'outside'}"
            f" the 95% replication interval [{r_lo:.2f}, {r_hi:.2f}] of optimize's {len(units)} "
            + ("process" if len(units) == 1 else "processes")
        )
    if not fresh.faster():  # a fresh interval down to 1 reproduces no speedup, whatever it holds
        verdict = "overlaps" if in_ci or in_replication else "not_reproduced"
        how += (
            f", but the fresh processes show no speedup beyond their noise (lower bound {fresh.ci95[0]:.2f}, "
            f"needs > {1 + fresh.margin():.3f})"
        )
    else:
        verdict = "reproduced" if in_ci or in_replication else "not_reproduced"
    reason = (
        f"fresh {fresh.median:.2f}x [{fresh.ci95[0]:.2f}, {fresh.ci95[1]:.2f}] over {len(baseline_ms)} process pairs "
        f"({fresh.median / optimized.median - 1:+.1%} against optimize's {optimized.median:.2f}x; pair by pair "
        f"{', '.join(f'{e:.2f}x' for e in each)}), {how}; between processes the baseline median moved "
        f"{_spread(tuple(baseline_ms)):.0%}, the recipe's {_spread(tuple(recipe_ms)):.0%}"
    )
    return verdict, reason
