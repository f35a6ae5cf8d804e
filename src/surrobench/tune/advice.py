"""The remedies a diagnosis names, measured (:func:`measure_config`) by optimize's core: each built, checked by the
accuracy guard and timed in a window with the baseline, one more while inconclusive (:meth:`Trials.try_recipe`); no
stacking, confirmation or fresh processes. Order: :func:`recipes_to_measure`. Budget
(:attr:`surrobench.tune.trials.Trials.bounded`): a remedy starts only when its least measurement fits, and a round
of its window only when it would end within the budget; those left out are ``not-measured``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

import torch

from surrobench.errors import Interrupted, UsageError
from surrobench.execution.config import ExecConfig
from surrobench.execution.failures import explain_failure
from surrobench.execution.remedies import Recipe, Remedy, candidate_remedies, compiles
from surrobench.execution.runner import PreparedModel, prepare_model
from surrobench.execution.sweep import SweepPlan
from surrobench.records.run import ConfigResult, grouped
from surrobench.records.stats import LatencyStats
from surrobench.analysis.evidence_checks import OP_LEVEL_KINDS
from surrobench.analysis.feasibility import baseline_own
from surrobench.records.findings import MEASURED, UNMEASURED_WORDS, Finding, MeasuredRemedy, direction, rank_findings
from surrobench.results.measured_remedies import floored, measured_remedy, on_step, remedy_parts
from surrobench.records.vocab import remedy_id
from surrobench.results.optimize import CandidateResult
from surrobench.tune.bench import DeviceBench, free_device, room_for_compiled_variants
from surrobench.tune.request import OptimizeRequest
from surrobench.tune.trials import FIRST_COMPILE_S, Trials

#: Default ``measure_s`` per config, s: the AFNO at 256² b4 took 90 s on the H200 with it, timing and profiling
#: 20-30 s (docs/benchmarks/h200-measured-advice.md); diagnose then ends by DIAGNOSE_TARGET_S a config
#: (COUNTERS_TARGET_S with counters); a budget below MIN_MEASURE_S is not started (no remedy fits).
DEFAULT_MEASURE_S = 45.0
DIAGNOSE_TARGET_S, COUNTERS_TARGET_S, MIN_MEASURE_S = 75.0, 135.0, 10.0

#: The reason of a remedy left ``not-measured`` by Ctrl-C (or SIGTERM, SIGHUP).
INTERRUPTED = "interrupted by Ctrl-C or a signal"


class MeasuringInterrupted(KeyboardInterrupt):
    """Ctrl-C while :func:`measure_findings` measured: ``args`` its ``(measured, notes)`` as far as they got."""

    def __str__(self) -> str:
        """``3 of 7 remedies measured``: of those that apply, in every config."""
        applied = [m for got in self.args[0].values() for m in got if m.verdict != "infeasible"]
        return f"{sum(m.verdict in MEASURED for m in applied)} of {len(applied)} remedies measured"


def recipes_to_measure(
    findings: Sequence[Finding], device: str, *, step_ms: float | None = None, unreliable: bool = False
) -> list[Recipe]:
    """The recipes of the remedies ``findings`` name on ``device``, each once, findings by the step time at stake:
    the estimate, else the op time their ops hold (:attr:`~surrobench.records.findings.Finding.op_share` times
    ``step_ms``: an uncalibrated compute_bound), largest first; those with neither in rank order (``rank_findings``:
    severity first); ``unreliable`` (the config's profile is: a busy host's, say), its op-level verdicts' after the
    others' (their stake is the profile's; a fresh-user trial's busy host spent the budget on a low fragmented_ops's
    compile before the thread count its host finding named); each finding's remedies in the order it names them.
    A stacked clause is one recipe (skipped when two of its remedies set the same setting); a remedy id every
    candidate of that id (``threads``: each count)."""
    by_id = grouped(candidate_remedies(device), lambda r: remedy_id(r.name))

    def stake(f: Finding) -> float:
        return f.estimated_gain_ms if f.estimated_gain_ms is not None else f.op_share * (step_ms or 0.0) or -1.0

    order = sorted(rank_findings(list(findings)), key=lambda f: (unreliable and f.kind in OP_LEVEL_KINDS, -stake(f)))
    out: list[Recipe] = []
    for f in order:
        for clause in f.clauses:
            if clause.stacked:
                parts = [by_id[r][0] for r in clause.remedies if r in by_id]
                recipe = Recipe(tuple(parts[:1]))
                for part in parts[1:]:
                    recipe = recipe.plus(part) if recipe.conflict(part) is None else recipe
                candidates = [recipe] if len(recipe.remedies) == len(clause.remedies) > 1 else []
            else:
                candidates = [Recipe((r,)) for rid in clause.remedies for r in by_id.get(rid, ())]
            out += [c for c in candidates if c.name not in {o.name for o in out}]
    return out


def measure_recipes(
    trials: Trials, recipes: Sequence[Recipe], tolerance: float, timed: LatencyStats | None = None
) -> tuple[MeasuredRemedy, ...]:
    """Each of ``recipes`` measured through ``trials``, timed handles released at once (diagnose profiles none); after
    Ctrl-C, the one cut and the rest ``not-measured`` for :data:`INTERRUPTED`. Every ``saved_ms`` is taken on one step:
    the ``timed`` step's median (the one the diagnosis shows), else the median of the windows' baselines: a launch-bound
    baseline drifts between windows (docs/benchmarks/h200-measured-advice.md), and savings on different baselines would
    rank remedies against their own speedups. A window whose baseline drifted from the timed step is marked ``drifted``
    (:func:`~surrobench.results.measured_remedies.on_step`; :func:`measure_findings`' note names it)."""
    out = []
    turns = trials.crowded_turns(recipes)  # as optimize's singles: a thread count above the free cores last, said
    for recipe, crowd in turns:
        reasons = [r for r in (trials.bench.infeasible(part) for part in recipe.remedies) if r]
        if reasons:
            result = CandidateResult(recipe.name, "infeasible", "; ".join(reasons))
        elif reason := trials.spent(recipe) or _first_compile_late(trials, recipe):
            out.append(MeasuredRemedy(recipe.name, "not-measured", reason=f"{crowd}: {reason}" if crowd else reason))
            continue
        else:
            try:
                result, _ = trials.try_recipe(recipe, crowd=crowd)
            except KeyboardInterrupt:  # those measured stand; this one and the rest are not measured
                out += _interrupted([recipe, *(r for r, _ in turns)], trials.bench.infeasible)
                break
            finally:
                trials.timed.clear()
                trials.bench.free()
        trials.judged(result)
        out.append(measured_remedy(result, tolerance, crowd=crowd))
    steps = [m.baseline_ms for m in out if m.baseline_ms]
    return on_step(out, timed, statistics.median(steps) if steps else None)  # one step: windows drift


def _interrupted(recipes: Sequence[Recipe], infeasible: Callable[[Remedy], str | None]) -> tuple[MeasuredRemedy, ...]:
    """``recipes`` Ctrl-C left ``not-measured``, those ``infeasible`` says why ``infeasible`` (``Bench.infeasible``, or
    :func:`~surrobench.analysis.feasibility.baseline_own`): trial35's cut b2 listed its own threads=1 to try."""
    out = (("; ".join(filter(None, map(infeasible, r.remedies))), r.name) for r in recipes)
    return tuple(MeasuredRemedy(r, "infeasible" if w else "not-measured", reason=w or INTERRUPTED) for w, r in out)


def _first_compile_late(trials: Trials, recipe: Recipe) -> str:
    """Why ``recipe`` waits: the first compiled candidate, with less than a first compilation left (its ``setup_s`` in
    :attr:`Trials.stored` where an optimization of the config compiled it, else :data:`FIRST_COMPILE_S`'s), or ""."""
    first = compiles(recipe.name) and not any(compiles(c.name) and c.time_s for c in trials.done)
    cited = (trials.stored or {}).get(remedy_parts(recipe.name), {})
    setup = cited.get("setup_s")
    (need, where), left = FIRST_COMPILE_S[trials.bench.device], max(trials.budget_end - trials.clock(), 0.0)
    took = f"{setup:.3g} s in optimization {cited['optimize_id']}" if setup else f"up to {need:g} s on {where}"
    if not first or (setup or need) <= left:
        return ""
    return f"a first compilation took {took}, none ran here; {left:.0f} s left"


def measure_config(
    cfg: ExecConfig,
    prepared: PreparedModel,
    findings: Sequence[Finding],
    budget_s: float,
    stored: Mapping[frozenset[str], dict] | None = None,
    *,
    timed: LatencyStats | None = None,
    unreliable: bool = False,
) -> tuple[MeasuredRemedy, ...]:
    """The remedies ``findings`` of ``cfg`` name, measured within ``budget_s`` seconds from now (the baseline's
    start included), each with its :func:`~surrobench.records.findings.direction`, savings on the ``timed`` step
    (:func:`measure_recipes`; ``stored``: :attr:`Trials.stored`; ``unreliable``: :func:`recipes_to_measure`); empty
    when none or ``budget_s`` is 0. Raises what :meth:`DeviceBench.start` raises, or KeyboardInterrupt."""
    recipes = recipes_to_measure(findings, cfg.device, step_ms=timed.median if timed else None, unreliable=unreliable)
    if not recipes or budget_s <= 0:
        return ()
    request = OptimizeRequest((), budget_s=budget_s, rebuildable=False)  # the default tolerance and rounds
    end = time.monotonic() + budget_s
    try:
        with room_for_compiled_variants():
            bench = DeviceBench.start(cfg, prepared, request, end)
            trials = Trials(bench, request.rounds, budget_s=budget_s, budget_end=end, bounded=True, stored=stored)
            threads = cfg.threads or torch.get_num_threads()  # the baseline's, as the feasibility rules read it
            measured = measure_recipes(trials, recipes, request.tolerance, timed)
            return tuple(replace(m, direction=direction(m.remedy, threads)) for m in measured)
    except Interrupted:  # Ctrl-C while the baseline was set up: diagnose keeps its estimates
        raise KeyboardInterrupt from None
    finally:
        free_device(cfg.device)


def check_measure_s(measure_s: object) -> float:
    """``measure_s`` as seconds; raises UsageError unless a finite number >= 0."""
    if isinstance(measure_s, bool) or not isinstance(measure_s, (int, float)) or not 0 <= measure_s < math.inf:
        raise UsageError.bad("measure_s", f"{measure_s!r}: a finite number of seconds >= 0 (0: estimates only)")
    return float(measure_s)


def measure_findings(
    plan: SweepPlan,
    results: Sequence[ConfigResult],
    findings: Sequence[Finding],
    measure_s: float,
    *,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    cited: Mapping[str, dict] | None = None,
    unreliable: frozenset[str] = frozenset(),
) -> tuple[dict[str, tuple[MeasuredRemedy, ...]], list[str]]:
    """:func:`measure_config` of each of ``results`` (``ok`` configs of ``plan``; ``unreliable``: the labels of those
    whose profile is), ``measure_s`` each, at most an even share of what is left before ``deadline`` (``clock()``;
    below :data:`MIN_MEASURE_S`, not measured):
    ``{label: measurements}`` and a note per config (what was measured, what not, the windows that drifted;
    ``cited``: ``{label: optimize config object}`` cited, its noise floor the rule's where larger: :func:`floored`).

    Raises:
        MeasuringInterrupted: Ctrl-C; its ``args`` the two as far as they got, every remedy it left ``not-measured``
            for :data:`INTERRUPTED`.
    """
    measured: dict[str, tuple[MeasuredRemedy, ...]] = {}
    notes, cut = [], False
    for i, result in enumerate(results):
        label = result.label()
        entry = (cited or {}).get(label, {})  # the optimize config object cited for it: its floor, its candidates
        stored = {remedy_parts(c["name"]): c for c in entry.get("candidates", ())}  # its setups (Trials.stored)
        mine = [f for f in findings if f.config == label]
        cfg = plan.config_for(result)
        own = partial(baseline_own, baseline=cfg)  # a remedy the baseline has: not applicable, Ctrl-C or not
        started = clock()
        budget = measure_s if deadline is None else min(measure_s, (deadline - started) / (len(results) - i))
        if not cut and deadline is not None and budget < MIN_MEASURE_S and recipes_to_measure(mine, cfg.device):
            notes.append(f"{label}: remedies not measured: {max(budget, 0.0):.0f} s left of the default deadline")
            continue
        if cut:  # a config after the one Ctrl-C cut: none of its remedies measured
            got = _interrupted(recipes_to_measure(mine, cfg.device), own)
        else:
            try:
                prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed)
                doubt = label in unreliable
                got = measure_config(cfg, prepared, mine, budget, stored, timed=result.latency_ms, unreliable=doubt)
                got = floored(got, entry)
            except KeyboardInterrupt:
                got, cut = _interrupted(recipes_to_measure(mine, cfg.device), own), True
            except Exception as exc:  # the baseline cannot be rebuilt or run here: estimates only for this config
                notes.append(f"{label}: remedies not measured: {explain_failure(exc, cfg.device).line}")
                continue
        stopped = any(m.reason == INTERRUPTED for m in got)
        cut = cut or stopped
        if not got:
            continue
        measured[label] = got
        done = [
            f"{m.remedy} ({m.verdict}{f' {m.speedup:.2f}x' if m.speedup else ''})" for m in got if m.verdict in MEASURED
        ]
        named = {w: [m.remedy for m in got if m.verdict == v] for v, w in UNMEASURED_WORDS.items()}
        why = {m.remedy: m.reason for m in got if m.verdict == "not-measured" and m.reason != INTERRUPTED}
        n = len(got) - len(named["not applicable"])  # the remedies that apply: one not applicable never ran
        late = ", ".join(f"{m.remedy} (baseline {m.baseline_ms:.3g} ms)" for m in got if m.drifted)
        t = result.latency_ms
        off = f"the timed step's {t.median:.3g} ms [{t.ci95_median[0]:.3g}, {t.ci95_median[1]:.3g}]" if t else ""
        notes.append(
            f"{label}: {len(done)} of {n} remedies measured in {clock() - started:.1f} s (budget {budget:.0f} s)"
            + (f": {', '.join(done)}" if done else "")
            + "".join(f"; {w}: {_with_reasons(names, why)}" for w, names in named.items() if names)
            + (f"; {INTERRUPTED}" if stopped else "")
            + (f"; the host drifted: windows timed the baseline off {off}: {late}" if late else "")
        )
    if cut:
        raise MeasuringInterrupted(measured, notes)
    return measured, notes


def _with_reasons(names: list[str], why: Mapping[str, str]) -> str:
    """``compile, tf32 (budget spent), fp16``: ``names`` grouped by their reason (``why``), each reason once."""
    runs = grouped(names, lambda name: why.get(name, ""))
    return ", ".join(", ".join(run) + (f" ({reason})" if reason else "") for reason, run in runs.items())
