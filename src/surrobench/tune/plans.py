"""Every config of an optimize request searched, stored (baseline and recipe runs, the report beside them) and checked
in fresh processes (:func:`optimize_plans`); and stored runs read back (:func:`sweeps_from_run`, :func:`measured_for`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from surrobench.errors import Interrupted, StoreWriteError, Unsaved, UsageError
from surrobench.execution.compile_cache import shared_compile_cache
from surrobench.execution.env import fingerprint, forward_warnings, sweep_warnings
from surrobench.execution.failures import explain_failure
from surrobench.execution.runner import config_result, failed_result, planned_inputs, prepare_model
from surrobench.execution.sweep import SweepPlan, SweepRequest, mark_unsaved, new_run_id, plan_sweep, resolve_device
from surrobench.records.config import EXEC_SETTINGS
from surrobench.records.run import ConfigResult, RunRecord, created_now
from surrobench.results.measured_remedies import cited_entry
from surrobench.results.optimize import ConfigOptimization, OptimizeReport
from surrobench.results.store import ResultStore
from surrobench.results.optimize_store import add_optimization, optimized_configs
from surrobench.tune.fresh import check_fresh
from surrobench.tune.request import OptimizeRequest
from surrobench.tune.config import optimize_config
from surrobench.tune.bench import free_device
from surrobench.workload.spec import parse_shapes


def optimize_plans(
    request: OptimizeRequest,
    store: ResultStore,
    *,
    command: str | None = None,
    on_config: Callable[[str], None] = lambda label: None,
    on_phase: Callable[[str], None] = lambda text: None,
) -> OptimizeReport:
    """Optimize every config of ``request.sweeps``; store the baseline run, the recipe run and the report.
    ``on_config`` is told each config's label (every input :func:`~surrobench.execution.runner.planned_inputs` builds),
    ``on_phase`` gets a line before each batch of fresh processes."""
    configs = [cfg for plan in request.sweeps for cfg in plan.configs]
    surrogates = {name: s for plan in request.sweeps for name, s in plan.surrogates.items()}
    env = fingerprint(request.sweeps[0].request.device, request.sweeps[0].request.threads)
    now = created_now()
    tag = request.sweeps[0].request.tag
    baseline_run = RunRecord(new_run_id(), now, f"{tag or 'optimize'}:baseline", env)
    recipe_run = RunRecord(new_run_id(), now, f"{tag or 'optimize'}:recipe", env)
    store.begin_run(baseline_run, command)
    db = None if store.path == ":memory:" else Path(store.path)  # where the fresh processes store their runs
    entries: list[ConfigOptimization] = []
    recipe_stored = False
    optimize_id = new_run_id()

    def report(done: list[ConfigOptimization], interrupted: bool) -> OptimizeReport:
        return OptimizeReport(
            optimize_id=optimize_id,
            created=now,
            env=env,
            tolerance=request.tolerance,
            budget_s=request.budget_s,
            rounds=request.rounds,
            baseline_run_id=baseline_run.run_id,
            recipe_run_id=recipe_run.run_id if recipe_stored else None,
            configs=tuple(done),
            fresh_pairs=request.fresh_pairs,
            interrupted=interrupted,
            warnings=tuple(
                sweep_warnings([e.baseline for e in done], env)
                + forward_warnings([c.result for e in done for c in e.candidates if c.result is not None])
                + [w for w in (e.drift_warning() for e in done) if w]
            ),
        )

    def progress(partial: ConfigOptimization | None = None) -> None:
        """The report so far stored as interrupted (a kill loses no verdict); a failed write is left to the config's."""
        with contextlib.suppress(StoreWriteError):
            add_optimization(store, report([*entries, *filter(None, [partial])], True).to_json())

    def keep(entry: ConfigOptimization) -> None:
        """The config's results into their runs, the entry kept first so a failed write keeps it."""
        nonlocal recipe_stored
        entries.append(entry)
        store.add_result(baseline_run.run_id, entry.baseline)
        if entry.recipe_result is not None:
            if not recipe_stored:
                store.begin_run(recipe_run, command)
                recipe_stored = True
            store.add_result(recipe_run.run_id, entry.recipe_result)

    try:
        with shared_compile_cache():  # one torch.compile cache for this process and its fresh ones
            for cfg in configs:
                inputs = planned_inputs(cfg, surrogates[cfg.model])
                on_config(config_result(cfg, inputs, "ok", error=None).label())
                try:
                    prepared = prepare_model(surrogates[cfg.model], cfg.device, cfg.seed)
                except (Exception, SystemExit) as exc:  # a raising factory: recorded as run records it, the rest go on
                    baseline = failed_result(cfg, "error", exc, inputs)
                    entry = ConfigOptimization(baseline=baseline, error=explain_failure(exc, cfg.device).line)
                else:
                    entry = optimize_config(cfg, prepared, request, db=db, on_phase=on_phase, on_progress=progress)
                    del prepared
                keep(entry)  # kept even when Ctrl-C comes during its fresh check
                progress()
                free_device(cfg.device)
                if request.fresh_pairs:
                    try:
                        entries[-1] = replace(
                            entry, fresh=check_fresh(entry, pairs=request.fresh_pairs, db=db, on_phase=on_phase)
                        )
                    except Interrupted as cut:  # the fresh processes that finished are reported, then Ctrl-C
                        entries[-1] = replace(entry, fresh=cut.partial)
                        raise KeyboardInterrupt from None
    except (KeyboardInterrupt, Interrupted) as exc:
        if getattr(exc, "partial", None) is not None:  # the config whose search was cut short
            keep(exc.partial)
        cut = report(entries, True)
        _store(store, cut)
        raise _interrupted(cut, len(configs)) from None
    except StoreWriteError as exc:
        raise _unsaved(store, report(entries, True), exc) from None
    done = report(entries, False)
    try:
        _store(store, done)
    except StoreWriteError as exc:
        raise _unsaved(store, done, exc) from None
    return done


def _unsaved(store: ResultStore, report: OptimizeReport, error: StoreWriteError) -> Unsaved:
    """The :class:`~surrobench.errors.Unsaved` of a search whose database write failed, its runs marked ``unsaved``."""
    mark_unsaved(store, *filter(None, (report.baseline_run_id, report.recipe_run_id)))
    return Unsaved(error, report.to_json(), report.optimize_id, len(report.configs), what="optimization")


def _interrupted(report: OptimizeReport, total: int) -> Interrupted:
    """Ctrl-C during ``optimize``: ``partial`` the stored report, the config cut short last; a config counts as
    optimized when it finished or its recipe stands (cut in its confirmation), as stored."""
    done = sum(not c.cut_short or bool(c.recommended) for c in report.configs)
    return Interrupted(
        f"interrupted: {done} of {total} configs optimized"
        + (", the last one in part" if report.configs and report.configs[-1].cut_short else "")
        + f", stored as optimization {report.optimize_id} (baseline run {report.baseline_run_id}"
        + (f", recipe run {report.recipe_run_id})" if report.recipe_run_id else ")"),
        report,
    )


def _store(store: ResultStore, report: OptimizeReport) -> None:
    """The report next to its runs (replacing the progress stored under its id), and the runs' final state."""
    for run_id in filter(None, (report.baseline_run_id, report.recipe_run_id)):
        store.finish_run(run_id, "interrupted" if report.interrupted else "complete")
    add_optimization(store, report.to_json())


def sweeps_from_run(run: RunRecord) -> tuple[SweepPlan, ...]:
    """One planned sweep per distinct config of a stored run (failed ones too: a remedy may fix them).

    Raises:
        UsageError: no configs, a device not available here, or a model or shape that no longer resolves.
    """
    if not run.results:
        raise UsageError(f"run {run.run_id} has no configs to optimize")
    sweeps = [
        SweepRequest(
            models=(r.model,),
            shapes=tuple(parse_shapes(r.shape_label)),
            batches=(r.batch,),
            precisions=(r.precision,),
            modes=(r.mode,),
            device=resolve_device(r.device),
            warmup=r.warmup,
            iters=r.iters // r.extra.get("rounds", 1),
            seed=r.extra.get("seed", 0),
            cudnn_benchmark=bool(r.extra.get("cudnn_benchmark", False)),
            input_sets=r.extra.get("input_sets", 3),
            tag=run.tag,
            **{name: r.extra[name] for name in EXEC_SETTINGS if name in r.extra},  # every setting it ran with
        )
        for r in run.results
    ]
    return tuple(plan_sweep(sweep) for sweep in dict.fromkeys(sweeps))


def measured_for(store: ResultStore, results: tuple[ConfigResult, ...]) -> dict[str, dict]:
    """``{config label: the optimize config object cited}`` (:func:`~surrobench.results.measured_remedies.cited_entry`)
    for the configs of ``results`` that an optimization measured as they ran (its baseline the same config,
    :meth:`~surrobench.records.run.ConfigResult.same_config`: one that runs a recipe is another config)."""
    return {r.label(): cited_entry(e) for r in results if (e := optimized_configs(store, r))}
