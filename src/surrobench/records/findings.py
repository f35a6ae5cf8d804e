"""Findings: the rows of the judgment table (docs/sources.md, method §4; docs/design.md, "Findings").

A diagnosis is a list of :class:`Finding` objects, each a verdict of one :data:`KINDS` kind with its
evidence (numbers, each from a named source), an action and, where computable, the time it would save. The action
is made of clauses (:class:`Clause`), each naming the remedies it suggests by their ids
(:data:`surrobench.records.vocab.REMEDIES`), so what ``surrobench optimize`` measured can be cited next to them
(:mod:`surrobench.results.measured_remedies`) without reading the prose.

**Measured remedies** (:class:`MeasuredRemedy`): diagnose measures the remedies a finding's action names with
optimize's search core (:mod:`surrobench.tune.advice`) and records each outcome; :data:`GAIN_KINDS` says how a
finding's gain is known (a finding none of whose remedies was measured keeps its ``estimate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from surrobench.records import schemas
from surrobench.records.paired import Speedup
from surrobench.records.vocab import REMEDIES, remedy_id

#: The kind vocabulary: what each verdict means. Sources: docs/sources.md, method §4 (the judgment table),
#: section 3 (gaps, syncs, streams), section 2 (the superlinear normalization example); docs/sources.md, tools §4.
KINDS: dict[str, str] = {
    "launch_bound": "the GPU idles between kernels because the host launches slower than the GPU runs them",
    "host_sync": "the host blocks on the GPU inside the step (.item(), .cpu(), synchronize), draining the queue",
    "h2d_transfer": "host-to-device copies inside the step (inputs not cached on the device; pageable memory)",
    "memory_bound": "the time goes to ops below the roofline's ridge point: they wait on memory, not arithmetic",
    "compute_bound": "the time goes to ops above the ridge point: arithmetic-limited (healthy when near peak)",
    "occupancy_bound": "kernels far from both roofs with few warps or blocks per SM: latency-bound (Nsight Compute)",
    "memory_pressure": "throughput falls as the batch grows, peak memory near the limit, or allocator churn",
    "stream_serialization": "work on two streams runs one after the other: an implicit or needless dependency",
    "fragmented_ops": "many small elementwise/copy/concat kernels: fusion targets",
    "superlinear_scaling": "across the shape ladder an op's time grows faster than its FLOPs",
    "cpu_preprocess": "host work (a named function) inside the step while the GPU waits",
    "matmul_precision": "GEMM, convolution and attention hold the time in fp32 with TF32 off: the tensor cores idle",
    "precision_mismatch": "fp16/bf16 slower than fp32, FFT sizes half precision cannot take, ops left in fp32",
    "straggler": "one rank reaches the collectives late, step after step: the others wait for it",
    "comm_wait": "ranks spend time inside collectives waiting for a late peer instead of moving data",
    "comm_not_overlapped": "communication runs with no compute alongside it: the step waits for the transfer",
    "ceiling_suspect": "ops measured past a calibrated ceiling by more than its spread: the calibration is too low",
    "page_faults": "the host faults pages in every step: buffers returned to the OS and mapped again (the allocator)",
    "thread_oversubscription": "more torch threads than cores free to run them: threads wait for each other",
    "denormals": "subnormal floats in the weights or inputs: each operation on them takes a slow microcode path",
    "hot_op": "one op holds a large share of the op time and no other finding names it: where the time is",
}
SEVERITIES = ("high", "medium", "low", "info")
"""``info`` is a verdict with nothing to fix (a compute-bound workload near peak); the others are alarms."""
SOURCES = ("profiler", "timeline", "run", "system", "roofline")
#: The :attr:`Evidence.unit` of an op's share of the profiled op time (0-1): the time a finding's ops hold.
OP_SHARE = "share of op time"
#: The :attr:`Evidence.unit` of the row that says why a finding's gain is unknown (its text: why, in the device's
#: terms).
GAIN_UNKNOWN = "why the gain is unknown"
#: What a verdict rests on (:attr:`Finding.evidence_source`): a bound verdict (memory-, compute-bound) says whether
#: hardware counters measured it or the FLOP/byte estimate of the roofline inferred it (docs/design.md, "Findings").
EVIDENCE_SOURCES: dict[str, str] = {
    "measured": "measured times of the profiler, the timeline or the timed runs; no FLOP or byte estimate",
    "estimated": "estimated from FLOP counts, bytes from shapes and op families against the roofline",
    "measured (ncu)": "Nsight Compute hardware counters of the kernels (DRAM, SM and pipe throughput)",
}


@dataclass(frozen=True)
class Evidence(schemas.Plain):
    """One number behind a finding: where it comes from, what it says, its value and unit."""

    source: str
    text: str
    value: float | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown evidence source {self.source!r}; one of {SOURCES}")


@dataclass(frozen=True)
class Clause(schemas.Plain):
    """One imperative clause of an action (``"replay the step as a CUDA graph (--mode cudagraph)"``), the ids of
    :data:`surrobench.records.vocab.REMEDIES` it suggests in its order (none for advice no remedy carries out),
    and whether they are one recipe applied together (``stacked``: ``tf32`` then ``compile``), not alternatives.
    ``direction``: ``"up"`` or ``"down"``, the way the clause moves a remedy with a value (``threads``: "use every
    core" up, "fewer threads than cores" down), None for either way and toggles; a measurement is credited to the
    clause only when it moves the same way (:attr:`surrobench.records.findings.MeasuredRemedy.direction`).

    Raises:
        ValueError: a remedy id outside the vocabulary; ``stacked`` with fewer than two remedies; a direction
            other than up, down or None.
    """

    text: str
    remedies: tuple[str, ...] = ()
    stacked: bool = False
    direction: str | None = None

    def __post_init__(self) -> None:
        if unknown := [r for r in self.remedies if r not in REMEDIES]:
            raise ValueError(f"unknown remedy id(s) {', '.join(unknown)}; one of {REMEDIES}")
        if self.stacked and len(self.remedies) < 2:
            raise ValueError(f"a stacked clause names at least two remedies, not {self.remedies}")
        if self.direction not in (None, "up", "down"):
            raise ValueError(f"clause direction {self.direction!r}: up, down or None")


def clauses_of(*parts: str | Clause | tuple[Clause, ...]) -> tuple[Clause, ...]:
    """An action's clauses from ``parts``: text (a clause suggesting no remedy; empty: none), clauses, tuples."""
    out: list[Clause] = []
    for part in parts:
        if isinstance(part, str):
            out += [Clause(part)] if part else []
        else:
            out += [part] if isinstance(part, Clause) else part
    return tuple(out)


#: How a finding's gain is known: ``measured`` (a remedy timed faster saves it, or every one judged, none faster) or
#: ``estimate`` (a model of the evidence: FLOPs, bytes, launch gaps, counters; None when not computable).
GAIN_KINDS = ("measured", "estimate")

#: The verdicts of a remedy that ran and was judged: none of them is advised but ``faster``.
JUDGED = ("faster", "slower", "unchanged", "inconclusive", "rejected-by-accuracy", "failed", "infeasible")
#: Those of them that measured the remedy (timed, or its output checked): a finding's gain is then measured.
MEASURED = JUDGED[:5]
#: The outcome of one remedy measured for a finding: ``faster``, ``slower``, ``unchanged`` and ``inconclusive`` by
#: the one rule (:meth:`surrobench.records.paired.Speedup.verdict`; before diagnosis-v7 the last two were one
#: ``no-difference``, read as :class:`MeasuredRemedy` says); ``rejected-by-accuracy`` (its output's relative L2 error
#: over the tolerance, never timed); ``failed`` (it raised while built or run); ``infeasible`` (known not to apply,
#: with the reason); ``not-measured`` (the budget ran out before it, the budget was 0, or Ctrl-C came first).
MEASURED_VERDICTS = (*JUDGED, "not-measured")
#: The words for the verdicts of a remedy not measured, as its line and diagnose's per-config note list them.
UNMEASURED_WORDS = {"failed": "failed", "not-measured": "not measured", "infeasible": "not applicable"}


def rel_l2_against(rel_l2: float, tolerance: float, relation: str = ">") -> str:
    """``rel L2 1.8e-02 > 1.0e-02``: a relative L2 error against its tolerance at 2 significant digits, or as many
    more (up to 6) as show the two apart (``1.03e-02 > 1.00e-02``)."""
    digits = next((d for d in range(1, 5) if f"{rel_l2:.{d}e}" != f"{tolerance:.{d}e}"), 5)
    return f"rel L2 {rel_l2:.{digits}e} {relation} {tolerance:.{digits}e}"


@dataclass(frozen=True)
class MeasuredRemedy(schemas.Plain):
    """One remedy (a candidate of :mod:`surrobench.execution.remedies`, or a stack of them) as diagnose measured it.

    Attributes:
        remedy: the candidate's name, ``"cudagraph"``, ``"threads=4"``, ``"tf32+compile"``.
        verdict: one of :data:`MEASURED_VERDICTS`.
        speedup: baseline over candidate median latency in their shared window, ``ci95`` its 95% interval;
            ``baseline_ms`` the baseline's median there; ``saved_ms`` ``step * (1 - 1 / speedup)`` on the timed step
            (:func:`surrobench.results.measured_remedies.on_step`; ``drifted``: the window's baseline drifted from it);
            ``noise_floor`` and ``margin`` (:meth:`surrobench.records.paired.Speedup.margin`), fractions, the floor the
            confirmation's of the optimization ``floor_from`` names where larger; all None when not timed.
        rel_l2: the accuracy guard's worst relative L2 error of its output, None when it produced none;
            ``tolerance`` the guard's.
        reason: why, in one line, for ``failed``, ``infeasible`` and ``not-measured``; of a timed one, why it was tried
            last (more threads than free cores, bf16 on a CPU without its units: ``Trials.crowds``), or why optimize
            left it a lead not confirmed (``inconclusive``, no ``margin``: ``measured_remedies.confirmed``), else empty.
        direction: ``"up"`` or ``"down"``, the way a remedy with a value moves the baseline's setting
            (:func:`direction`: ``threads=1`` on a 4-thread baseline is down); None for a toggle, a stack, or where
            the baseline's value is not known.
        cited: the stored optimization it is read from (diagnose cites ``optimize``'s measurement of a remedy it did
            not judge itself), None when diagnose measured it; :meth:`text` names it.

    A ``no-difference`` (before diagnosis-v7) reads as the paired rule's verdict of its numbers, ``unchanged`` or
    ``inconclusive`` (that when they are missing).

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
    drifted: bool = False
    cited: str | None = None
    floor_from: str | None = None

    def __post_init__(self) -> None:
        if self.verdict == "no-difference":  # the margin as the floor gives Speedup.margin() the same margin back
            paired = Speedup(self.speedup, self.ci95, self.margin).verdict() if self.margin and self.ci95 else None
            object.__setattr__(self, "verdict", "unchanged" if paired == "unchanged" else "inconclusive")
        if self.verdict not in MEASURED_VERDICTS:
            raise ValueError(f"unknown measured verdict {self.verdict!r}; one of {MEASURED_VERDICTS}")

    @property
    def remedy_ids(self) -> frozenset[str]:
        """The remedy ids it applies (:func:`surrobench.records.vocab.remedy_id` of each part of a stack)."""
        return frozenset(remedy_id(part) for part in self.remedy.split("+"))

    def text(self) -> str:
        """One line: ``cudagraph: measured 1.73x [1.55, 1.87], saves 2.96 ms/step``; ``compile: measured 0.79x [0.66,
        0.95], slower, within the margin, ...`` (:meth:`Speedup.words`); ``bf16: rejected, rel L2 1.8e-02 > 1.0e-02``;
        ``fp16: not measured (budget of 30 s spent)``; a cited one names its optimization after its verdict (``compile:
        measured 1.18x [1.10, 1.27] in optimization o7, ...``, ``bf16: rejected in optimization o7, ...``)."""
        where = f" in optimization {self.cited}" if self.cited else ""
        if self.speedup is not None:
            crowd = f"; {self.reason}" if self.reason else ""  # timed on a crowded host (Trials.crowds)
            shown, words, bound = f"{self.speedup:.2f}x", self.verdict, ""  # a document that kept no interval reads
            if self.ci95 is not None:  # the margin held is the rule's of its floor (a v6 document's: the floor)
                paired = Speedup(self.speedup, self.ci95, self.margin if self.noise_floor is None else self.noise_floor)
                shown = paired.text()
                if self.margin is not None:  # a lead optimize did not confirm keeps none: its verdict alone
                    words, bound = paired.words(verdict=self.verdict)
            head = f"{self.remedy}: measured {shown}{where}"
            floor = f" (floor of optimization {self.floor_from})" if self.floor_from else ""
            bound = f", {bound}{floor}" if bound else ""
            if self.verdict == "faster":
                saves = f", saves {self.saved_ms:.3g} ms/step" if self.saved_ms is not None else ""
                drift = f" (its window's baseline drifted: {self.baseline_ms:.3g} ms)" if saves and self.drifted else ""
                return head + bound + saves + drift + crowd
            return f"{head}, {words}{bound}{crowd}"
        if self.verdict == "rejected-by-accuracy":
            over = f", {rel_l2_against(self.rel_l2, self.tolerance)}" if self.rel_l2 is not None else ""
            return f"{self.remedy}: rejected{where}{over}" + ("" if over or not self.reason else f" ({self.reason})")
        what = UNMEASURED_WORDS.get(self.verdict, self.verdict)
        return f"{self.remedy}: {what}{where}" + (f" ({self.reason})" if self.reason else "")


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


@dataclass(frozen=True)
class Finding(schemas.Plain):
    """One verdict: its ``kind`` (:data:`KINDS`), ``severity`` (:data:`SEVERITIES`), one-line ``summary``.

    Attributes:
        evidence: the numbers, profiler and timeline side where both exist.
        action: what to do about it, given as its clauses (:class:`Clause`) or as text (one clause); held as text,
            the clauses' texts joined by ``"; "``.
        estimated_gain_ms: step time the action would save, ms per step; None when not computable.
        config: the config it is about (``fno2d 1x3x128x128 b1 fp32 eager``), None for a trace alone.
        evidence_source: what the verdict rests on, one of :data:`EVIDENCE_SOURCES`.
        clauses: the action clause by clause, set from ``action`` (kept by :func:`dataclasses.replace` while the
            text stays the same).
        measured: the remedies of the action diagnose measured (:class:`~surrobench.records.findings.MeasuredRemedy`).
        severity_estimated: its severity is the detected one, kept though :attr:`none_faster`, a code change of its
            action standing (docs/design.md, "None faster"): its gain is then the estimate too.

    Its JSON object (docs/design.md): the fields, then ``remedies``, ``remedy_stacks`` and ``gain``.

    Raises:
        ValueError: a kind, severity or evidence source outside its vocabulary.
    """

    DERIVED = ("remedies", "remedy_stacks", "gain")

    kind: str
    severity: str
    summary: str
    evidence: tuple[Evidence, ...]
    action: str | tuple[Clause, ...]
    estimated_gain_ms: float | None = None
    config: str | None = None
    evidence_source: str = "measured"
    clauses: tuple[Clause, ...] = field(default=(), repr=False)
    measured: tuple[MeasuredRemedy, ...] = ()
    severity_estimated: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.severity not in SEVERITIES:
            raise ValueError(f"finding kind {self.kind!r} / severity {self.severity!r} not in the vocabulary")
        if self.evidence_source not in EVIDENCE_SOURCES:
            raise ValueError(f"evidence source {self.evidence_source!r}; one of {tuple(EVIDENCE_SOURCES)}")
        if not isinstance(self.action, str):
            parts = tuple(self.action)
        elif self.clauses and "; ".join(c.text for c in self.clauses) == self.action:
            parts = tuple(self.clauses)  # a copy (dataclasses.replace) of the same action
        else:
            parts = clauses_of(self.action)
        object.__setattr__(self, "clauses", parts)
        object.__setattr__(self, "action", "; ".join(c.text for c in parts))

    @property
    def alarm(self) -> bool:
        """True for a problem to act on (any severity but ``info``)."""
        return self.severity != "info"

    @property
    def remedies(self) -> tuple[str, ...]:
        """The remedy ids the action suggests (:data:`surrobench.records.vocab.REMEDIES`), each once, in order."""
        return tuple(dict.fromkeys(r for c in self.clauses for r in c.remedies))

    @property
    def remedy_stacks(self) -> tuple[tuple[str, ...], ...]:
        """The remedies the action suggests applied together, one tuple per stacked clause (:attr:`Clause.stacked`),
        in order; each of their ids is in :attr:`remedies` too."""
        return tuple(c.remedies for c in self.clauses if c.stacked)

    @property
    def gain_kind(self) -> str:
        """How :attr:`gain_ms` is known (:data:`GAIN_KINDS`): ``measured`` where a measurement gives it
        (:attr:`best_measured`'s saving, or 0 where :attr:`none_faster` and the severity is not
        :attr:`severity_estimated`), else ``estimate`` (None where unknown, beside a remedy measured slower too)."""
        return GAIN_KINDS[int(self.best_measured is None and not (self.none_faster and not self.severity_estimated))]

    @property
    def none_faster(self) -> bool:
        """Whether every remedy its action names or named was measured (trial35 said none faster beside threads and bf16
        never measured, a cited channels_last alone), each judged, one timed or checked, and none saves time."""
        verdicts = {m.verdict for m in self.measured}  # one faster without a saving too (no baseline ms)
        named = frozenset().union(*(m.remedy_ids for m in self.measured)) >= set(self.remedies)
        return named and bool(verdicts & set(MEASURED)) and not verdicts & {"faster", "not-measured"}

    @cached_property
    def best_measured(self) -> MeasuredRemedy | None:
        """Its remedy measured faster that saves the most, on the timed step before in a drifted window; or None."""
        faster = [m for m in self.measured if m.verdict == "faster" and m.saved_ms is not None]
        return max(faster, key=lambda m: (not m.drifted, m.saved_ms), default=None)

    @property
    def op_share(self) -> float:
        """The share of the op time its ops hold (:data:`OP_SHARE` evidence), 0 when it names none (a whole step's)."""
        return sum(e.value for e in self.evidence if e.unit == OP_SHARE)

    @property
    def whole_step(self) -> bool:
        """Whether :attr:`best_measured` saves more of the step (``1 - 1 / speedup``) than its ops hold
        (:attr:`op_share`): the whole step's saving with that remedy alone, overlapping other findings'."""
        return (best := self.best_measured) is not None and 0 < self.op_share < 1 - 1 / best.speedup

    @property
    def gain_ms(self) -> float | None:
        """Step time its action saves, ms per step, as :attr:`gain_kind` says: measured, the saving of
        :attr:`best_measured` (0 where none); else the estimate, :attr:`estimated_gain_ms`."""
        if self.gain_kind == "estimate":
            return self.estimated_gain_ms
        return best.saved_ms if (best := self.best_measured) is not None else 0.0

    @property
    def gain(self) -> dict:
        """``{"kind", "ms", "remedy", "whole_step", "drifted", "none_faster"}``: :attr:`gain_kind`, :attr:`gain_ms`,
        the remedy measured to save it, :attr:`whole_step`, a drifted window's saving, :attr:`none_faster`."""
        best, gain = self.best_measured, {"kind": self.gain_kind, "ms": self.gain_ms, "whole_step": self.whole_step}
        drifted = bool(best and best.drifted)
        return gain | {"remedy": best.remedy if best else None, "drifted": drifted, "none_faster": self.none_faster}

    @classmethod
    def from_json(cls, d: dict) -> Finding:
        """A finding object of a diagnosis document of any version (:data:`surrobench.records.schemas.DIAGNOSIS`
        and :data:`~surrobench.records.schemas.DIAGNOSIS_READ`): its clauses where written (v6), else its action
        as one clause holding the ``remedies`` listed (v3 to v5) or none (v1, v2); no measurements before v6.

        Raises:
            KeyError, TypeError, ValueError: ``d`` is not a finding object.
        """
        if "clauses" in d:
            action = tuple(Clause.from_json(c) for c in d["clauses"])
        else:
            action = (Clause(d["action"], tuple(r for r in d.get("remedies", ()) if r in REMEDIES)),)
        read = {k: v for k, v in d.items() if k != "clauses"}  # the rest by their annotations (Plain.from_json)
        read["action"] = action or d["action"]
        return super().from_json(read)


#: Kinds whose action cannot work until another kind of the same config is fixed, the root cause ranked first:
#: CUDA-graph capture (the cure of a launch-bound step) cannot capture host syncs or pageable copies (PyTorch
#: docs, "CUDA Graphs"); waiting in collectives ends when the straggler is fixed.
BLOCKED_BY: dict[str, tuple[str, ...]] = {"launch_bound": ("host_sync", "h2d_transfer"), "comm_wait": ("straggler",)}


def rank_findings(findings: list[Finding]) -> list[Finding]:
    """Findings with a remedy measured faster (:attr:`Finding.best_measured`) first, largest saving first, whatever
    their severity, those of a drifted window (:attr:`MeasuredRemedy.drifted`) last; then the others, most severe
    first, those blocked by another of the same config (:data:`BLOCKED_BY`) after the rest, then the largest
    :attr:`Finding.gain_ms` first (0 and unknown last)."""
    present = {(f.config, f.kind) for f in findings}

    def key(f: Finding) -> tuple:
        if (best := f.best_measured) is not None and best.saved_ms > 0:
            return (0, best.drifted, -best.saved_ms, 0, False, 0.0)
        blocked = any((f.config, kind) in present for kind in BLOCKED_BY.get(f.kind, ()))
        return (1, False, 0.0, SEVERITIES.index(f.severity), blocked, -(f.gain_ms or -1.0))

    return sorted(findings, key=key)


@dataclass(frozen=True)
class Diagnosis(schemas.Plain):
    """A diagnosis document (``surrobench diagnose --json``): ``context`` says what was diagnosed (run id, trace
    path...), ``findings`` ranked, ``warnings`` what the reading could not take as given (events a trace loader
    dropped or repaired, a missing trace...), one line each. Its JSON object is ``surrobench/diagnosis-v8``."""

    SCHEMA = schemas.DIAGNOSIS

    context: dict
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()

    @property
    def cannot_judge(self) -> list[dict]:
        """The evidence checks (``context.evidence_checks``) with nothing to judge, verdict ``cannot_judge``: no op,
        or a CUDA profile with no kernel (:mod:`surrobench.analysis.evidence_checks`)."""
        return [c for c in (self.context.get("evidence_checks") or {}).values() if c["verdict"] == "cannot_judge"]

    @classmethod
    def from_json(cls, doc: object) -> Diagnosis:
        """A diagnosis document of this or an earlier version (:meth:`Finding.from_json`; no ``warnings`` before
        they were written: none).

        Raises:
            DocumentError: not a diagnosis document (its ``schema``); ValueError: a finding object it cannot read.
        """
        schemas.check(doc, dict.fromkeys((schemas.DIAGNOSIS, *schemas.DIAGNOSIS_READ), schemas.anything))
        try:
            findings = tuple(Finding.from_json(f) for f in doc["findings"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a finding of the diagnosis document cannot be read: {exc!r}") from None
        return cls(doc.get("context", {}), findings, tuple(doc.get("warnings", ())))
