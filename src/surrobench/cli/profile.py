"""``surrobench profile``: time each config, then profile it in a child process: op tables with the four readings
(docs/sources.md, method §2), or with ``--profile nsys`` the Nsight Systems timeline of each (method §3; a
missing nsys exits 2 before timing). ``--json`` writes the :class:`~surrobench.records.profiled.Profile`
(``surrobench/profile-v3``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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
    check_writable,
    console,
    write_json,
)
from surrobench.cli.options import timed_and_profiled
from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.profiled import Profile

if TYPE_CHECKING:
    from surrobench.api.nsys import NsysOptions
    from surrobench.api.profile import SweepPlan

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
    from surrobench.report.op_tables import profile_renderables

    if top < 1:
        raise UsageError(f"--top {top}: show at least 1 row")
    if tool not in ("torch", "nsys"):
        raise UsageError(f"--profile {tool!r}: choose torch or nsys")
    plan = workload.plan()
    check_writable(json_out, "--json")
    if tool == "nsys":
        _profile_nsys(plan, db, json_out, tracing.nsys(plan))
        return
    options = tracing.torch(workload.iters)
    record, warnings, reports = timed_and_profiled(plan, db, options, schema=schemas.PROFILE)
    profiles = [r.to_json() for r in reports]
    write_json(json_out, Profile(record, tuple(reports)).to_json())  # first
    for renderable in profile_renderables(profiles, top, width=console.width):
        console.print(renderable)
    print_failed(record.results)
    print_warnings(warnings)
    print_stored(db, record.run_id)
    exit_if_configs_failed(record.results)


def _profile_nsys(plan: SweepPlan, db: Path, json_out: Path | None, options: NsysOptions) -> None:
    """Time, run each config's child under nsys, print each timeline; ``--json`` as the module says."""
    from surrobench.api.nsys import nsys_config
    from surrobench.report.system import render_phase_report

    record, warnings, reports = timed_and_profiled(plan, db, options, nsys_config, schemas.PROFILE)
    write_json(json_out, Profile(record, tuple(reports)).to_json())  # first: before the reports print
    for report in reports:
        console.print(render_phase_report(report))
        if report.report:
            console.print(f"nsys report: {rich_escape(report.report)}", highlight=False)
    print_failed(record.results)
    print_warnings(warnings)
    print_stored(db, record.run_id)
    exit_if_configs_failed(record.results)
