"""``surrobench.optimize``: try the remedies, measure them interleaved, guard the accuracy, recommend.

The library's entry: its arguments checked and turned into an :class:`~surrobench.tune.request.OptimizeRequest`,
then :func:`surrobench.tune.plans.optimize_plans` (the package :mod:`surrobench.tune` holds the search, its
fresh processes and the request).
"""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Sequence
from pathlib import Path

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE
from surrobench.api.benchmark import ModelArg, is_model_object, named_model, open_store, sweep_plan
from surrobench.errors import UsageError
from surrobench.results.optimize import OptimizeReport
from surrobench.results.store import DEFAULT_DB
from surrobench.tune.plans import optimize_plans, sweeps_from_run
from surrobench.tune.request import (
    DEFAULT_BUDGET_S,
    DEFAULT_PROCESS_PAIRS,
    DEFAULT_ROUNDS,
    OptimizeRequest,
    check_search,
)


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
    **sweep,
) -> OptimizeReport:
    """Try the remedies on every config of ``model``'s sweep, or of the stored ``run``, and recommend what wins
    (module docstring).

    ``model`` and ``sweep`` as for :func:`surrobench.api.benchmark.benchmark` (``shapes``, ``batches``,
    ``precisions``, ``device``, ``warmup``, ``iters``, ...); or ``run``, a run id (or unique prefix) in ``db``
    (the default database when None), whose every config is optimized as that run measured it
    (:func:`~surrobench.tune.plans.sweeps_from_run`; no ``sweep`` keywords then). ``budget_s`` per config,
    ``tolerance`` (rel L2), ``thorough``, ``rounds`` and ``only`` (remedy names) as the CLI's flags; ``verify``:
    pairs of fresh processes that check each recipe (0: none); ``processes``: pairs of fresh processes in which
    the search times its recipe once more (0: none; None: :data:`DEFAULT_PROCESS_PAIRS`, or none for a model
    object, which a new process cannot rebuild). Stored in ``db`` when given, else in memory only (for a
    ``model``). The measurement's warnings (a busy host, failed baselines) are issued as :class:`UserWarning`.

    Raises:
        UsageError: bad input (the sweep's, :func:`~surrobench.tune.request.check_search`,
            :func:`~surrobench.tune.request.remedy_names`); not exactly one of ``model`` and ``run``; ``sweep``
            keywords with ``run``; an unknown ``run``; ``verify`` or ``processes`` with a model object (the fresh
            processes rebuild the model from its name); ``thorough`` not a bool; ``db`` not a path.
    """
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
    if not isinstance(thorough, bool):
        raise UsageError.bad("thorough", f"{thorough!r}: True or False, not {type(thorough).__name__}")
    if model is not None and verify:
        named_model(model, "optimize with verify")
    if model is not None and processes:
        named_model(model, "optimize with processes")
    plans = (sweep_plan(model, caller=optimize, **sweep),) if model is not None else ()
    with open_store(DEFAULT_DB if run is not None and db is None else db) as store:
        if run is not None:
            plans = sweeps_from_run(store.load_run(run))
        request = OptimizeRequest.of(
            plans,
            budget_s=budget_s,
            tolerance=tolerance,
            thorough=thorough,
            rounds=rounds,
            only=only,
            verify=verify,
            processes=processes,
            rebuildable=not by_object,
        )
        report = optimize_plans(request, store)
    for note in report.warnings:
        _warnings.warn(note, UserWarning, stacklevel=2)
    return report
