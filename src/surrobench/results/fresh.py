"""Does a recipe's speedup hold up in fresh processes? The record and its verdict.

``optimize`` measures every candidate interleaved with the baseline inside one process. Its CI covers the
drift *between rounds* of that process, not between processes: a launch-bound eager baseline can read 1.2
ms in one process and 2.9 ms in another on the same machine (docs/benchmarks/h200-optimize.md), while a
CUDA-graph recipe stays put. The check measures the pair again as ``surrobench run`` in new processes,
alternating which one starts first (B R, R B, ...), and treats each process as one round of
:func:`surrobench.results.speedup.speedup` (ratio of medians, two-stage bootstrap CI over processes, then
over iterations within them), so the fresh interval includes the between-process drift.

**Verdict.** ``reproduced``: the fresh processes are faster by the rule of
:mod:`surrobench.results.speedup` (their interval's lower end clears 1 + their noise floor), and the fresh
median lies inside the optimize CI or optimize's median inside the fresh CI (either interval holds the other
measurement's estimate: the second is the criterion "original effect size within the replication's 95% CI"
of the Open Science Collaboration, "Estimating the reproducibility of psychological science", Science 349,
2015); ``overlaps``: the intervals overlap, but the fresh processes showed no speedup beyond their noise or
neither interval holds the other's median;
``not_reproduced``: disjoint intervals; ``failed``: a fresh process did not finish; ``interrupted``: Ctrl-C
ended the check (the processes that finished are stored and listed). The reason says which
interval held which median, and gives the fresh median's difference from optimize's in percent.

Optimize's interval is drawn over the timing windows the recipe shared with the baseline
(:func:`surrobench.results.speedup.speedup`, "Windows"), so it covers the drift between windows a minute
apart; the context of a process (its memory layout, what else it has built) can still move a recipe by a
fraction of a percent where the windows agree, as a PINN's tf32 read 1.868x [1.866, 1.869] in optimize and
1.863x [1.857, 1.869] fresh on the H200 (docs/benchmarks/h200-optimize.md, "Windows and processes"); the
fresh interval, drawn over processes, holds that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from surrobench.results.speedup import Speedup, speedup

#: The fresh-run verdicts (module docstring).
FRESH_VERDICTS = ("reproduced", "overlaps", "not_reproduced", "failed", "interrupted")


@dataclass(frozen=True)
class FreshCheck:
    """The recipe and its baseline measured again in ``pairs`` pairs of fresh processes.

    Attributes:
        pairs: pairs of processes asked for.
        verdict: one of :data:`FRESH_VERDICTS`; ``reason`` says why in one line.
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

    def to_json(self) -> dict:
        """The optimize-v1 ``fresh`` object of a config."""
        return {
            "pairs": self.pairs,
            "verdict": self.verdict,
            "reason": self.reason,
            "speedup": self.speedup.to_json() if self.speedup else None,
            "baseline_ms": list(self.baseline_ms),
            "recipe_ms": list(self.recipe_ms),
            "run_ids": list(self.run_ids),
            "error": self.error,
            "elapsed_s": self.elapsed_s,
        }


def process_medians(rounds: list[list[float]]) -> tuple[float, ...]:
    """Each fresh process's median host latency, ms, in launch order (``rounds``: one per process)."""
    return tuple(float(np.median(r)) for r in rounds)


def _spread(medians: tuple[float, ...]) -> float:
    """max / min - 1 of per-process medians: how far the same command moved between processes."""
    return max(medians) / min(medians) - 1.0


def judge_fresh(
    optimized: Speedup, baseline_rounds: list[list[float]], recipe_rounds: list[list[float]], **fields
) -> FreshCheck:
    """The :class:`FreshCheck` of fresh processes given as rounds (one per process, ms per iteration, equal
    lengths) against the ``optimized`` speedup that ``optimize`` measured. ``fields`` are passed on
    (``pairs``, ``run_ids``, ``elapsed_s``).

    Raises:
        ValueError: fewer than one process a side, or processes of unequal length.
    """
    fresh = speedup(baseline_rounds, recipe_rounds)
    lo, hi = optimized.ci95
    where = f"the optimize CI [{lo:.2f}, {hi:.2f}]"
    overlap = fresh.ci95[0] <= hi and lo <= fresh.ci95[1]
    if not fresh.faster:  # a fresh interval down to 1 reproduces no speedup, whatever it holds
        verdict = "overlaps" if overlap else "not_reproduced"
        how = (
            f"{'overlapping' if overlap else 'outside'} {where}, but the fresh processes show no speedup beyond "
            f"their noise (lower bound {fresh.ci95[0]:.2f}, needs > {1 + fresh.noise_floor:.3f})"
        )
    elif lo <= fresh.median <= hi:
        verdict, how = "reproduced", f"inside {where}"
    elif fresh.ci95[0] <= optimized.median <= fresh.ci95[1]:
        verdict, how = "reproduced", f"outside {where}, but optimize's {optimized.median:.2f}x lies inside the fresh CI"
    elif overlap:
        verdict, how = "overlaps", f"outside {where}, the intervals overlap"
    else:
        verdict, how = "not_reproduced", f"outside {where}, the intervals disjoint"
    base_ms, recipe_ms = process_medians(baseline_rounds), process_medians(recipe_rounds)
    reason = (
        f"fresh {fresh.median:.2f}x [{fresh.ci95[0]:.2f}, {fresh.ci95[1]:.2f}] over {len(base_ms)} process pairs "
        f"({fresh.median / optimized.median - 1:+.1%} against optimize's {optimized.median:.2f}x), "
        f"{how}; between processes the baseline median moved "
        f"{_spread(base_ms):.0%}, the recipe's {_spread(recipe_ms):.0%}"
    )
    return FreshCheck(verdict=verdict, reason=reason, speedup=fresh, baseline_ms=base_ms, recipe_ms=recipe_ms, **fields)
