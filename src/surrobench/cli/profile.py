"""``surrobench profile``: time each config, then profile it in a child process: op tables with the four readings
(docs/sources.md, method §2), or with ``--profile nsys`` the Nsight Systems timeline of each (method §3; a
missing nsys exits 2 before timing). ``--json`` writes the :class:`~surrobench.records.profiled.Profile`
(``surrobench/profile-v3``)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.report.escape import rich_escape
from surrobench.cli.options import (
    count_option,
    print_stored,
    print_failed,
    print_warnings,
    exit_if_configs_failed,
    DbOpt,
    JsonOpt,
    TraceOptions,
    option_groups,
    SWEEP_ONLY,
    WorkloadOptions,
    console,
    write_json,
)
from surrobench.cli.options import command_line, err_console
from surrobench.errors import UsageError
from surrobench.report.progress import progress_hooks

TopOpt = count_option(15, "--top", help="Op table rows shown per config.")
ProfileToolOpt = typer.Option("torch", "--profile", help="torch (op tables) or nsys (Nsight Systems timeline).")


@app.command()
@option_groups(omit=SWEEP_ONLY)
def profile(
    *,
    workload: WorkloadOptions,
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    tracing: TraceOptions,
    top: int = TopOpt,
    tool: str = ProfileToolOpt,
) -> None:
    """Which operators cost the time: op tables, categories, memory and shapes from torch.profiler."""
    from surrobench.api.benchmark import measure
    from surrobench.report.op_tables import profile_renderables
    from surrobench.report.system import render_phase_report

    if top < 1:
        raise UsageError(f"--top {top}: show at least 1 row")
    if tool not in ("torch", "nsys"):
        raise UsageError(f"--profile {tool!r}: choose torch or nsys")
    plan = workload.plan()
    then = tracing.nsys(plan) if tool == "nsys" else tracing.torch(workload.iters)
    with progress_hooks(err_console) as hooks:
        done = measure(plan, db=db, then=then, hooks=hooks, command=command_line())
    write_json(json_out, done.to_json())  # first: a signal while the reports print must not lose it
    if tool == "torch":
        for renderable in profile_renderables([r.to_json() for r in done.reports], top, width=console.width):
            console.print(renderable)
    for report in done.reports if tool == "nsys" else ():
        console.print(render_phase_report(report))
        if report.report:
            console.print(f"nsys report: {rich_escape(report.report)}", highlight=False)
    print_failed(done.run.results)
    print_warnings(list(done.warnings))
    print_stored(db, done.run.run_id)
    exit_if_configs_failed(done.run.results)
