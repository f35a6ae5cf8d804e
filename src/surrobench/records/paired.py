"""One record of paired measurements and the one rule for "faster" (docs/design.md, "Faster").

:class:`PairedSamples` holds a baseline's and a candidate's latency samples, ms, by process, window, round and
iteration (``optimize`` as it times a pair, ``compare`` from two stored runs); every verdict about a pair reads its
:meth:`PairedSamples.speedup` and :meth:`Speedup.faster`.

**Estimate.** ``speedup = median(baseline) / median(candidate)`` over all samples (> 1 is faster).

**Interval.** The 95% percentile interval of that ratio under a hierarchical (cluster) bootstrap: processes, then
windows within each drawn process, rounds within each drawn window, iterations within each drawn round, each level
with replacement (Davison & Hinkley 1997, "Bootstrap Methods and their Application", §3.8; Kalibera & Jones 2013,
"Rigorous benchmarking in reasonable time", ISMM; Ren et al. 2010, "Nonparametric bootstrapping for hierarchical
data", J. Appl. Stat. 37(9)); a level with one unit draws that unit. Sides timed together (``paired``) share the
process and window draws, as a window's machine state is; two separate runs are drawn independently.

**Noise floor.** An A/A comparison of the baseline with itself: its even rounds against its odd rounds (one round:
its even and odd iterations), ``|median(odd) / median(even) - 1|``: the drift the same code shows against itself
within the measurement.

**Rule.** A candidate is faster when the interval's lower end clears ``1 + max(rule.min_effect, noise floor)``;
slower when the upper end lies below ``1 / (1 + that margin)``; unchanged when all of it lies between the two; else
inconclusive: the interval forms of a minimum-effect and an equivalence test (Lakens, Scheel & Isager 2018,
"Equivalence testing for psychological research", Adv. Methods Pract. Psychol. Sci. 1(2)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from surrobench.records import schemas
from surrobench.records.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

#: The practical band of the rule: speedups within 2% count as equal (run-to-run drift of GPU clocks alone moves
#: latencies by about this much, docs/sources.md, h200); ``compare --threshold`` sets it.
MIN_EFFECT = 0.02
#: The fewest rounds a window's sides need before the rule judges them: the noise floor sets even rounds against odd
#: ones and the interval draws rounds; one round holds no drift between rounds (its iterations' spread alone).
MIN_ROUNDS = 2
#: Bootstrap resamples drawn per batch, bounding the memory of one batch (resamples x samples float64 values).
_BATCH = 250


@dataclass(frozen=True)
class FasterRule:
    """The rule's parameters: ``min_effect``, the smallest speedup of interest, a fraction (0.02 = 2%)."""

    min_effect: float = MIN_EFFECT

    def __post_init__(self) -> None:
        if not 0 <= self.min_effect < 1:
            raise ValueError(f"min_effect {self.min_effect}: must be a fraction in [0, 1)")


@dataclass(frozen=True)
class Speedup(schemas.Plain):
    """``median`` (baseline / candidate median latency), its 95% CI ``ci95`` and the baseline's A/A
    ``noise_floor`` (a fraction: 0.02 means the same code moved by up to 2% against itself)."""

    median: float
    ci95: tuple[float, float]
    noise_floor: float

    def text(self) -> str:
        """``1.73x [1.55, 1.87]``: the estimate and its 95% interval."""
        return f"{self.median:.2f}x [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}]"

    def margin(self, rule: FasterRule = FasterRule()) -> float:
        """The fraction the interval must clear: the larger of ``rule.min_effect`` and the noise floor."""
        return max(rule.min_effect, self.noise_floor)

    def margin_text(self, rule: FasterRule = FasterRule(), cleared: bool | None = None) -> str:
        """The margin a lower bound must clear, in words (the practical band below which no difference counts, module
        docstring): ``noise floor 11.0%`` where the noise floor set it, else ``smallest effect of interest 2.0%``;
        ``cleared`` True: ``clears 1 + ...``; False: ``needs > 1.110 (1 + noise floor 11.0%)``."""
        m = self.margin(rule)
        what = f"{'noise floor' if self.noise_floor >= rule.min_effect else 'smallest effect of interest'} {m:.1%}"
        if cleared is None:
            return what
        return f"clears 1 + {what}" if cleared else f"needs > {1 + m:.3f} (1 + {what})"

    def faster(self, rule: FasterRule = FasterRule()) -> bool:
        """The interval's lower end clears ``1 + margin`` (module docstring, "Rule")."""
        return self.ci95[0] > 1.0 + self.margin(rule)

    def slower(self, rule: FasterRule = FasterRule()) -> bool:
        """The interval's upper end lies below ``1 / (1 + margin)``: the candidate is slower by the same rule."""
        return self.ci95[1] < 1.0 / (1.0 + self.margin(rule))

    def verdict(self, rule: FasterRule = FasterRule()) -> str:
        """``faster``, ``slower``, ``unchanged`` (the whole interval lies within ``[1 / (1 + margin), 1 + margin]``:
        an estimate within the margin is no evidence of no change, the equivalence test of Lakens et al. 2018) or
        ``inconclusive`` (:meth:`words` says why)."""
        if self.faster(rule) or self.slower(rule):
            return "faster" if self.faster(rule) else "slower"
        m = self.margin(rule)
        return "unchanged" if 1.0 / (1.0 + m) <= self.ci95[0] and self.ci95[1] <= 1.0 + m else "inconclusive"

    def words(self, rule: FasterRule = FasterRule(), verdict: str | None = None) -> tuple[str, str]:
        """The :meth:`verdict` as every command words it, ``(head, bound)``: ``faster``, the margin it clears; ``slower``;
        an interval below 1 not all past ``1 / (1 + margin)``: ``slower, within the margin``, the upper bound slower
        needs; else the lower bound faster needs and ``unchanged``, ``inconclusive, too noisy to judge`` (an interval
        wider than 2x the margin) or ``inconclusive, at the margin's edge, could be either side`` (1.04x [1.01, 1.07] at
        5%). ``verdict``: one decided beside the rule (a cut window's ``inconclusive``), alone if the rule differs."""
        ruled = self.verdict(rule)
        if verdict not in (None, ruled) or ruled == "slower":
            return verdict or ruled, ""
        if ruled == "faster":
            return ruled, self.margin_text(rule, cleared=True)
        if self.ci95[1] < 1.0:
            edge = f"{1 / (1 + self.margin(rule)):.3f} (1 / (1 + {self.margin_text(rule)}))"
            return "slower, within the margin", f"upper bound not below {edge}"
        if ruled == "inconclusive":
            wide = self.ci95[1] - self.ci95[0] > 2.0 * self.margin(rule)
            ruled += ", too noisy to judge" if wide else ", at the margin's edge, could be either side"
        return ruled, f"lower bound {self.margin_text(rule, cleared=False)}"

    def reason(self, over: str, rule: FasterRule = FasterRule()) -> str:
        """The verdict in :meth:`words` against ``over`` (what it is a speedup over): ``slower, within the margin:
        0.79x [0.66, 0.95] over the baseline, upper bound not below ...``; a faster one without its head."""
        head, bound = self.words(rule)
        text = f"{self.text()} over {over}" + (f", {bound}" if bound else "")
        return text if self.faster(rule) else f"{head}: {text}"


Rounds = tuple[tuple[float, ...], ...]
Units = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class PairedSamples:
    """A baseline's and a candidate's latency samples, ms, as rounds of per-iteration latencies (``rounds x
    iters``, a side's rounds equally long), with the ``(process, window)`` of each round (equal ids are one unit);
    ``paired`` when both were timed together (the same units, rounds interleaved), False for two separate runs.

    Raises:
        ValueError: an empty side, rounds of unequal length, a latency that is not positive and finite, units
            that do not match the rounds, or ``paired`` sides whose units differ.
    """

    baseline: Rounds
    candidate: Rounds
    baseline_units: Units
    candidate_units: Units
    paired: bool = True

    def __post_init__(self) -> None:
        for rounds, units in ((self.baseline, self.baseline_units), (self.candidate, self.candidate_units)):
            x = _checked(rounds)
            if not (np.isfinite(x).all() and (x > 0).all()):
                raise ValueError("latencies must be positive and finite")
            if len(units) != len(rounds):
                raise ValueError(f"{len(rounds)} rounds but {len(units)} units")
        if self.paired and list(dict.fromkeys(self.baseline_units)) != list(dict.fromkeys(self.candidate_units)):
            raise ValueError("paired sides must hold the same (process, window) units, in the same order")

    @classmethod
    def interleaved(
        cls, baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]], *, windows: Sequence[int] = ()
    ) -> "PairedSamples":
        """A pair timed together in one process, ``windows`` each round's window id (one window when empty; a window
        cut short holds fewer rounds), window w of one timed with window w of the other.

        Raises:
            ValueError: sides of unequal round counts, or not one window id per round.
        """
        windows = windows or [0] * len(baseline)
        if len(baseline) != len(candidate) or len(windows) != len(baseline):
            raise ValueError(f"{len(baseline)}, {len(candidate)} rounds do not pair with {len(windows)} window ids")
        units = tuple((0, w) for w in windows)
        return cls(_rounds(baseline), _rounds(candidate), units, units)

    @classmethod
    def separate(cls, baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]]) -> "PairedSamples":
        """Two separate runs, each its own process and window, given as their rounds."""
        return cls(
            _rounds(baseline), _rounds(candidate), ((0, 0),) * len(baseline), ((1, 0),) * len(candidate), paired=False
        )

    def add_windows(
        self, baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]], *, rounds: int, process: int
    ) -> "PairedSamples":
        """More windows of ``rounds`` rounds a side timed together in process ``process`` (a new id: a fresh
        process), appended after the units held.

        Raises:
            ValueError: as the constructor, or round counts that are not a multiple of ``rounds``.
        """
        if len(baseline) != len(candidate) or len(baseline) % rounds:
            raise ValueError(f"{len(baseline)}, {len(candidate)} rounds do not split into windows of {rounds}")
        units = tuple((process, i // rounds) for i in range(len(baseline)))
        return PairedSamples(
            self.baseline + _rounds(baseline),
            self.candidate + _rounds(candidate),
            self.baseline_units + units,
            self.candidate_units + units,
            self.paired,
        )

    def speedup(self) -> Speedup:
        """The :class:`Speedup` of the candidate over the baseline (module docstring)."""
        estimate, ci95 = self.ratio(0.5)
        return Speedup(estimate, ci95, noise_floor(self.baseline))

    def ratio(self, q: float) -> tuple[float, tuple[float, float]]:
        """``(quantile_q(baseline) / quantile_q(candidate), its 95% interval)``: ``q`` = 0.5 is the speedup,
        0.95 the P95's; quantiles interpolate linearly (numpy's default, Hyndman & Fan type 7)."""
        b, c = (np.asarray(s, dtype=np.float64) for s in (self.baseline, self.candidate))
        estimate = float(np.quantile(b, q) / np.quantile(c, q))
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        values = []
        for start in range(0, BOOTSTRAP_RESAMPLES, _BATCH):
            n = min(_BATCH, BOOTSTRAP_RESAMPLES - start)
            shared = _tree_draws(self.baseline_units, n, rng) if self.paired else None
            qb = _resampled_quantile(b, self.baseline_units, q, n, rng, shared)
            qc = _resampled_quantile(c, self.candidate_units, q, n, rng, shared)
            values.append(qb / qc)
        lo, hi = np.percentile(np.concatenate(values), [2.5, 97.5])
        return estimate, (float(lo), float(hi))

    def unit_speedups(self) -> list[float]:
        """Each ``(process, window)``'s own ratio of medians, in the order held: how far the pair moved between
        windows and processes (paired records only)."""
        b, c = np.asarray(self.baseline), np.asarray(self.candidate)
        order = list(dict.fromkeys(self.baseline_units))
        bu, cu = np.asarray(self.baseline_units), np.asarray(self.candidate_units)
        return [float(np.median(b[(bu == u).all(1)]) / np.median(c[(cu == u).all(1)])) for u in order]


def break_even_calls(setup_ms: float, ref_setup_ms: float, median_ms: float, ref_median_ms: float) -> float | None:
    """Calls after which a remedy has paid for its extra setup (compilation, capture, autotuning): ``(setup - ref_setup)
    / (ref_median - median)``; 0 when it costs no extra setup, None when it saves nothing per call (it never pays)."""
    saved = ref_median_ms - median_ms
    return None if saved <= 0 else max(0.0, (setup_ms - ref_setup_ms) / saved)


def split_rounds(samples: Sequence[float], rounds: int) -> Rounds:
    """``samples`` as ``rounds`` equal consecutive rounds; one round when they do not split evenly."""
    if rounds < 1 or len(samples) % rounds:
        rounds = 1
    size = len(samples) // rounds
    return tuple(tuple(samples[i * size : (i + 1) * size]) for i in range(rounds))


def _rounds(rounds: Sequence[Sequence[float]]) -> Rounds:
    return tuple(tuple(float(v) for v in r) for r in rounds)


def _checked(rounds: Sequence[Sequence[float]]) -> np.ndarray:
    if not rounds or len({len(r) for r in rounds}) != 1 or not len(rounds[0]):
        raise ValueError("rounds must be non-empty and of equal length")
    return np.asarray(rounds, dtype=np.float64)


def noise_floor(rounds: Sequence[Sequence[float]]) -> float:
    """The A/A noise floor of a baseline's rounds, a fraction >= 0 (module docstring). One round is split into its
    even and odd iterations instead (no between-round drift is seen then).

    Raises:
        ValueError: no samples, or rounds of unequal length.
    """
    x = _checked(rounds)
    a, b = (x[0::2], x[1::2]) if len(rounds) >= 2 else (x.ravel()[0::2], x.ravel()[1::2])
    return abs(float(np.median(b) / np.median(a)) - 1.0) if a.size and b.size else 0.0


@dataclass(frozen=True)
class _Tree:
    """The units of one side: ``windows[p]`` the global window ids of process ``p``; ``rounds[w]`` the round
    indices of window ``w``."""

    windows: list[np.ndarray]
    rounds: list[np.ndarray]


def _tree(units: Units) -> _Tree:
    procs = list(dict.fromkeys(p for p, _ in units))
    keys = list(dict.fromkeys(units))
    windows = [np.asarray([i for i, k in enumerate(keys) if k[0] == p]) for p in procs]
    return _Tree(windows, [np.asarray([i for i, u in enumerate(units) if u == k]) for k in keys])


def _tree_draws(units: Units, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws of processes, then windows within each drawn process: ``(global window ids, active mask)``, both
    ``(n, processes, max windows of a process)``."""
    windows = _tree(units).windows
    return _draw(windows, rng.integers(0, len(windows), size=(n, len(windows))), rng)


def _draw(groups: list[np.ndarray], which: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each group index in ``which``, as many draws with replacement among that group's members as the
    largest group has: ``(members drawn, real mask)``, each ``which.shape + (largest group,)``; a smaller group's
    draws past its size are padding, masked out."""
    counts = np.asarray([len(g) for g in groups])
    offsets, order, width = np.concatenate(([0], np.cumsum(counts)[:-1])), np.concatenate(groups), int(counts.max())
    local = (rng.random((*which.shape, width)) * counts[which][..., None]).astype(np.int64)
    drawn = order[offsets[which][..., None] + np.minimum(local, counts[which][..., None] - 1)]
    return drawn, np.arange(width) < counts[which][..., None]


def _resampled_quantile(
    x: np.ndarray,
    units: Units,
    q: float,
    n: int,
    rng: np.random.Generator,
    shared: tuple[np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """The ``q`` quantile of ``n`` hierarchical resamples of the rounds ``x`` (``rounds x iters``) whose units are
    ``units``: processes and windows from ``shared`` (the pair's shared draws) or drawn here, then rounds within
    each window and iterations within each round. Resamples of unequal size (units of unequal size) are padded
    and their quantile taken over the real values only."""
    windows, active = shared if shared is not None else _tree_draws(units, n, rng)
    rounds, real = _draw(_tree(units).rounds, windows, rng)
    real &= active[..., None]
    iters = x.shape[1]
    picked = x[rounds[..., None], rng.integers(0, iters, size=(*rounds.shape, iters))]
    picked = np.where(real[..., None], picked, np.nan).reshape(n, -1)
    if not np.isnan(picked).any():
        return np.quantile(picked, q, axis=1)
    sizes = (~np.isnan(picked)).sum(axis=1)
    ordered = np.sort(picked, axis=1)  # NaN sorts last
    pos = q * (sizes - 1)
    lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
    rows = np.arange(n)
    return ordered[rows, lo] + (pos - lo) * (ordered[rows, hi] - ordered[rows, lo])
