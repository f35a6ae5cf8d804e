"""``surrobench run``: the benchmark sweep, stored and tabulated; with ``--profile torch|perf|nsys`` a profiling
phase follows (one child process per config, :mod:`surrobench.api.profile`)."""

from __future__ import annotations

import shlex
from pathlib import Path

from surrobench.cli.app import app
from surrobench.report.escape import rich_escape
from surrobench.records.config import EXEC_SETTINGS
from surrobench.cli.options import print_stored, print_warnings, exit_if_configs_failed, PROFILERS, DbOpt, JsonOpt
from surrobench.cli.options import NprocOpt, ParallelOpt, DevicesOpt, ProfileOpt, SystemPassOptions, TraceOptions
from surrobench.cli.options import option_groups, WorkloadOptions, command_line, invoked_as, console, err_console
from surrobench.cli.options import write_json
from surrobench.errors import Interrupted, UsageError
from surrobench.records.run import Profile
from surrobench.report.progress import progress_hooks
from surrobench.api.defaults import DEFAULT_DB, parse_devices
from surrobench.report.run import run_tables


@app.command()
@option_groups()
def run(
    *,
    workload: WorkloadOptions,
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    profile: str = ProfileOpt,
    tracing: TraceOptions,
    system: SystemPassOptions,
    nproc: int = NprocOpt,
    parallel: str = ParallelOpt,
    devices: str = DevicesOpt,
) -> None:
    """Benchmark inference latency, throughput and peak memory over a shape ladder x batch list.

    A factory model (--model package.module:build) is called with one fp32 input, (B, 3, N, N) for a bare
    --shape N or the full --shape. Other or several inputs come from a hook example_inputs(batch, shape)
    returning a tensor or a tuple of tensors: the factory's attribute (build.example_inputs = fn) or a
    module-level function (docs/models.md, "Your model").
    """
    # what runs a model is imported here, not with the module: `--help` needs no torch (docs/benchmarks/startup.md)
    from surrobench.api.run import measure, refuse_profiling_on_ranks
    from surrobench.report.system import render_phase_report

    if profile not in PROFILERS:
        raise UsageError(f"--profile {profile!r}: choose {', '.join(PROFILERS)}")
    device_list = parse_devices(devices) if devices is not None else None
    if profile != "none":  # before the plan and the profiler's options: neither matters then
        refuse_profiling_on_ranks(nproc, device_list)
    plan = workload.plan()
    then = None
    if profile == "torch":
        then = tracing.torch(workload.iters)
    elif profile == "perf":
        then = system.options()
    elif profile == "nsys":
        then = tracing.nsys(plan)
    ranks = dict(nproc=nproc, parallel=parallel, devices=device_list)
    try:
        with progress_hooks(err_console) as hooks:
            done = measure(plan, db=db, then=then, hooks=hooks, command=command_line(), **ranks)
    except Interrupted as cut:  # run's --json is the run document, profiled or not
        cut.partial = cut.partial.run if isinstance(cut.partial, Profile) else cut.partial
        raise
    if done is None:  # a rank of a multi-process run other than rank 0: rank 0 prints the run
        return
    record = done.run
    write_json(json_out, record.to_json())  # first: a signal while the tables print must not lose it
    for table in run_tables(record, rich_escape(f"run {record.run_id} on {record.device_text()}"), console.width):
        console.print(table)
    for report in done.reports:  # perf's and nsys's phase reports; torch.profiler's trace files (profile: its tables)
        if profile in ("perf", "nsys"):
            console.print(render_phase_report(report))
        elif getattr(report, "trace_path", None):
            console.print(rich_escape(f"trace: {report.label()}: {report.trace_path}"), soft_wrap=True)
    print_warnings(done.warnings)
    print_stored(db, record.run_id)
    # next: the diagnose and optimize commands of the same workload, after a run of one model at one shape as an
    # fp32 eager baseline with no other setting (optimize's starting point)
    model, shape = workload.model.strip(), workload.shape.strip()
    settings = (*(getattr(workload, name) for name in EXEC_SETTINGS), workload.cudnn_benchmark)
    baseline = "," not in model and "," not in shape and (workload.precision, workload.mode) == ("fp32", "eager")
    ok = profile == "none" and "world_size" not in record.env and any(r.status == "ok" for r in record.results)
    if ok and baseline and not any(settings):
        words = ["--model", model, "--shape", shape, "--batch", workload.batch]
        words += ["--device", workload.device] if workload.device != "auto" else []
        words += ["--db", str(db)] if db != Path(DEFAULT_DB) else []
        same, me = rich_escape(shlex.join(words)), rich_escape(invoked_as())  # as typed: .venv/bin/surrobench
        console.print(
            f"next: [bold]{me} diagnose {same}[/] says where the time goes; "
            f"[bold]{me} optimize {same}[/] finds what makes it faster",
            soft_wrap=True,
        )
    exit_if_configs_failed(record.results)
