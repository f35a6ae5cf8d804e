"""The profiling phase: after a timed sweep, each ``ok`` config profiled in a child process
(:mod:`surrobench.collect.child`); its op table stored (``op_stats``), its top op in the config row and run JSON
(``top_op``), its four readings (:mod:`surrobench.analysis.op_readings`) in the report."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.analysis.evidence import deflate
from surrobench.analysis.op_readings import Readings, read_table
from surrobench.api.benchmark import named_model, open_store, sweep_plan
from surrobench.api.counters import counters_config
from surrobench.collect.child import spawn
from surrobench.records import schemas
from surrobench.records.run import ChildReport, ConfigResult, Profile, RunRecord
from surrobench.collect.profile_phase import ProfileOptions, prepare_trace_dir, trace_file
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import Interrupted, StoreWriteError, UsageError
from surrobench.execution.config import ExecConfig, check_bools, check_ints
from surrobench.execution.host_facts import busy_others
from surrobench.execution.sweep import NO_HOOKS, Hooks, SweepInterrupted, SweepPlan, execute_sweep, interrupted_message
from surrobench.execution.sweep import mark_interrupted, unsaved
from surrobench.records.counters import ConfigCounters
from surrobench.records.kernels import KernelTable
from surrobench.records.ops import OpTable
from surrobench.results.profiles import add_counters, add_kernel_table, add_op_table
from surrobench.results.store import ResultStore


@dataclass(frozen=True)
class ProfileReport(ChildReport):
    """One profiled config (``config`` with ``top_op`` filled when profiled).

    Attributes:
        profiled_step_ms: mean host time of the recorded steps under the profiler, ms: a mean, as the op table's
            per-step times are averaged (:meth:`surrobench.records.ops.OpTable.ms_per_step`), so one thread's scaled
            ops never exceed it (a median would leave out preempted steps whose op times land in the sums).
        overhead: ``profiled_step_ms / unprofiled median - 1`` (the run's timed median), a fraction; its JSON's
            ``busy_others``: :func:`~surrobench.execution.host_facts.busy_others` of the config, or null.
        kernel_table: the kernels, their classes, ops and modules (a GPU run; :mod:`surrobench.records.kernels`).
        counters: with ``counters=True``, the step's top kernels under Nsight Compute, or why not
            (:mod:`surrobench.api.counters`); None otherwise.
    """

    op_table: OpTable | None = None
    readings: Readings | None = None
    profiled_step_ms: float | None = None
    overhead: float | None = None
    trace_path: str | None = None
    warnings: tuple[str, ...] = ()
    kernel_table: KernelTable | None = None
    counters: ConfigCounters | None = None

    def to_json(self) -> dict:
        """Config key, status, overhead, trace path, warnings, op table and readings (shares as fractions)."""
        c = self.config
        return {
            **super().to_json(),
            "top_op": c.top_op,
            "profiled_step_ms": self.profiled_step_ms,
            "unprofiled_ms": c.latency_ms.median if c.latency_ms else None,
            "overhead": self.overhead,
            "busy_others": busy_others(c.extra),
            "trace_path": self.trace_path,
            "warnings": list(self.warnings),
            "op_table": self.op_table.to_json() if self.op_table else None,
            "readings": self.readings.to_json() if self.readings else None,
            "kernel_table": self.kernel_table.to_json() if self.kernel_table else None,
            "counters": self.counters.to_json() if self.counters else None,
        }


def profile_config(
    cfg: ExecConfig, result: ConfigResult, config_id: int, store: ResultStore, options: ProfileOptions, run_id: str
) -> ProfileReport:
    """Profile one timed config in a child process and store its op table, top op and kernel table (GPU)."""
    child = spawn(cfg, options.schedule, with_stack=options.with_stack, trace_path=trace_file(options, run_id, cfg))
    warnings = tuple(child.get("warnings", ()))
    if child["status"] != "ok":
        return ProfileReport(result, config_id, child["status"], child["error"], warnings=warnings)
    table = OpTable.from_json(child["op_table"])
    step_ms = statistics.fmean(child["active_step_ms"])  # ProfileReport.profiled_step_ms says why the mean
    overhead = step_ms / result.latency_ms.median - 1 if result.latency_ms else None
    if (top := table.top_op()) is not None:
        result = replace(result, top_op={"name": top.name, "share": float(top.share)})
        store.set_top_op(config_id, result.top_op)
    trace = child["trace_path"]
    add_op_table(store, config_id, table, profiled_step_ms=step_ms, overhead=overhead, trace_path=trace)
    ops = deflate(table, step_ms, result.latency_ms.median if result.latency_ms else None)
    shapes = [s.shape for s in result.inputs] or [tuple(child["input_shape"])]
    readings = read_table(ops, cfg.model, *shapes, compiled=cfg.mode == "compile")
    kernels = KernelTable.from_json(found) if (found := child.get("kernel_table")) else None
    if kernels is not None:
        add_kernel_table(store, config_id, kernels)
    counters = None
    if options.counters:  # after the profiling child: ncu's replay never shares a process with a measurement
        counters = counters_config(cfg, kernels)
        add_counters(store, config_id, counters)
        if counters.problem is not None:
            warnings += (f"no counters: {counters.problem.message}",)
    return ProfileReport(
        result, config_id, "ok", None, table, readings, step_ms, overhead, trace, warnings, kernels, counters
    )


def interrupted_profiling(store: ResultStore, record: RunRecord, total: int, reports, to_profile: int) -> Interrupted:
    """Ctrl-C while profiling or after: ``record`` marked ``interrupted`` (:func:`mark_interrupted`); ``partial`` its
    :class:`Profile` (every config timed and stored, ``top_op`` set on those profiled) and the ``reports`` so far, of
    ``to_profile``; the message ``interrupted: 2 of 2 configs stored as run R, 1 of 2 profiled``."""
    message = f"{interrupted_message(record, total)}, {len(reports)} of {to_profile} profiled"
    return Interrupted(message, Profile(mark_interrupted(store, record), tuple(reports)))


def time_and_profile(
    plan: SweepPlan,
    store: ResultStore,
    then: object | None,
    *,
    profile_one: Callable = profile_config,
    schema: str = schemas.PROFILE,
    command: str | None = None,
    hooks: Hooks = NO_HOOKS,
) -> Profile:
    """Time the planned sweep into ``store``, then (``then`` not None) profile each ``ok`` config in a child
    process with ``profile_one`` and its options ``then`` (:func:`profile_phase`); returns the :class:`Profile` of
    ``schema``, its warnings the sweep's, then each profiling child's.

    Raises:
        Interrupted: Ctrl-C while timing (a ``SweepInterrupted``) or profiling, ``partial`` the run so far, or with
            ``then`` the :class:`Profile` of the configs stored and profiled so far.
    """
    try:
        record, warnings = execute_sweep(plan, store, command=command, hooks=hooks, finish=then is None)
    except SweepInterrupted as cut:
        if then is not None:
            cut.partial = Profile(cut.record, schema=schema)
        raise
    if then is None:
        return Profile(record, (), tuple(warnings), schema)
    try:
        record, reports = profile_phase(plan, record, store, then, profile_one=profile_one, hooks=hooks)
    except Interrupted as cut:
        cut.partial = replace(cut.partial, schema=schema)
        raise
    return Profile(record, tuple(reports), tuple(warnings + report_warnings(reports)), schema)


def report_warnings(reports) -> list[str]:
    """Each profiling child's warnings, then each failed one's status and error, named by its config."""
    failed = [f"{r.label()}: profiling {r.status}: {r.error}" for r in reports if r.status != "ok"]
    return [f"{r.label()}: {w}" for r in reports for w in r.warnings] + failed


def profile_phase(
    plan: SweepPlan,
    record: RunRecord,
    store: ResultStore,
    options: object,
    *,
    profile_one: Callable = profile_config,
    hooks: Hooks = NO_HOOKS,
) -> tuple[RunRecord, list]:
    """Profile every ``ok`` config of a run of ``plan`` left ``running`` (``execute_sweep(..., finish=False)``; each
    found by :meth:`SweepPlan.config_for`), then mark it ``complete``. ``profile_one(cfg, result, config_id, store,
    options, run_id)`` -> its :class:`~surrobench.records.run.ChildReport` with ``warnings``: :func:`profile_config`,
    ``api.perf.perf_config`` or ``api.nsys.nsys_config``; ``hooks.on_profile_start(n)`` first, ``hooks.on_report``
    per report (kept if it is interrupted). Returns the run with ``top_op`` set on each profiled config, and one
    report per ``ok`` config.

    Raises:
        ValueError: an ``ok`` result that was never stored (no ``config_id``).
        KeyError: a result that is not a config of ``plan``.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP): the run marked ``interrupted``, as :func:`interrupted_profiling`
            with the reports of the configs profiled before it (their op tables stored; the one running is not).
        Unsaved: a write to ``store`` failed; the run marked ``unsaved`` where the database takes it.
    """
    to_profile = sum(r.status == "ok" for r in record.results)
    results, done = [], []
    try:
        hooks.on_profile_start(to_profile)
        for result in record.results:
            if result.status == "ok":
                if result.config_id is None:
                    raise ValueError(f"run {record.run_id}: {result.label()} is not stored (no config_id)")
                report = profile_one(plan.config_for(result), result, result.config_id, store, options, record.run_id)
                result = report.config
                done.append(report)
                hooks.on_report(report)
            results.append(result)
        record = replace(record, results=tuple(results))
        store.finish_run(record.run_id)
    except (KeyboardInterrupt, StoreWriteError) as exc:  # the run with the top op of the configs profiled
        profiled = {r.config.config_id: r.config for r in done}
        cut = replace(record, results=tuple(profiled.get(r.config_id, r) for r in record.results))
        if isinstance(exc, StoreWriteError):  # the timings were stored
            raise unsaved(store, cut, exc, len(plan.configs)) from None
        raise interrupted_profiling(store, cut, len(plan.configs), done, to_profile) from None
    return record, done


def check_schedule(schedule: object) -> ProfileSchedule:
    """``schedule`` (None: the default), checked to be a :class:`ProfileSchedule` of ``int`` step counts.

    Raises:
        UsageError: ``schedule`` not a :class:`ProfileSchedule` (naming ``schedule``), or a step count of it not
            an ``int`` (naming ``schedule.wait``, ``schedule.warmup`` or ``schedule.active``).
    """
    if schedule is None:
        return ProfileSchedule()
    if not isinstance(schedule, ProfileSchedule):
        raise UsageError.bad(
            "schedule",
            f"{schedule!r}: must be a surrobench.collect.torch_profiler.ProfileSchedule(wait, warmup, active), "
            f"not {type(schedule).__name__}",
        )
    check_ints(**{f"schedule.{step}": getattr(schedule, step) for step in ("wait", "warmup", "active")})
    return schedule


def profile(
    model: str,
    *,
    db: str | Path | None = None,
    trace_dir: str | Path | None = None,
    with_stack: bool = False,
    schedule: ProfileSchedule | None = None,
    counters: bool = False,
    **sweep,
) -> Profile:
    """Time ``model`` over the sweep (``sweep``: the keywords of :func:`~surrobench.api.benchmark.sweep_request`),
    then profile each ``ok`` config with torch.profiler in a child process: op table, categories, memory, shapes,
    the four readings. ``trace_dir``: a Chrome trace per config there (None: none); ``schedule``: wait / warmup /
    active steps; ``counters``: on CUDA, the top kernels under Nsight Compute too (a missing ncu is a warning).

    Raises:
        UsageError: bad input, a model object (:func:`~surrobench.api.benchmark.named_model`), ``with_stack`` /
            ``counters`` not a ``bool``, a bad ``schedule`` (:func:`check_schedule`), an unwritable ``trace_dir``.
        Interrupted: as :func:`time_and_profile`.
    """
    named_model(model, "profile")
    check_bools(with_stack=with_stack, counters=counters)
    schedule = check_schedule(schedule)
    plan = sweep_plan(model, caller=profile, **sweep)
    folder = prepare_trace_dir(Path(trace_dir), "trace_dir") if trace_dir is not None else None
    options = ProfileOptions(schedule=schedule, with_stack=with_stack, trace_dir=folder, counters=counters)
    with open_store(db) as store:
        return time_and_profile(plan, store, options)
