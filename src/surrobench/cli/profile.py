"""``surrobench profile``: time each config, then profile it in a child process: op tables with the four readings
(docs/sources.md, method §2), or with ``--profile nsys`` the Nsight Systems timeline of each (method §3; a missing nsys
exits 2 before timing). ``--json`` writes the :class:`~surrobench.records.run.Profile` (``surrobench/profile-v3``)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from surrobench.cli.app import app
from surrobench.cli.options import SWEEP_ONLY, DbOpt, JsonOpt, TraceOptions, WorkloadOptions, command_line, console
from surrobench.cli.options import count_option, err_console, option_groups, profiled_out
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
    from surrobench.api.run import measure
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
    if tool == "torch":
        shown = profile_renderables([r.to_json() for r in done.reports], top, width=console.width)
    else:
        shown = (
            part
            for r in done.reports
            for part in (render_phase_report(r), *([Text(f"nsys report: {r.report}")] if r.report else []))
        )
    profiled_out(done, db, json_out, shown)
