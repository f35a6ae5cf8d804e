"""``measure``: the one call behind ``run``, ``run --profile torch|perf|nsys``, ``profile`` and ``perf``: time a
sweep, then profile each ``ok`` config in a child process with the profiler its options name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from surrobench.api.benchmark import ModelArg, named_model, open_store, sweep_plan
from surrobench.api.distributed import check_parallel, distributed_run
from surrobench.api.nsys import NsysOptions, nsys_config
from surrobench.api.perf import perf_config
from surrobench.api.profile import NO_HOOKS, Hooks, profile_config, time_and_profile
from surrobench.collect.profile_phase import PerfOptions, ProfileOptions
from surrobench.errors import UsageError
from surrobench.execution.ranks import detect_rank_env
from surrobench.execution.sweep import SweepPlan, sweep_warnings
from surrobench.records import schemas
from surrobench.records.run import Profile, placement

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
    nproc: int = 0,
    parallel: str = "auto",
    devices: list[int] | None = None,
    **sweep,
) -> Profile | None:
    """Time ``model`` over the sweep (as :func:`~surrobench.api.benchmark.benchmark`, or a plan) into ``db``, then
    with ``then`` profile each ``ok`` config in a child process that rebuilds the model from its name:
    torch.profiler (``ProfileOptions``), perf and py-spy (``PerfOptions``) or Nsight Systems (``NsysOptions``).
    Returns the :class:`~surrobench.records.run.Profile`; ``command`` is stored with the run.

    Several processes (:func:`~surrobench.api.distributed.distributed_run`) when ``nproc`` ranks are asked for, or
    ``devices`` (GPU indices to deal the configs over), or this process is a rank of torchrun or srun: ``parallel``
    the mode (``auto``, ``replicas``, ``model``, ``configs``); the run is stored in ``db`` by rank 0 and returned
    on the process that started the ranks and on rank 0, None on the other ranks.

    Raises:
        UsageError: as ``sweep_plan``, ``check_parallel`` and ``distributed_run``; ``then`` of no profiler, or with
            a model object; ``then``, a ``timeout_s`` or no ``db`` for several processes.
        Unsaved: as ``benchmark``.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP); ``partial`` the run so far, with ``then`` the Profile so far.
    """
    profile_one, schema = PROFILERS.get(type(then), (None, schemas.PROFILE))
    if then is not None:
        if profile_one is None:
            raise UsageError.bad("then", f"{then!r}: ProfileOptions, PerfOptions, NsysOptions or None")
        named_model(model, "profiling")
        refuse_profiling_on_ranks(nproc, devices)
    rank_env = detect_rank_env()
    several = bool(nproc or devices is not None or rank_env is not None)
    check_parallel(parallel, several=several)
    plan = model if isinstance(model, SweepPlan) else sweep_plan(model, caller=measure, **sweep)
    if several:  # the run with its warnings, each about a row named by its rank
        if plan.request.timeout_s is not None:  # a rank stopped alone would leave the others waiting at a barrier
            raise UsageError.bad("timeout_s", "in a multi-process run: not supported; use the launcher's time limit")
        if db is None:
            raise UsageError.bad("db", ": a multi-process run's ranks store into one database file; give one")
        record = distributed_run(
            plan, parallel, Path(db), rank_env=rank_env, command=command, nproc=nproc, devices=devices
        )
        if record is None:  # a rank other than 0
            return None
        named = [replace(r, model=f"{placement(r).label()} {r.model}") if placement(r) else r for r in record.results]
        return Profile(record, warnings=tuple(sweep_warnings(named, record.env)))
    with open_store(db) as store:
        return time_and_profile(plan, store, then, profile_one=profile_one, schema=schema, command=command, hooks=hooks)


def refuse_profiling_on_ranks(nproc: int, devices: list[int] | None) -> None:
    """Raises UsageError: profiling (``then``) with ``nproc`` processes, ``devices`` or in a torchrun or srun rank."""
    several = f"with {{nproc}} {nproc}" if nproc else "with {devices}" if devices is not None else "in a rank"
    if nproc or devices is not None or detect_rank_env() is not None:
        detail = f"{several}: a profiler runs in one process; profile one rank's config, or wrap the launcher in it"
        raise UsageError.bad("then", detail, others=("nproc", "devices"))


def perf(
    model: str, *, db=None, options: PerfOptions | None = None, command: str | None = None, hooks=None, **sweep
) -> Profile:
    """:func:`surrobench.api.run.measure` with ``then=options`` (None: :class:`PerfOptions`): each ``ok`` config's
    measured steps under ``perf stat``, ``perf record -g`` and py-spy in a child process (counters, IPC, CPU
    utilization, host hot spots, a flame graph; a missing ``perf`` or ``py-spy`` is a warning). Returns the
    :class:`~surrobench.records.run.Profile` of schema ``surrobench/perf-v1``; raises as ``measure``."""
    return measure(model, db=db, then=options or PerfOptions(), hooks=hooks or NO_HOOKS, command=command, **sweep)
