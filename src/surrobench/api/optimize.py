"""``surrobench.optimize``: try the remedies, measure them interleaved, guard the accuracy, recommend. Its
arguments checked into an :class:`~surrobench.tune.request.OptimizeRequest` for
:func:`surrobench.tune.plans.optimize_plans` (:mod:`surrobench.tune` holds the search)."""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE
from surrobench.api.capacity import optimize_capacity
from surrobench.api.benchmark import ModelArg, is_model_object, named_model, open_store, sweep_plan
from surrobench.errors import UsageError
from surrobench.execution.config import check_bools
from surrobench.records.serve import CapacityOptimization
from surrobench.results.optimize import OptimizeReport
from surrobench.results.store import DEFAULT_DB
from surrobench.tune.plans import optimize_plans, sweeps_from_run
from surrobench.tune.request import DEFAULT_BUDGET_S, DEFAULT_PROCESS_PAIRS, DEFAULT_ROUNDS, OptimizeRequest
from surrobench.tune.request import check_search, remedy_names

#: What optimize maximises: the speed of one call (``latency``) or the request rate at a P99 target (``capacity``).
OBJECTIVES = ("latency", "capacity")


def optimize(
    model: ModelArg | None = None,
    *,
    run: str | None = None,
    db: str | Path | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    tolerance: float = DEFAULT_TOLERANCE,
    thorough: bool = False,
    rounds: int = DEFAULT_ROUNDS,
    only: str | Sequence[str] | None = None,
    verify: int = 0,
    processes: int | None = None,
    objective: str = "latency",
    p99_ms: float | None = None,
    command: str | None = None,
    on_config: Callable[[str], None] = lambda label: None,
    on_phase: Callable[[str], None] = lambda text: None,
    on_warning: Callable[[str], None] | None = None,
    **sweep,
) -> OptimizeReport | CapacityOptimization:
    """Try the remedies on every config of ``model``'s sweep (``sweep`` as for
    :func:`surrobench.api.benchmark.benchmark`), or of the stored ``run`` (an id or prefix in ``db``, the default
    database when None: :func:`~surrobench.tune.plans.sweeps_from_run`), and recommend what wins. ``budget_s`` per
    config, ``tolerance`` (rel L2), ``thorough``, ``rounds``, ``only`` (remedy names): as the CLI's flags.
    ``verify``: pairs of fresh processes checking each recipe (0: none); ``processes``: pairs timing the recipe
    once more (None: :data:`DEFAULT_PROCESS_PAIRS`, 0 for a model object). Stored in ``db``, else in memory.
    ``on_config(label)`` per config (its ConfigResult label, every input), ``on_phase(text)`` per batch of fresh processes, ``on_warning(text)`` per
    warning (None: a :class:`UserWarning`); ``command`` is stored with the runs. ``objective="capacity"``: the
    :class:`~surrobench.records.serve.CapacityOptimization` of :func:`surrobench.api.capacity.optimize_capacity`
    (whose keywords ``sweep`` may hold) for a ``model``, at ``p99_ms`` within ``tolerance``.

    Raises:
        UsageError: bad input (the sweep's, :func:`~surrobench.tune.request.check_search`,
            :func:`~surrobench.tune.request.remedy_names`); not exactly one of ``model`` and ``run``; ``sweep``
            keywords with ``run``; an unknown ``objective``, ``p99_ms`` without the capacity objective, ``run``,
            ``verify``, ``rounds`` or ``processes`` with it; an unknown ``run``; ``verify`` or ``processes`` with a
            model object; ``thorough`` not a bool; ``db`` not a path.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP); ``partial`` the report (or capacity optimization) judged so far.
    """
    if objective not in OBJECTIVES:
        raise UsageError.bad("objective", f"{objective!r}: choose {', '.join(OBJECTIVES)}")
    if objective == "capacity":
        unused = dict(run=run is not None, verify=verify, rounds=rounds != DEFAULT_ROUNDS, processes=processes)
        if what := next((name for name, given in unused.items() if given), None):
            raise UsageError.bad(
                what, "is not taken by the capacity objective (it serves {model}'s one config)", others=("model",)
            )
        if model is None:
            raise UsageError.naming("the capacity objective needs {model}", ("model",))
        return optimize_capacity(
            model, p99_ms=p99_ms, db=db, tolerance=tolerance, thorough=thorough, only=only, budget_s=budget_s, **sweep
        )
    if p99_ms is not None:
        raise UsageError.bad(
            "p99_ms", "is the capacity objective's target: give {objective} 'capacity'", others=("objective",)
        )
    if (model is None) == (run is None):
        raise UsageError.naming("give exactly one of {model} and {run}", ("model", "run"))
    if run is not None and sweep:
        raise UsageError.bad(
            "run", f"{run!r}: its configs are optimized as stored, so {', '.join(sorted(sweep))} cannot be given"
        )
    by_object = model is not None and is_model_object(model)
    if processes is None:
        processes = 0 if by_object else DEFAULT_PROCESS_PAIRS
    check_search(budget_s=budget_s, tolerance=tolerance, rounds=rounds, verify=verify, processes=processes)
    check_bools(thorough=thorough)
    for name, pairs in (("verify", verify), ("processes", processes)):  # fresh processes rebuild the model by name
        if model is not None and pairs:
            named_model(model, f"optimize with {name}")
    plans = (sweep_plan(model, caller=optimize, **sweep),) if model is not None else ()
    with open_store(DEFAULT_DB if run is not None and db is None else db) as store:
        if run is not None:
            plans = sweeps_from_run(store.load_run(run))
        request = OptimizeRequest(
            plans,
            budget_s=budget_s,
            tolerance=tolerance,
            thorough=thorough,
            rounds=rounds,
            only=remedy_names(only, plans[0].request.device, thorough=thorough),
            fresh_pairs=verify,
            rebuildable=not by_object,
            process_pairs=processes,
        )
        report = optimize_plans(request, store, command=command, on_config=on_config, on_phase=on_phase)
    for note in report.warnings:
        if on_warning is None:
            _warnings.warn(note, UserWarning, stacklevel=2)
        else:
            on_warning(note)
    return report
