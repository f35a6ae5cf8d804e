"""``optimize(objective="capacity")``: the remedies and the batching policy that maximise the capacity at a P99
target, within the accuracy tolerance (``surrobench optimize --objective capacity --p99-ms T``).

Each candidate (the baseline, every remedy for the device, then a greedy stack on the lead, the accurate remedy
predicted highest that wins, else the highest if above the baseline) is built once as
serve's batch service, checked by optimize's accuracy guard, its unloaded latency measured and its capacity
predicted per policy (:mod:`surrobench.analysis.capacity`). The top is the accurate candidate predicted highest
whose service time beats the baseline's by the paired rule (:mod:`surrobench.records.paired`; a stack against the
stack below it). Top and baseline are verified under open-loop load as two stored serve runs; the top is
recommended when :func:`~surrobench.results.serve_store.judge_capacities` says ``higher``.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE, AccuracyVerdict, check_accuracy
from surrobench.analysis.capacity import infeasible_reason, predict_capacity
from surrobench.analysis.feasibility import without_baseline_own
from surrobench.api.benchmark import open_store, sweep_plan
from surrobench.api.serve import _one_config, serve, serve_request
from surrobench.errors import Interrupted, StoreWriteError, Unsaved, UsageError
from surrobench.execution.batcher import saturated_cycles, unloaded_latency
from surrobench.execution.failures import explain_failure
from surrobench.execution.reference import reference_outputs
from surrobench.execution.remedies import Recipe, Remedy, candidate_remedies
from surrobench.execution.runner import config_inputs, in_grad_mode, prepare_model
from surrobench.execution.serve_step import NonfiniteOutputError, model_service
from surrobench.execution.sweep import new_run_id
from surrobench.records.run import created_now
from surrobench.records.serve import Capacity, CapacityCandidate, CapacityOptimization, PolicyResult, ServePolicy
from surrobench.records.serve import UnloadedLatency, padded_size
from surrobench.records.paired import PairedSamples, Rounds, split_rounds
from surrobench.results.optimize_store import add_optimization
from surrobench.results.serve_store import judge_capacities
from surrobench.tune.bench import free_device, probe_forward, remedy_infeasible
from surrobench.tune.request import remedy_names

#: The policies searched when none are given: no batching, and batches of up to 4, 8 and 16 (the range the H200
#: measurements found useful, docs/benchmarks/h200-serve.md), each waiting at most 0.5 or 2 ms.
DEFAULT_MAX_BATCH = (1, 4, 8, 16)
DEFAULT_MAX_WAIT_MS = (0.5, 2.0)
#: The execution settings a recipe sets, and the sweep keyword that carries each to :func:`serve`.
SETTINGS = {
    "precision": "precisions",
    "mode": "modes",
    "channels_last": "channels_last",
    "compile_mode": "compile_mode",
    "cudnn_benchmark": "cudnn_benchmark",
    "threads": "threads",
}
#: The back-to-back samples in order (``batcher.MIN_UNLOADED_SAMPLES`` at least), the last ``len % PAIRED_ROUNDS``
#: left out, as this many equal rounds for the paired rule: its bootstrap draws rounds (the drift into the backlog's).
PAIRED_ROUNDS = 4


@dataclass(frozen=True)
class Evaluated:
    """A candidate as measured: its settings, the accuracy guard's verdict, the unloaded latency by batch size."""

    settings: dict
    accuracy: AccuracyVerdict
    unloaded: dict[int, UnloadedLatency]


#: ``evaluate(recipe) -> Evaluated``; ``verify(recipe, settings, policy) -> (run id, PolicyResult)`` its capacity
#: measured under load.
Evaluate = Callable[[Recipe], Evaluated]
Verify = Callable[[Recipe, dict, ServePolicy], tuple[str, PolicyResult]]


def _rounds(samples: tuple[float, ...]) -> Rounds:
    return split_rounds(samples[: len(samples) - len(samples) % PAIRED_ROUNDS], PAIRED_ROUNDS)


def service_faster(base: dict[int, UnloadedLatency], cand: dict[int, UnloadedLatency], batch: int) -> bool:
    """Whether ``cand``'s back-to-back service time of the padded size of ``batch`` is faster than ``base``'s by
    the one paired rule (:meth:`PairedSamples.separate`, each side as :data:`PAIRED_ROUNDS` rounds)."""
    size = padded_size(batch, tuple(sorted(cand)))
    pair = PairedSamples.separate(_rounds(base[size].back_to_back_ms), _rounds(cand[size].back_to_back_ms))
    return pair.speedup().faster()


def capacity_search(
    remedies: list[Remedy],
    policies: tuple[ServePolicy, ...],
    target_p99_ms: float,
    evaluate: Evaluate,
    verify: Verify,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    seed: int = 0,
    workload: dict | None = None,
    budget_s: float | None = None,
    infeasible: Callable[[Remedy], str | None] = lambda remedy: None,
    own: list[str] | None = None,
) -> CapacityOptimization:
    """The search of the module docstring over ``remedies`` (in order) and ``policies``. ``infeasible(remedy)``: why
    a remedy cannot help (:func:`~surrobench.tune.bench.remedy_infeasible`), a note, not measured; ``own``: the
    note on the baseline's own (:func:`~surrobench.analysis.feasibility.without_baseline_own`). ``budget_s``: no candidate after the baseline starts once this many
    seconds have passed (those left are named in a note); the two verifying loads run after it. A verified capacity
    outside :data:`PREDICTION_NOTE_RATIO` of its prediction is a note. A candidate that raises (SystemExit too) is
    recorded failed, its accuracy the :func:`~surrobench.execution.failures.explain_failure` line; a failed baseline
    ends the search, no recipe.

    Raises:
        Interrupted: Ctrl-C, or ``verify``'s Interrupted (its partial the serve run cut): ``partial`` the search so
            far, with the baseline's verified capacity if it finished and a last note naming what was cut.
    """
    began = time.monotonic()
    measured: dict[str, tuple[CapacityCandidate, dict, Recipe]] = {}
    candidates: list[CapacityCandidate] = []
    skipped = []  # remedies past the budget
    notes = list(own or ())  # then the infeasible, with the reason
    asked = dict(workload=workload or {}, target_p99_ms=target_p99_ms, tolerance=tolerance)
    out = CapacityOptimization(**asked, candidates=(), top="baseline", recipe="baseline", search_s=0.0)

    def judge(recipe: Recipe, against: dict | None) -> CapacityCandidate | None:
        if len(recipe.remedies) == 1 and (why := infeasible(recipe.remedies[0])):  # as latency optimize skips it
            notes.append(f"{recipe.name}: infeasible, not measured: {why}")
            return None
        if against is not None and budget_s is not None and time.monotonic() - began >= budget_s:
            skipped.append(recipe.name)
            return None
        try:
            got = evaluate(recipe)
        except (Exception, SystemExit) as exc:  # a candidate (the baseline too) that cannot run on this model
            line = explain_failure(exc, asked["workload"].get("device")).line
            candidates.append(CapacityCandidate(recipe.name, {}, None, line))
            return candidates[-1]
        alike = {p: replace(p, max_wait_ms=0.0) if p.max_batch == 1 else p for p in policies}  # batch 1 never waits
        once = {p: predict_capacity(got.unloaded, p, target_p99_ms, seed) for p in set(alike.values())}
        predicted = {p.label(): once[alike[p]] for p in policies}
        best = max(policies, key=lambda p: predicted[p.label()])
        faster = None if against is None else service_faster(against, got.unloaded, best.max_batch)
        cand = CapacityCandidate(
            recipe.name, got.settings, got.accuracy.ok, got.accuracy.reason, predicted, best, faster
        )
        measured[recipe.name] = (cand, got.unloaded, recipe)
        candidates.append(cand)
        return cand

    try:
        base = judge(Recipe(), None)
        if base.accurate is None:  # nothing to compare against, as latency optimize's failed baseline
            return replace(out, candidates=(base,), recipe=None, search_s=time.monotonic() - began)
        singles = [(r, c) for r in remedies if (c := judge(Recipe((r,)), measured["baseline"][1])) is not None]
        # stacked on the lead (the accurate single predicted highest that beats the baseline, else the one predicted
        # highest if above the baseline: a CUDA graph whose full batch is no faster alone still frees tf32's gain,
        # docs/benchmarks/h200-capacity.md, 2026-12-07): every other accurate remedy, kept when it wins against the
        # stack below, its service timed against the baseline's until a stack has won (tf32 helps under a CUDA graph)
        accurate = sorted([(r, c) for r, c in singles if c.accurate], key=lambda rc: -rc[1].best_predicted_rps)
        fallback = accurate[0] if accurate and accurate[0][1].best_predicted_rps > base.best_predicted_rps else None
        lead = next(((r, c) for r, c in accurate if _wins(c, base)), fallback)
        if lead is not None:
            stack, top = Recipe((lead[0],)), lead[1]
            for remedy, _ in accurate:
                if remedy == lead[0] or stack.conflict(remedy) is not None:
                    continue
                tried = judge(stack.plus(remedy), measured[stack.name if _wins(top, base) else "baseline"][1])
                if tried is not None and _wins(tried, top):
                    stack, top = stack.plus(remedy), tried
        top = max([c for c in candidates if c is base or _wins(c, base)], key=lambda c: c.best_predicted_rps)
        # infeasible when every accurate candidate's isolated P99 exceeds the target (the baseline's reason is given)
        reasons = [
            infeasible_reason(measured[c.recipe][1], target_p99_ms)
            for c in candidates
            if c.recipe in measured and (c.accurate or c is base)
        ]
        why = reasons[0] if all(reasons) else None
        if skipped:
            skip = f"not tried, the {budget_s:g} s budget spent on the candidates before them: {', '.join(skipped)}"
            notes.append(skip)
        out = replace(out, candidates=tuple(candidates), top=top.recipe, infeasible=why, notes=tuple(notes))
        if why is not None:
            return replace(out, search_s=time.monotonic() - began)
        base_id, base_res = verify(Recipe(), base.settings, base.best_policy)
        out = replace(out, baseline_run_id=base_id, baseline_rps=base_res.capacity_offered_rps())
        out = replace(out, notes=out.notes + _prediction_note(base, base_res.capacity))
        out = replace(out, infeasible=base_res.capacity.infeasible)  # the check under load's own answer, if any
        if top is not base:
            top_id, top_res = verify(measured[top.recipe][2], top.settings, top.best_policy)
            verdict = judge_capacities(base_res, top_res, target_p99_ms)[2]
            out = replace(out, top_run_id=top_id, top_rps=top_res.capacity_offered_rps(), verdict=verdict)
            if verdict == "higher":  # the top met the target above the baseline (under load: feasible)
                out = replace(out, recipe=top.recipe, infeasible=None)
            out = replace(out, notes=out.notes + _prediction_note(top, top_res.capacity))
    except (Interrupted, KeyboardInterrupt) as cut:  # a verifying serve's partial: its run, stored interrupted
        doing = f"verifying {'the baseline' if out.baseline_run_id is None else out.top} under load"
        what = doing if out.candidates else f"measuring the candidates ({len(candidates)} measured)"
        run = f" (serve run {cut.partial.run_id}, interrupted)" if getattr(cut, "partial", None) else ""
        base = "" if out.baseline_run_id is None else f"; the baseline verified as serve run {out.baseline_run_id}"
        out = replace(out, candidates=tuple(candidates), recipe=None, search_s=time.monotonic() - began)
        out = replace(out, notes=(*out.notes, f"interrupted while {what}{run}"))
        raise Interrupted(f"{str(cut) or 'interrupted'} while {what}{base}", out) from None
    return replace(out, search_s=time.monotonic() - began)


#: A verified capacity below half or above twice its prediction is a note: the ranking rested on predictions.
PREDICTION_NOTE_RATIO = 2.0


def _prediction_note(cand: CapacityCandidate, measured: Capacity) -> tuple[str, ...]:
    """A note when ``measured``'s passing rate is outside :data:`PREDICTION_NOTE_RATIO` of ``cand``'s prediction."""
    predicted, got = cand.best_predicted_rps, measured.capacity_rps
    if not predicted or 1 / PREDICTION_NOTE_RATIO <= got / predicted <= PREDICTION_NOTE_RATIO:  # 0: none passed
        return ()
    return (
        f"{cand.recipe}: predicted {predicted:.4g} rps, measured {got:.4g} rps under load ({got / predicted:.2g}x): "
        "the candidates were ranked on predictions from their unloaded service times, which this load did not "
        "bear out (a busy host's tail, or service times that change under load); the measured capacities decide",
    )


def _wins(cand: CapacityCandidate, over: CapacityCandidate) -> bool:
    """An accurate candidate predicted higher than ``over``, whose service is faster by the paired rule, or which
    meets the target at some rate where ``over`` meets it at none (its tail, not its median, is what differs)."""
    higher = bool(cand.accurate) and cand.best_predicted_rps > over.best_predicted_rps
    return higher and (bool(cand.service_faster) or over.best_predicted_rps == 0.0)


def optimize_capacity(
    model,
    *,
    p99_ms: float | None,
    db=None,
    tolerance: float = DEFAULT_TOLERANCE,
    thorough: bool = False,
    only=None,
    max_batch=DEFAULT_MAX_BATCH,
    max_wait_ms=DEFAULT_MAX_WAIT_MS,
    duration_s: float = 3.0,
    warmup_s: float | None = None,
    drain_s: float = 5.0,
    min_requests: int | None = None,
    budget_s: float | None = None,
    **sweep,
) -> CapacityOptimization:
    """:func:`capacity_search` on ``model``'s one config (``sweep`` as for :func:`~surrobench.api.serve.serve`):
    candidates built as serve's batch service of the largest ``max_batch``, checked against the fp32 eager output
    with ``tolerance``, the top verified by :func:`~surrobench.api.serve.serve` (``duration_s``, ``warmup_s``,
    ``drain_s``, ``min_requests`` per load), both serve runs stored in ``db`` (tagged ``capacity:baseline`` and
    ``capacity:recipe``), the record too as an optimization (its id and creation time set), partial when interrupted.

    Raises:
        UsageError: no ``p99_ms``; bad serve or sweep settings; more than one config; unknown remedy names.
        Unsaved: the record's write failed; it carries the document (``surrobench import`` takes it back).
        Interrupted: as :func:`capacity_search`, the serve run cut stored ``interrupted``.
    """
    if p99_ms is None:
        raise UsageError.naming("the capacity objective needs {p99_ms}, the latency target", ("p99_ms",))
    load = dict(duration_s=duration_s, warmup_s=warmup_s, drain_s=drain_s)
    load.update({} if min_requests is None else {"min_requests": min_requests})
    request = serve_request(find_max=True, p99_ms=p99_ms, max_batch=max_batch, max_wait_ms=max_wait_ms, **load)
    plan = sweep_plan(model, caller=optimize_capacity, batches=1, iters=1, **sweep)
    _one_config(plan, request)
    cfg = plan.configs[0]
    names = remedy_names(only, cfg.device, thorough=thorough)
    pool = candidate_remedies(cfg.device, thorough=thorough, precision=cfg.precision)
    remedies = [r for r in pool if cfg.device in r.devices and (names is None or r.name in names)]
    remedies, own = without_baseline_own(remedies, cfg)  # as latency optimize
    top_batch = max(p.max_batch for p in request.policies)

    @functools.cache
    def built() -> tuple:  # at the baseline's evaluate: a factory or forward that fails is the baseline's failure
        prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed)
        reference = in_grad_mode(prepared, lambda: reference_outputs(cfg, prepared))  # the forward's grad mode first
        sets, probe = config_inputs(cfg, prepared), probe_forward(cfg, prepared)
        return prepared, *reference[:2], sets, probe

    def infeasible(remedy: Remedy) -> str | None:  # latency optimize's rule, on the baseline its evaluate built
        prepared, _, _, sets, probe = built()
        return remedy_infeasible(remedy, cfg, prepared, sets, probe)

    def evaluate(recipe: Recipe) -> Evaluated:
        run_cfg = recipe.apply(cfg)
        prepared, reference, fp64, *_ = built()
        try:
            with model_service(run_cfg, prepared, top_batch, cfg.warmup) as (service, info):
                verdict = check_accuracy(info.first_output, reference, fp64, tolerance=tolerance)
                unloaded = unloaded_latency(service, info.sizes, request.unloaded_budget_s)
                if not infeasible_reason(unloaded, p99_ms):  # the loaded cycle, for the prediction
                    unloaded = saturated_cycles(service, unloaded)
        finally:
            free_device(cfg.device)  # each candidate's graphs and buffers go before the next is built
        return Evaluated({k: getattr(run_cfg, k) for k in SETTINGS}, verdict, unloaded)

    keep = {k: v for k, v in sweep.items() if k not in (*SETTINGS.values(), "tag")}

    def verify(recipe: Recipe, settings: dict, policy: ServePolicy) -> tuple[str, PolicyResult]:
        run_settings = {SETTINGS[k]: v for k, v in settings.items() if v is not None}
        record = serve(
            model,
            db=db,
            find_max=True,
            p99_ms=p99_ms,
            max_batch=policy.max_batch,
            max_wait_ms=policy.max_wait_ms,
            **load,
            **keep,
            **run_settings,
            tag=f"capacity:{'baseline' if not recipe.remedies else 'recipe'} {recipe.name}",
        )
        if record.policies[0].capacity is None:  # not served: its first output held NaN/Inf (as evaluate refuses)
            raise NonfiniteOutputError(record.policies[0].nonfinite)
        return record.run_id, record.policies[0]

    workload = {"model": cfg.model, "shape_label": cfg.shape.label(), "device": cfg.device}
    with open_store(db):  # the database is checked (and migrated) before anything is measured
        pass
    options = dict(tolerance=tolerance, seed=cfg.seed, workload=workload, budget_s=budget_s, infeasible=infeasible)
    ident = dict(optimize_id=new_run_id(), created=created_now())
    try:
        found = replace(
            capacity_search(remedies, request.policies, p99_ms, evaluate, verify, own=own, **options), **ident
        )
    except Interrupted as cut:  # the partial document stored too; a failed write does not hide the interruption
        cut.partial = replace(cut.partial, **ident)
        with open_store(db) as store, contextlib.suppress(StoreWriteError):
            add_optimization(store, cut.partial.to_json())
        raise
    with open_store(db) as store:
        try:
            add_optimization(store, found.to_json())
        except StoreWriteError as exc:  # nothing measured is lost: the CLI keeps the document and says how to import it
            raise Unsaved(
                exc,
                found.to_json(),
                found.optimize_id,
                len(found.candidates),
                what="optimization",
                unit="candidate",
                stored=0,
            ) from None
    return found
