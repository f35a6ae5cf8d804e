"""``measure``: the one call behind ``run``, ``run --profile torch|perf|nsys``, ``profile`` and ``perf``: time a
sweep, then profile each ``ok`` config in a child process with the profiler its options name."""

from __future__ import annotations

from pathlib import Path

from surrobench.api.benchmark import ModelArg, named_model, open_store, sweep_plan
from surrobench.api.nsys import NsysOptions, nsys_config
from surrobench.api.perf import perf_config
from surrobench.api.profile import NO_HOOKS, Hooks, profile_config, time_and_profile
from surrobench.collect.profile_phase import PerfOptions, ProfileOptions
from surrobench.errors import UsageError
from surrobench.execution.sweep import SweepPlan
from surrobench.records import schemas
from surrobench.records.run import Profile

#: The child that profiles one config, and the schema of the document, for each profiler's options.
PROFILERS = {
    ProfileOptions: (profile_config, schemas.PROFILE),
    PerfOptions: (perf_config, schemas.PERF),
    NsysOptions: (nsys_config, schemas.PROFILE),
}


def measure(
    model: ModelArg | SweepPlan,
    *,
    db: str | Path | None = None,
    then: ProfileOptions | PerfOptions | NsysOptions | None = None,
    hooks: Hooks = NO_HOOKS,
    command: str | None = None,
    **sweep,
) -> Profile:
    """Time ``model`` over the sweep (as :func:`~surrobench.api.benchmark.benchmark`, or a plan) into ``db``, then
    with ``then`` profile each ``ok`` config in a child process that rebuilds the model from its name:
    torch.profiler (``ProfileOptions``), perf and py-spy (``PerfOptions``) or Nsight Systems (``NsysOptions``).
    Returns the :class:`~surrobench.records.run.Profile`; ``command`` is stored with the run.

    Raises:
        UsageError: as ``sweep_plan``; ``then`` of no profiler, or with a model object.
        Unsaved: as ``benchmark``.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP); ``partial`` the run so far, with ``then`` the Profile so far.
    """
    profile_one, schema = PROFILERS.get(type(then), (None, schemas.PROFILE))
    if then is not None:
        if profile_one is None:
            raise UsageError.bad("then", f"{then!r}: ProfileOptions, PerfOptions, NsysOptions or None")
        named_model(model, "profiling")
    plan = model if isinstance(model, SweepPlan) else sweep_plan(model, caller=measure, **sweep)
    with open_store(db) as store:
        return time_and_profile(plan, store, then, profile_one=profile_one, schema=schema, command=command, hooks=hooks)


def perf(
    model: str, *, db=None, options: PerfOptions | None = None, command: str | None = None, hooks=None, **sweep
) -> Profile:
    """:func:`surrobench.api.run.measure` with ``then=options`` (None: :class:`PerfOptions`): each ``ok`` config's
    measured steps under ``perf stat``, ``perf record -g`` and py-spy in a child process (counters, IPC, CPU
    utilization, host hot spots, a flame graph; a missing ``perf`` or ``py-spy`` is a warning). Returns the
    :class:`~surrobench.records.run.Profile` of schema ``surrobench/perf-v1``; raises as ``measure``."""
    return measure(model, db=db, then=options or PerfOptions(), hooks=hooks or NO_HOOKS, command=command, **sweep)
