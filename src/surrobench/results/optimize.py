"""The records of ``surrobench optimize`` and their JSON form, ``surrobench/optimize-v3`` (docs/design.md,
"Optimize JSON", lists every key; :data:`DOCUMENTS` checks them).

One :class:`OptimizeReport` per command: per config the baseline, every candidate with its verdict, and the recommended
recipe. Its baseline and recipe runs are ordinary stored runs, so ``compare`` and ``report`` work on the pair.

**Fresh check** (:class:`FreshCheck`; docs/optimize.md, "Does it hold up later"): the pair measured again as
``surrobench run`` in new processes, alternating which starts first, each pair of processes one unit of
:class:`surrobench.records.paired.PairedSamples`, so the fresh interval includes the drift between processes
(docs/benchmarks/h200-optimize.md, "Windows and processes"). By the rule of :mod:`surrobench.records.paired`:
``reproduced``, faster in the fresh pairs and no difference beyond the margin from optimize's unit speedups (its own
process one unit, each fresh-process window another: :attr:`ConfigOptimization.recipe_process_speedups`, windows of
one process never several units: Hurlbert 1984, "Pseudoreplication", Ecological Monographs 54(2); :func:`agreement`);
``overlaps``, no difference but not faster beyond the noise; ``not_reproduced``, a difference; ``failed``, a fresh
process did not finish; ``interrupted``, Ctrl-C ended the check (the processes that finished are stored and listed).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.accuracy import AccuracyVerdict
from surrobench.records import schemas
from surrobench.records.run import RESULT_SETTINGS, ConfigResult
from surrobench.records.stats import LatencyStats
from surrobench.records.vocab import DEVICES, FRESH_VERDICTS, MODES, OPTIMIZE_VERDICTS, OPTIMIZE_VERDICTS_V2, PRECISIONS
from surrobench.records.paired import MIN_ROUNDS, PairedSamples, Speedup


def started_as(command: str, program: str = "surrobench", db: str | None = None) -> str:
    """A stored ``surrobench ...`` ``command`` started as ``program`` (``.venv/bin/surrobench``), with ``--db`` when
    ``db`` is given (the database the command's run goes to)."""
    return program + command.removeprefix("surrobench") + (f" --db {shlex.quote(db)}" if db else "")


@dataclass(frozen=True)
class Unconfirmed(schemas.Plain):
    """The recipe the search found, not recommended: its speedup pooled over its ``windows`` timing windows is not
    faster by the rule of :mod:`surrobench.records.paired`, so its wins were the drift of single windows.
    ``accepted``: every candidate accepted in its own window, best first by that speedup's median, none confirmed
    (the budget keeps one recipe's confirmation: docs/design.md, "Fresh processes: their share of the budget")."""

    name: str
    speedup: Speedup
    windows: int
    accepted: tuple[str, ...] = ()

    def note(self) -> str:
        """One line for the report."""
        return (
            f"not recommended: {self.name} pooled over {self.windows} timing windows reads {self.speedup.text()}, "
            f"lower bound not above 1 + {self.speedup.margin_text()}: its wins did not hold "
            "across windows (a busy or drifting machine; measure again when it is quieter, or with more rounds)"
        )


@dataclass(frozen=True)
class HeadToHead(schemas.Plain):
    """The two recipes of greedy stacking (:meth:`surrobench.tune.search.Search.stack`) timed against each other:
    ``first`` stacked on the fastest accepted remedy, ``rival`` on the fastest timed remedy that sets the same
    setting; ``gain`` rival over first in one window (None when not timed: ``error`` says why); ``kept`` the one
    confirmed, ``rival`` when ``gain``'s median is above 1 (:meth:`surrobench.tune.search.Search.duel`)."""

    first: str
    rival: str
    gain: Speedup | None
    kept: str
    error: str | None = None

    def note(self) -> str:
        """One line for the report."""
        if self.error is not None:
            return f"{self.rival} could not be timed against {self.first} ({self.error}); {self.kept} is the recipe"
        close = "" if self.gain.faster() or self.gain.slower() else ", the median decides"
        return (
            f"stacked from two starts that exclude each other ({self.first.split('+')[0]}, "
            f"{self.rival.split('+')[0]}); head to head, {self.rival} ran "
            f"{self.gain.reason(self.first)}{close}: {self.kept} is the recipe"
        )


def timed_verdict(decisive: Speedup) -> str:
    """A timed candidate's verdict by the paired rule (:class:`Speedup`) over what it would replace."""
    return "accepted" if decisive.faster() else "rejected_slower" if decisive.slower() else "rejected_not_faster"


@dataclass(frozen=True)
class CandidateResult:
    """One candidate of one config: a remedy or a stack (``"cudagraph+tf32"``, ``stacked_on`` the recipe it was
    added to), its ``verdict`` (:data:`surrobench.records.vocab.OPTIMIZE_VERDICTS`) and one-line ``reason``.

    Attributes:
        speedup: over the baseline; ``gain`` over the recipe it was stacked on; ``result`` its timing merged over
            its rounds; ``baseline_ms`` the baseline's median in its own window, ms, what ``speedup`` and
            ``break_even_calls`` are against; all None when not timed.
        accuracy: the guard's verdict, None when it never produced an output.
        setup_s: its first call (compilation, capture, autotuning and one forward), seconds;
            ``break_even_calls`` the calls that pay it back, None unless faster by the one rule (``accepted``).
        error: the raised exception as text (``failed``); ``cause`` its known cause id (``"unknown"``).
        time_s: wall time spent on it (setup, accuracy check, rounds); ``rounds`` its window's (None: not timed, or
            stored before), in fewer than :data:`~surrobench.records.paired.MIN_ROUNDS` ``rejected_not_faster``.
    """

    name: str
    verdict: str
    reason: str
    speedup: Speedup | None = None
    gain: Speedup | None = None
    accuracy: AccuracyVerdict | None = None
    setup_s: float | None = None
    break_even_calls: float | None = None
    result: ConfigResult | None = None
    error: str | None = None
    cause: str | None = None
    time_s: float = 0.0
    stacked_on: str | None = None
    baseline_ms: float | None = None
    rounds: int | None = None

    def __post_init__(self) -> None:
        if self.verdict not in OPTIMIZE_VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; one of {OPTIMIZE_VERDICTS}")

    def to_json(self) -> dict:
        """The optimize-v3 candidate object; ``speedup`` absent when not measured."""
        d = {"name": self.name, "verdict": self.verdict, "reason": self.reason, "rounds": self.rounds}
        if self.speedup is not None:
            d["speedup"] = self.speedup.to_json()
        acc = self.accuracy
        d |= {"rel_l2": acc.rel_l2 if acc else None, "max_abs": acc.max_abs if acc else None, "setup_s": self.setup_s}
        d |= {"gain": self.gain.to_json() if self.gain else None, "accuracy": acc.to_json() if acc else None}
        d |= {"break_even_calls": self.break_even_calls, "baseline_ms": self.baseline_ms, **_timing_json(self.result)}
        return d | {"error": self.error, "cause": self.cause, "time_s": self.time_s, "stacked_on": self.stacked_on}

    def not_faster(self) -> str | None:
        """Why a ``rejected_not_faster`` candidate is not faster, by its deciding interval (``gain``, else ``speedup``):
        ``slower`` where it lies below 1 (not by the margin ``rejected_slower`` needs), else the paired rule's word
        (``unchanged``, ``inconclusive``); ``inconclusive`` when :meth:`too_few_rounds`. None otherwise."""
        decisive = self.gain or self.speedup
        if self.verdict != "rejected_not_faster" or decisive is None:
            return None
        if self.too_few_rounds():
            return "inconclusive"
        return "slower" if decisive.ci95[1] < 1.0 else decisive.verdict()

    def too_few_rounds(self) -> bool:
        """Whether it was timed in fewer rounds than the rule needs (:data:`~surrobench.records.paired.MIN_ROUNDS`)."""
        return self.rounds is not None and self.rounds < MIN_ROUNDS


@dataclass(frozen=True)
class ConfigOptimization:
    """The optimization of one config.

    Attributes:
        baseline: the baseline's timing (its rounds interleaved with the recommended recipe's, else all).
        candidates: every candidate, single remedies first, then the stacks in the order tried.
        recommended: remedy names of the recipe, empty when nothing won; ``recipe_result`` its timing.
        recipe_code: lines of code that apply the recipe; ``run_command`` and ``baseline_command`` the
            ``surrobench run`` lines of the recipe and the baseline, None for a model given as a Python object.
        fresh_configs: the baseline's and the recipe's configs as JSON objects
            (``ExecConfig.to_json()``) for a fresh process (:mod:`surrobench.tune.fresh`);
            None without a recipe or for a model object. Not in the report's JSON.
        not_tried: ``(name, reason)`` of candidates the budget left out.
        notes: facts about the config (the probe's FFT sizes and host syncs, a missing fp64 reference).
        recipe_speedup: the recipe over the baseline across every window in which the two were timed together
            (:meth:`surrobench.tune.search.Search.confirm`); None when nothing won.
        recipe_window_speedups: each of those windows' own speedup (ratio of medians), in time order; the last
            ``recipe_process_windows`` timed in pairs of fresh processes, their runs ``recipe_process_run_ids``.
        cut_short: Ctrl-C cut the search short: the candidates judged so far, no recipe unless it came in the
            recipe's confirmation (standing on the windows that finished); ``error`` why the baseline itself could
            not run (no candidates); ``elapsed_s`` the search's wall time.
        fresh: the recipe measured again in fresh processes (:mod:`surrobench.results.optimize`), else None.
        head_to_head: the two stacking paths' recipes against each other (:class:`HeadToHead`), else None.
        unconfirmed: the recipe the search found when its pooled speedup did not hold (:class:`Unconfirmed`).
        baseline_drift: the baseline in the recipe's fresh processes over the baseline in this process (two
            separate runs); None when no fresh process ran (:meth:`drift_warning`).
    """

    baseline: ConfigResult
    candidates: tuple[CandidateResult, ...] = ()
    recommended: tuple[str, ...] = ()
    recipe_result: ConfigResult | None = None
    recipe_code: tuple[str, ...] = ()
    run_command: str | None = None
    baseline_command: str | None = None
    fresh_configs: tuple[dict, dict] | None = None
    not_tried: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    elapsed_s: float = 0.0
    fresh: FreshCheck | None = None
    recipe_speedup: Speedup | None = None
    recipe_window_speedups: tuple[float, ...] = ()
    recipe_process_windows: int = 0
    recipe_process_run_ids: tuple[str, ...] = ()
    cut_short: bool = False
    head_to_head: HeadToHead | None = None
    unconfirmed: Unconfirmed | None = None
    baseline_drift: Speedup | None = None

    def drift_warning(self) -> str | None:
        """One line when :attr:`baseline_drift` is faster or slower by the paired rule, else None; the likely
        cause named, the process's allocator state, moved a CPU baseline 3-4x (docs/benchmarks/cpu-allocator.md)."""
        drift = self.baseline_drift
        if drift is None or drift.verdict() not in ("faster", "slower"):
            return None
        return (
            f"{self.baseline.label()}: the baseline in fresh processes ran {drift.text()} the speed of the baseline "
            "in optimize's own process, beyond the noise; the search's verdicts were judged in that process. Likely "
            "cause: the process's state before timing (its memory allocator's thresholds, caches, a profiler "
            "attached); compare with a fresh `surrobench run`"
        )

    @property
    def recipe_windows(self) -> int:
        """How many windows ``recipe_speedup`` pools."""
        return len(self.recipe_window_speedups)

    @property
    def recipe_process_speedups(self) -> tuple[float, ...]:
        """The recipe's speedup per process it was timed in (:func:`surrobench.results.optimize.process_speedups`),
        the units a fresh check is compared with; empty when nothing won."""
        return process_speedups(self.recipe_window_speedups, self.recipe_process_windows)

    @property
    def nothing_because(self) -> str | None:
        """Why no recipe is recommended, None when one is, the first that holds: ``baseline_failed`` (``error`` says
        why), ``interrupted`` (``cut_short``), ``unconfirmed`` (a candidate was accepted but the recipe did not hold
        across its timing windows), ``none_faster`` (a candidate was timed, none faster beyond the noise floor within
        the tolerance), ``budget`` (some were not tried), else ``untimed``."""
        if self.recommended:
            return None
        if self.error or self.cut_short:
            return "baseline_failed" if self.error else "interrupted"
        if any(c.verdict == "accepted" for c in self.candidates):
            return "unconfirmed"
        if any(c.speedup for c in self.candidates):
            return "none_faster"
        return "budget" if self.not_tried else "untimed"

    @property
    def best(self) -> CandidateResult | None:
        """The candidate whose name is the recipe, None when nothing won."""
        name = "+".join(self.recommended)
        return next((c for c in self.candidates if c.name == name and c.verdict == "accepted"), None)

    def to_json(self) -> dict:
        b = self.baseline
        return {
            **b.key().identity_json(),
            "settings": {k: b.extra[k] for k in RESULT_SETTINGS if b.extra.get(k) not in (None, False)},
            "label": b.label(),
            "error": self.error,
            "baseline": {**_timing_json(b), "setup_s": b.cold_start_ms / 1e3 if b.cold_start_ms is not None else None},
            "candidates": [c.to_json() for c in self.candidates],
            "recommended": list(self.recommended),
            "recipe": {
                "code": list(self.recipe_code),
                "run_command": self.run_command,
                "baseline_command": self.baseline_command,
                "speedup": self.recipe_speedup.to_json() if self.recipe_speedup else None,
                "windows": self.recipe_windows,
                "window_speedups": list(self.recipe_window_speedups),
                "process_windows": self.recipe_process_windows,
                "process_run_ids": list(self.recipe_process_run_ids),
                "process_speedups": list(self.recipe_process_speedups),
            },
            "head_to_head": self.head_to_head.to_json() if self.head_to_head else None,
            "not_tried": [{"name": n, "reason": r} for n, r in self.not_tried],
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
            "cut_short": self.cut_short,
            "fresh": self.fresh.to_json() if self.fresh else None,
            "unconfirmed": self.unconfirmed.to_json() if self.unconfirmed else None,
            "baseline_drift": self.baseline_drift.to_json() if self.baseline_drift else None,
        }


@dataclass(frozen=True)
class OptimizeReport:
    """One ``surrobench optimize``: its settings (``fresh_pairs``: the ``--verify`` pairs asked for), its two
    stored runs, one entry per config, and whether Ctrl-C cut it short (``interrupted``: the configs listed
    are those whose search finished), and the warnings of the measurement (failed baselines, a busy host,
    clock drops; :func:`surrobench.execution.env.sweep_warnings`)."""

    optimize_id: str
    created: str
    env: dict
    tolerance: float
    budget_s: float
    rounds: int
    baseline_run_id: str
    recipe_run_id: str | None
    configs: tuple[ConfigOptimization, ...]
    fresh_pairs: int = 0
    interrupted: bool = False
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """The whole report as ``surrobench/optimize-v3`` (:data:`surrobench.records.schemas.OPTIMIZE`)."""
        return {
            "schema": schemas.OPTIMIZE,
            "optimize_id": self.optimize_id,
            "created": self.created,
            "baseline_run_id": self.baseline_run_id,
            "recipe_run_id": self.recipe_run_id,
            "tolerance": self.tolerance,
            "budget_s": self.budget_s,
            "rounds": self.rounds,
            "verify": self.fresh_pairs,
            "interrupted": self.interrupted,
            "warnings": list(self.warnings),
            "env": self.env,
            "configs": [c.to_json() for c in self.configs],
        }

    @classmethod
    def from_json(cls, doc: dict) -> OptimizeReport:
        """Read an optimize document of any version back, after checking it (:data:`DOCUMENTS`). A key an older
        version lacks reads as its empty value; timings keep what the document kept (median, P95, peak memory,
        top op; the other statistics read NaN); a v1 or v2 ``rejected_slower`` stays as written.

        Raises:
            DocumentError: ``doc`` is not a valid optimize document of any version.
        """
        schemas.check(doc, DOCUMENTS)
        return cls(
            **schemas.plain(doc, cls, but=("configs", "warnings")),
            configs=tuple(config_from_json(c) for c in doc["configs"]),
            fresh_pairs=doc.get("verify", 0),
            warnings=tuple(doc.get("warnings", ())),
        )


def _timing_json(r: ConfigResult | None) -> dict:
    """The timing an optimize object keeps of ``r`` (None: not timed): median, P95, peak memory, top op."""
    lat = r.latency_ms if r else None
    return {"median_ms": lat and lat.median, "p95_ms": lat and lat.p95} | {
        "peak_mem_bytes": r and r.peak_mem_bytes,
        "top_op": r and r.top_op,
    }


def _speedup(d: dict | None) -> Speedup | None:
    return Speedup.from_json(d) if d else None


def _timing(entry: dict, d: dict, error: str | None = None) -> ConfigResult:
    """The timing an optimize object kept (``median_ms``, ``p95_ms``, ``peak_mem_bytes``, ``top_op``,
    ``setup_s``) as a :class:`ConfigResult` of the config ``entry``."""
    nan = float("nan")
    median, p95 = d.get("median_ms"), d.get("p95_ms")
    latency = None if median is None else LatencyStats(median, p95 if p95 is not None else nan, *[nan] * 6, (nan, nan))
    setup_s = d.get("setup_s")
    return ConfigResult.of(
        entry,
        status="ok" if median is not None or error is None else "error",
        error=error,
        cold_start_ms=setup_s * 1e3 if setup_s is not None else None,
        latency_ms=latency,
        peak_mem_bytes=d.get("peak_mem_bytes"),
        top_op=d.get("top_op"),
    )


def _candidate_from_json(entry: dict, c: dict) -> CandidateResult:
    timed = c.get("median_ms") is not None or c.get("peak_mem_bytes") is not None or c.get("top_op") is not None
    return CandidateResult(
        **schemas.plain(c, CandidateResult, but=("speedup", "gain", "accuracy", "result")),
        speedup=_speedup(c.get("speedup")),
        gain=_speedup(c["gain"]),
        accuracy=AccuracyVerdict.from_json(c["accuracy"]) if c["accuracy"] is not None else None,
        result=_timing(entry, c) if timed else None,
    )


def config_from_json(entry: dict) -> ConfigOptimization:
    """One config object of a checked optimize document of any version (:meth:`OptimizeReport.from_json`). A
    recipe stored before its pooled speedup reads its candidate row's speedup, over that one window."""
    recipe, read = entry["recipe"], lambda record, key: record.from_json(entry[key]) if entry.get(key) else None
    pooled = _speedup(recipe.get("speedup"))
    if pooled is None and entry["recommended"]:
        name = "+".join(entry["recommended"])
        pooled = next((_speedup(c.get("speedup")) for c in entry["candidates"] if c["name"] == name), None)
    return ConfigOptimization(
        baseline=_timing(entry, entry["baseline"], error=entry["error"]),
        candidates=tuple(_candidate_from_json(entry, c) for c in entry["candidates"]),
        recommended=tuple(entry["recommended"]),
        recipe_code=tuple(recipe["code"]),
        run_command=recipe["run_command"],
        baseline_command=recipe.get("baseline_command"),
        not_tried=tuple((t["name"], t["reason"]) for t in entry["not_tried"]),
        notes=tuple(entry["notes"]),
        error=entry["error"],
        elapsed_s=entry["elapsed_s"],
        fresh=read(FreshCheck, "fresh"),
        recipe_speedup=pooled,
        recipe_window_speedups=tuple(recipe.get("window_speedups", ())) or ((pooled.median,) if pooled else ()),
        recipe_process_windows=recipe.get("process_windows", 0),
        recipe_process_run_ids=tuple(recipe.get("process_run_ids", ())),
        cut_short=entry.get("cut_short", False),
        head_to_head=read(HeadToHead, "head_to_head"),
        unconfirmed=read(Unconfirmed, "unconfirmed"),
        baseline_drift=read(Speedup, "baseline_drift"),
    )


def _versions(v2: bool, verdicts: tuple[str, ...], v3: bool = False) -> tuple[schemas.Check, schemas.Check]:
    """The checks of one optimize version's report and config (docs/design.md, "Optimize JSON"): v2 and v3 need
    every key (v3 a config's ``unconfirmed`` too); v1 needs the keys v1 began with and checks a key added during
    v1 where present. ``verdicts``: its candidate verdicts."""
    s = schemas
    num, text = s.nullable(s.number), s.nullable(s.text)

    def keys(first: dict, later: dict | None = None, maybe: dict | None = None) -> s.Check:
        later, maybe = later or {}, maybe or {}
        return s.keys(first | later, maybe) if v2 else s.keys(first, later | maybe)

    speedup = s.nullable(keys({"median": s.number, "ci95": s.pair(s.number), "noise_floor": s.number}))
    top_op = s.nullable(keys({"name": s.text, "share": s.number}))
    timing = {"median_ms": num, "p95_ms": num, "peak_mem_bytes": num, "top_op": top_op}
    candidate = keys(
        {"name": s.text, "verdict": s.one_of(verdicts), "reason": s.text, "rel_l2": num, "max_abs": num}
        | {"setup_s": num, "gain": speedup, "accuracy": s.nullable(s.obj), "break_even_calls": num, **timing}
        | {"error": text, "cause": text, "time_s": s.number, "stacked_on": text},
        {"baseline_ms": num},
        {"speedup": speedup, "rounds": s.nullable(s.whole())},  # speedup absent (or null) when not timed
    )
    recipe = keys(
        {"code": s.list_of(s.text), "run_command": text},
        {"baseline_command": text, "speedup": speedup, "windows": s.whole(), "window_speedups": s.list_of(s.number)}
        | {"process_windows": s.whole(), "process_run_ids": s.list_of(s.text)}
        | {"process_speedups": s.list_of(s.number)},
    )
    head_to_head = keys({"first": s.text, "rival": s.text, "gain": speedup, "kept": s.text, "error": text})
    fresh = keys(
        {"pairs": s.whole(), "verdict": s.one_of(FRESH_VERDICTS), "reason": s.text, "speedup": speedup}
        | {"baseline_ms": s.list_of(s.number), "recipe_ms": s.list_of(s.number), "run_ids": s.list_of(s.text)}
        | {"error": text, "elapsed_s": s.number}
    )
    found = keys({"name": s.text, "speedup": speedup, "windows": s.whole()}, maybe={"accepted": s.list_of(s.text)})
    unconfirmed = {"unconfirmed": s.nullable(found)}
    config = keys(
        {"model": s.text, "input_shape": s.list_of(s.whole()), "batch": s.whole()}
        | {"precision": s.one_of(PRECISIONS), "device": s.one_of(DEVICES), "mode": s.one_of(MODES)}
        | {"error": text, "baseline": keys({**timing, "setup_s": num}), "candidates": s.list_of(candidate)}
        | {"recommended": s.list_of(s.text), "recipe": recipe}
        | {"not_tried": s.list_of(keys({"name": s.text, "reason": s.text}))}
        | {"notes": s.list_of(s.text), "elapsed_s": s.number},
        {"inputs": s.list_of(keys({"shape": s.list_of(s.whole()), "dtype": text})), "settings": s.obj}
        | {"label": s.text, "head_to_head": s.nullable(head_to_head), "cut_short": s.flag}
        | {"fresh": s.nullable(fresh), **(unconfirmed if v3 else {})},
    )
    report = keys(
        {"optimize_id": s.text, "created": s.text, "baseline_run_id": s.text, "recipe_run_id": text}
        | {"tolerance": s.number, "budget_s": s.number, "rounds": s.whole(), "env": s.obj}
        | {"configs": s.list_of(config)},
        {"verify": s.whole(), "interrupted": s.flag, "warnings": s.list_of(s.text)},
    )
    return report, config


_V3 = _versions(True, OPTIMIZE_VERDICTS, v3=True)
_V2, _V1 = _versions(True, OPTIMIZE_VERDICTS_V2), _versions(False, OPTIMIZE_VERDICTS_V2)
#: ``{schema id: check}`` of optimize documents, and of one config object of each (kept apart by the database).
DOCUMENTS = {schemas.OPTIMIZE: _V3[0], schemas.OPTIMIZE_V2: _V2[0], schemas.OPTIMIZE_V1: _V1[0]}
CONFIGS = {schemas.OPTIMIZE: _V3[1], schemas.OPTIMIZE_V2: _V2[1], schemas.OPTIMIZE_V1: _V1[1]}


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
    sides of :class:`~surrobench.records.paired.PairedSamples` (the module docstring's comparison with optimize).

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
    within = agree.verdict() == "unchanged"  # the whole interval within the margin, not the estimate
    how = (
        f"optimize's {n} over the fresh pairs {agree.text()}, "
        + ("a difference beyond" if differs else "no difference beyond" if within else "inconclusive: wider than")
        + f" the {agree.margin_text()}"
    )
    if fresh.faster():
        verdict = "not_reproduced" if differs else "reproduced"
    else:  # a fresh interval down to 1 reproduces no speedup, whatever it holds
        verdict = "not_reproduced" if differs else "overlaps"
        how += (
            f", but the fresh processes show no speedup beyond their noise (lower bound {fresh.ci95[0]:.2f}, "
            f"{fresh.margin_text(cleared=False)})"
        )
    reason = (
        f"fresh {fresh.text()} over {len(baseline_ms)} process pairs "
        f"({fresh.median / optimized.median - 1:+.1%} against optimize's {optimized.median:.2f}x; pair by pair "
        f"{', '.join(f'{e:.2f}x' for e in each)}), {how}; between processes the baseline median moved "
        f"{_spread(tuple(baseline_ms)):.0%}, the recipe's {_spread(tuple(recipe_ms)):.0%}"
    )
    return verdict, reason
