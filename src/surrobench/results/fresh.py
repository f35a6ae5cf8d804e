"""Does a recipe's speedup hold up in fresh processes? The record and its verdict.

A launch-bound eager baseline can read 1.2 ms in one process and 2.9 ms in another on the same machine
(docs/benchmarks/h200-optimize.md, "Windows and processes"). The check measures the pair again as ``surrobench
run`` in new processes, alternating which starts first, each pair of processes one unit of
:class:`surrobench.records.paired.PairedSamples`, so the fresh interval includes the between-process drift.

**Verdict.** Two readings by the one rule of :mod:`surrobench.records.paired`: is the recipe faster in the fresh
pairs' own record; and do optimize's unit speedups (its own process one unit, each of its fresh-process windows
another: :attr:`surrobench.results.optimize.ConfigOptimization.recipe_process_speedups`) differ from the fresh
pairs' beyond the margin, either way (:func:`agreement`)? Windows of one process are one unit, not several
(Hurlbert 1984, "Pseudoreplication", Ecological Monographs 54(2)).

``reproduced``: faster, and no difference from optimize; ``overlaps``: no difference, but not faster beyond
the noise; ``not_reproduced``: a difference; ``failed``: a fresh process did not finish; ``interrupted``:
Ctrl-C ended the check (the processes that finished are stored and listed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from surrobench.records import schemas
from surrobench.records.vocab import FRESH_VERDICTS
from surrobench.records.paired import PairedSamples, Speedup


@dataclass(frozen=True)
class FreshCheck(schemas.Plain):
    """The recipe and its baseline measured again in ``pairs`` pairs of fresh processes: the ``verdict``
    (:data:`surrobench.records.vocab.FRESH_VERDICTS`) and its one-line ``reason``; the ``speedup`` across them (None
    when a process failed: ``error`` its last line of output); each process's median host latency, ms, and stored
    run, in launch order; ``elapsed_s`` the wall time of them all."""

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


def process_speedups(window_speedups: Sequence[float], process_windows: int) -> tuple[float, ...]:
    """A recipe's speedup per process it was timed in, from its ``window_speedups`` (time order), the last
    ``process_windows`` of them in pairs of fresh processes: the optimize process's windows as one unit (their
    geometric mean), then each process window."""
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
    """The :class:`FreshCheck` of fresh processes given as rounds (one per process, ms per iteration; process i of
    each side is pair i) against :func:`fresh_verdict`'s ``optimized`` and ``units``; ``fields`` passed on.

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


def agreement(optimized_units: Sequence[float], fresh_units: Sequence[float]) -> Speedup:
    """Optimize's unit speedups over the fresh pairs' (> 1: fresh lower), each its own process, as two separate
    sides of :class:`~surrobench.records.paired.PairedSamples` (the module docstring's second reading).

    Raises:
        ValueError: an empty side, or a speedup that is not positive and finite.
    """
    a, b = tuple((float(u),) for u in optimized_units), tuple((float(e),) for e in fresh_units)
    units = lambda n, p: tuple((p + i, 0) for i in range(n))  # noqa: E731
    return PairedSamples(a, b, units(len(a), 0), units(len(b), len(a)), paired=False).speedup()


def fresh_verdict(
    optimized: Speedup,
    fresh: Speedup,
    baseline_ms: Sequence[float],
    recipe_ms: Sequence[float],
    units: Sequence[float] = (),
) -> tuple[str, str]:
    """(verdict, reason) of the module docstring for the ``fresh`` speedup over processes whose medians were
    ``baseline_ms`` and ``recipe_ms`` (ms, pair by pair) against ``optimized`` and its speedup per process
    ``units`` (:func:`process_speedups`; none: its median stands for one).

    Raises:
        ValueError: no pairs, unequal counts, or a speedup that is not positive.
    """
    if not baseline_ms or len(baseline_ms) != len(recipe_ms):
        raise ValueError(f"{len(baseline_ms)} baseline processes but {len(recipe_ms)} recipe processes")
    each = [b / r for b, r in zip(baseline_ms, recipe_ms)]
    units = tuple(units) or (optimized.median,)
    agree = agreement(units, each)
    differs = agree.faster() or agree.slower()
    n = f"{len(units)} " + ("process" if len(units) == 1 else "processes")
    how = (
        f"optimize's {n} over the fresh pairs {agree.median:.2f}x [{agree.ci95[0]:.2f}, {agree.ci95[1]:.2f}], "
        + ("a difference beyond" if differs else "no difference beyond")
        + f" the {agree.margin_text()}"
    )
    if fresh.faster():
        verdict = "not_reproduced" if differs else "reproduced"
    else:  # a fresh interval down to 1 reproduces no speedup, whatever it holds
        verdict = "not_reproduced" if differs else "overlaps"
        how += (
            f", but the fresh processes show no speedup beyond their noise (lower bound {fresh.ci95[0]:.2f}, "
            f"needs > {1 + fresh.margin():.3f})"
        )
    reason = (
        f"fresh {fresh.median:.2f}x [{fresh.ci95[0]:.2f}, {fresh.ci95[1]:.2f}] over {len(baseline_ms)} process pairs "
        f"({fresh.median / optimized.median - 1:+.1%} against optimize's {optimized.median:.2f}x; pair by pair "
        f"{', '.join(f'{e:.2f}x' for e in each)}), {how}; between processes the baseline median moved "
        f"{_spread(tuple(baseline_ms)):.0%}, the recipe's {_spread(tuple(recipe_ms)):.0%}"
    )
    return verdict, reason
