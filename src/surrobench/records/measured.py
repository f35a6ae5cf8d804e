"""What diagnose measured for a remedy a finding names (:class:`MeasuredRemedy`), and how a finding's gain is
known (:data:`GAIN_KINDS`).

Diagnose measures the remedies a finding's action names (:data:`surrobench.records.vocab.REMEDIES`) with optimize's
search core (:mod:`surrobench.tune.advice`) and records each outcome here; a finding none of whose remedies was
measured keeps its ``estimate``.
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.records import schemas
from surrobench.records.vocab import remedy_id

#: How a finding's gain is known: ``measured`` (one of its remedies was timed against the baseline) or
#: ``estimate`` (a model of the evidence: FLOPs, bytes, launch gaps, counters; None when not computable).
GAIN_KINDS = ("measured", "estimate")

#: The outcome of one remedy measured for a finding: ``faster``, ``slower`` and ``no-difference`` by the one rule
#: (:meth:`surrobench.records.paired.Speedup.verdict`; ``no-difference`` holds its ``unchanged`` and
#: ``inconclusive``); ``rejected-by-accuracy`` (its output's relative L2 error over the tolerance, never timed);
#: ``failed`` (it raised while built or run); ``infeasible`` (known not to apply, with the reason);
#: ``not-measured`` (the budget ran out before it, or the budget was 0).
MEASURED_VERDICTS = (
    "faster",
    "slower",
    "no-difference",
    "rejected-by-accuracy",
    "failed",
    "infeasible",
    "not-measured",
)
#: The verdicts of a remedy that ran and was judged: none of them is advised but ``faster``.
JUDGED = ("faster", "slower", "no-difference", "rejected-by-accuracy", "failed", "infeasible")


@dataclass(frozen=True)
class MeasuredRemedy(schemas.Plain):
    """One remedy (a candidate of :mod:`surrobench.execution.remedies`, or a stack of them) as diagnose measured it.

    Attributes:
        remedy: the candidate's name, ``"cudagraph"``, ``"threads=4"``, ``"tf32+compile"``.
        verdict: one of :data:`MEASURED_VERDICTS`.
        speedup: baseline over candidate median latency in their shared window, ``ci95`` its 95% interval;
            ``baseline_ms`` the baseline's median there; ``saved_ms`` ``baseline_ms * (1 - 1 / speedup)`` per step;
            ``noise_floor`` and ``margin`` (:meth:`surrobench.records.paired.Speedup.margin`), fractions; all None
            when not timed.
        rel_l2: the accuracy guard's worst relative L2 error of its output, None when it produced none;
            ``tolerance`` the guard's.
        reason: why, in one line, for ``failed``, ``infeasible`` and ``not-measured``; else the rule's words.
        direction: ``"up"`` or ``"down"``, the way a remedy with a value moves the baseline's setting
            (:func:`direction`: ``threads=1`` on a 4-thread baseline is down); None for a toggle, a stack, or where
            the baseline's value is not known.

    Raises:
        ValueError: a verdict outside :data:`MEASURED_VERDICTS`.
    """

    DERIVED = ("text",)

    remedy: str
    verdict: str
    speedup: float | None = None
    ci95: tuple[float, float] | None = None
    baseline_ms: float | None = None
    saved_ms: float | None = None
    rel_l2: float | None = None
    tolerance: float | None = None
    reason: str = ""
    noise_floor: float | None = None
    margin: float | None = None
    direction: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in MEASURED_VERDICTS:
            raise ValueError(f"unknown measured verdict {self.verdict!r}; one of {MEASURED_VERDICTS}")

    @property
    def remedy_ids(self) -> frozenset[str]:
        """The remedy ids it applies (:func:`surrobench.records.vocab.remedy_id` of each part of a stack)."""
        return frozenset(remedy_id(part) for part in self.remedy.split("+"))

    def text(self) -> str:
        """One line: ``cudagraph: measured 1.73x [1.55, 1.87], saves 2.96 ms/step``; ``compile: measured 0.65x
        [0.61, 0.70], slower``; ``bf16: rejected, rel L2 1.8e-02 > 1.0e-02``; ``fp16: not measured (budget of 30 s
        spent)``."""
        if self.speedup is not None:
            ci = f" [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}]" if self.ci95 else ""
            head = f"{self.remedy}: measured {self.speedup:.2f}x{ci}"
            rule = ""
            if self.margin is not None:
                noise = self.noise_floor is not None and self.noise_floor >= self.margin
                rule = f"{'noise floor' if noise else 'smallest effect of interest'} {self.margin:.1%}"
            if self.verdict == "faster":
                clears = f", clears 1 + {rule}" if rule else ""
                return head + clears + (f", saves {self.saved_ms:.3g} ms/step" if self.saved_ms is not None else "")
            needs = f" (lower end needs > {1 + self.margin:.3f}: {rule})" if rule and self.verdict != "slower" else ""
            return f"{head}, {self.verdict.replace('-', ' ')}{needs}"
        if self.verdict == "rejected-by-accuracy":
            over = f", rel L2 {self.rel_l2:.1e} > {self.tolerance:.1e}" if self.rel_l2 is not None else ""
            return f"{self.remedy}: rejected{over}" + ("" if over or not self.reason else f" ({self.reason})")
        what = {"failed": "failed", "infeasible": "not applicable", "not-measured": "not measured"}.get(
            self.verdict, self.verdict
        )
        return f"{self.remedy}: {what}" + (f" ({self.reason})" if self.reason else "")


def direction(remedy: str, baseline_threads: int) -> str | None:
    """The way the single remedy ``remedy`` moves the thread count from ``baseline_threads``: ``"down"`` for
    ``threads=N`` with N below it, ``"up"`` above; None for any other remedy or a stack (a toggle points one way)."""
    if "+" in remedy or remedy_id(remedy) != "threads":
        return None
    n = int(remedy.split("=", 1)[1])
    return "down" if n < baseline_threads else "up" if n > baseline_threads else None


def saved_ms(baseline_ms: float, speedup: float) -> float:
    """Step time a remedy of ``speedup`` (baseline over candidate latency) saves on a ``baseline_ms`` step, ms:
    ``baseline_ms - baseline_ms / speedup``."""
    return baseline_ms * (1.0 - 1.0 / speedup)
