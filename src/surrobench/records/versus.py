"""The ``surrobench/versus-v1`` document: a solver's ladder, the surrogate(s) on the same cases, and the
surrogate against the solver at equal accuracy and equal runtime (the rules: :mod:`surrobench.analysis.versus`).

Units: times in ms per case, errors relative L2 (dimensionless), throughput in cases per second.

Versus records read back and compared (:func:`load_versus`, :func:`compare_versus`),
torch-free so ``compare`` starts without torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records import schemas

#: Where the surrogate's error falls on the solver's front.
MATCHED = "matched"
#: The surrogate is more accurate than the ladder's most accurate level: the matched solver time is past the
#: ladder; the speedup over that level is a lower bound.
BEYOND_FINEST = "more_accurate_than_ladder"
#: The surrogate is less accurate than the ladder's cheapest level: the speedup over that level is an upper bound.
BEYOND_COARSEST = "less_accurate_than_ladder"


@dataclass(frozen=True)
class Match(schemas.Plain):
    """The surrogate against the solver at its own error (equal accuracy): ``status`` :data:`MATCHED`,
    :data:`BEYOND_FINEST` or :data:`BEYOND_COARSEST`; the solver's time at that error on the front (log-log
    interpolation) and ``speedup`` ``solver_ms / surrogate_ms``, None unless matched; else ``bound``, the speedup over
    the end level (``bound_level``) the error lies past: a lower bound past the finest, an upper past the coarsest."""

    status: str
    solver_ms: float | None
    speedup: float | None
    bound: float | None = None
    bound_level: int | None = None


@dataclass(frozen=True)
class TimeMatch(schemas.Plain):
    """The surrogate against the solver at its own time (equal runtime): ``status`` :data:`MATCHED`,
    :data:`BEYOND_FINEST` (slower than every front level) or :data:`BEYOND_COARSEST` (faster than every level);
    ``solver_error`` at the surrogate's time (log-log interpolation) and ``error_ratio`` ``solver_error /
    surrogate_error`` (> 1: the surrogate is more accurate), None unless matched."""

    status: str
    solver_error: float | None
    error_ratio: float | None


@dataclass(frozen=True)
class SpeedupInterval(schemas.Plain):
    """The bootstrap interval of the matched-error speedup over cases: the percentile interval's ends over the
    resamples that matched (None when none did), the share of the ``resamples`` whose surrogate error fell inside
    the ladder (below 1 the point estimate sits near an end of the ladder)."""

    low: float | None
    high: float | None
    matched_fraction: float
    resamples: int


@dataclass(frozen=True)
class Timing(schemas.Plain):
    """Times of one solver level or surrogate setting, ms per case: each case's median over its timed calls
    (``case_ms``, ``(n,)``), their median (``median_ms``) and its 95% percentile-bootstrap interval over cases."""

    median_ms: float
    ci95_ms: tuple[float, float]
    case_ms: tuple[float, ...]


@dataclass(frozen=True)
class Accuracy(schemas.Plain):
    """Errors against the reference on the same cases: the mean relative L2 ``error``, each case's (``case_errors``,
    ``(n,)``), the mean band errors (``bands``: low, mid, high, :func:`surrobench.analysis.versus.band_errors`) and, for
    a rollout, the mean error at each step (``error_vs_step``, ``(K,)``; one value for a single step)."""

    error: float
    case_errors: tuple[float, ...]
    bands: dict[str, float]
    error_vs_step: tuple[float, ...]


@dataclass(frozen=True)
class SolverLevel(schemas.Plain):
    """One rung of the solver's ladder; ``on_front``: on the error–time Pareto front (not beaten on both).
    ``batch_ms``: the median time of one call on a batch of cases (the problem's ``batched`` solve; None when it
    solves one case per call), beside ``timing``'s single case."""

    INLINE = ("accuracy", "timing")

    name: str
    accuracy: Accuracy
    timing: Timing
    on_front: bool
    batch_ms: float | None = None


@dataclass(frozen=True)
class OneTimeCosts(schemas.Plain):
    """What a deployment pays apart from the timed calls, ms: once, ``load_ms`` (build the module, copy its weights
    to the device) and ``first_call_ms`` (the first call past a warm one's time: compilation, capture); per call,
    ``h2d_ms`` (one case's inputs from host memory to the device)."""

    load_ms: float
    first_call_ms: float
    h2d_ms: float

    @property
    def once_ms(self) -> float:
        return self.load_ms + self.first_call_ms


@dataclass(frozen=True)
class SurrogateResult(schemas.Plain):
    """The surrogate under one setting (precision, mode, a recipe's settings) on the versus cases.

    Attributes:
        label: the setting as a config label (``fno2d 64 b1 tf32 cudagraph``); ``settings`` its non-defaults.
        accuracy, timing: as a solver level's, batch 1 (single-case latency; a rollout: K forwards).
        batch, batch_ms, throughput_cases_per_s: the batched call's median time and cases per second.
        one_time: :class:`OneTimeCosts`; ``amortized_ms``: ``timing.median_ms + one_time.once_ms / amortize_calls``.
        match, interval, time_match, amortized_match: equal accuracy (with the bootstrap interval over cases),
            equal runtime, and equal accuracy with the amortised time.
        crossover_level: the most accurate solver level faster than the surrogate (None: none is).
        batch_match: equal accuracy in throughput: the surrogate's time per case in its batched call against the
            solver's in its own batched call (the same batch); None when the problem's solve is not batched.
        step_matches, crossover_step: a rollout's equal-accuracy match at each step and the first step whose
            speedup falls below 1 (None: never; single-step problems: empty, None).
    """

    INLINE = ("accuracy", "timing")

    label: str
    settings: dict
    accuracy: Accuracy
    timing: Timing
    batch: int
    batch_ms: float
    throughput_cases_per_s: float
    one_time: OneTimeCosts
    amortized_ms: float
    match: Match
    interval: SpeedupInterval
    time_match: TimeMatch
    amortized_match: Match
    crossover_level: int | None
    step_matches: tuple[Match, ...] = ()
    crossover_step: int | None = None
    batch_match: Match | None = None


@dataclass(frozen=True)
class VersusRecord(schemas.Plain):
    """A ``versus`` result: the solver's ladder and each surrogate setting, on ``cases`` cases from ``seed``.

    ``trivial_error``: the error of the better trivial predictor (zeros, or the input itself), the bar a surrogate
    must clear to be compared at all. ``amortize_calls``: the calls one-time costs are spread over.
    ``reference``: what the errors are measured against (``problem.reference`` or the finest level's name).
    """

    SCHEMA = schemas.VERSUS

    problem: str
    device: str
    cases: int
    seed: int
    steps: int
    reference: str
    trivial_error: float
    amortize_calls: int
    levels: tuple[SolverLevel, ...]
    surrogates: tuple[SurrogateResult, ...]
    created: str = ""
    environment: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict) -> VersusRecord:
        """Read a ``surrobench/versus-v1`` document back.

        Raises:
            UsageError: another document, or a key missing or of the wrong kind.
        """
        if not isinstance(d, dict) or d.get("schema") != schemas.VERSUS:
            got = d.get("schema") if isinstance(d, dict) else type(d).__name__
            raise UsageError(f"not a {schemas.VERSUS} document (schema {got!r}): give a file written by versus --json")
        try:
            return super().from_json(d)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{schemas.VERSUS} document: {type(exc).__name__}: {exc}") from None


def load_versus(path: str | Path) -> VersusRecord:
    """A ``surrobench/versus-v1`` file (``versus --json``) read back.

    Raises:
        UsageError: unreadable, not JSON, or another document.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"versus file {str(path)!r}: cannot read it: {type(exc).__name__}") from None
    return VersusRecord.from_json(data)


#: A comparison's verdict on the matched-error speedup: the two bootstrap intervals apart, or overlapping.
HIGHER, LOWER, INCONCLUSIVE, UNMATCHED = "higher", "lower", "inconclusive", "not_matched"


@dataclass(frozen=True)
class VersusComparison:
    """Two versus records compared setting by setting: ``rows``, one dict per surrogate label in both (records of
    one setting each pair those two) with each side's error, matched-error speedup and interval, and the verdict:
    :data:`HIGHER` / :data:`LOWER` when NEW's interval lies wholly above / below BASE's, :data:`INCONCLUSIVE` when
    they overlap, :data:`UNMATCHED` when either side's error lies past its ladder."""

    base: VersusRecord
    new: VersusRecord
    rows: tuple[dict, ...]

    def to_json(self) -> dict:
        return {"schema": schemas.COMPARE_VERSUS, "rows": [dict(r) for r in self.rows]}


def _verdict(base: SurrogateResult, new: SurrogateResult) -> str:
    if base.interval.low is None or new.interval.low is None or {base.match.status, new.match.status} != {MATCHED}:
        return UNMATCHED
    if new.interval.low > base.interval.high:
        return HIGHER
    if new.interval.high < base.interval.low:
        return LOWER
    return INCONCLUSIVE


def compare_versus(base: VersusRecord | str | Path, new: VersusRecord | str | Path) -> VersusComparison:
    """Compare two versus records (or ``versus --json`` files) at equal accuracy, setting by setting.

    Raises:
        UsageError: a file that is not a versus document; no surrogate setting in common.
    """
    base = base if isinstance(base, VersusRecord) else load_versus(base)
    new = new if isinstance(new, VersusRecord) else load_versus(new)
    pairs = [(b, n) for b in base.surrogates for n in new.surrogates if b.label == n.label]
    if not pairs and len(base.surrogates) == len(new.surrogates) == 1:
        pairs = [(base.surrogates[0], new.surrogates[0])]
    if not pairs:
        raise UsageError("the two versus records have no surrogate setting in common (compare labels with one each)")
    rows = tuple(
        {
            "label": n.label if b.label == n.label else f"{b.label} → {n.label}",
            "base_error": b.accuracy.error,
            "new_error": n.accuracy.error,
            "base_speedup": b.match.speedup,
            "new_speedup": n.match.speedup,
            "base_interval": [b.interval.low, b.interval.high],
            "new_interval": [n.interval.low, n.interval.high],
            "verdict": _verdict(b, n),
        }
        for b, n in pairs
    )
    return VersusComparison(base, new, rows)
