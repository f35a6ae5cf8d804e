"""``surrobench perf``: one call of :func:`surrobench.api.perf.perf` (the system pass: perf counters, IPC, CPU
utilization, host hot spots, a flame graph; docs/sources.md, tools §1 and §4). ``--json`` writes its
:class:`~surrobench.records.profiled.Profile` (``surrobench/perf-v1``)."""

from __future__ import annotations

from pathlib import Path

from surrobench.cli.app import app
from surrobench.cli.options import (
    print_stored,
    print_failed,
    print_warnings,
    exit_if_configs_failed,
    DbOpt,
    JsonOpt,
    SystemPassOptions,
    option_groups,
    SWEEP_ONLY,
    WorkloadOptions,
    console,
    write_json,
)
from surrobench.cli.options import command_line, err_console
from surrobench.report.progress import progress_hooks


@app.command()
@option_groups(omit=SWEEP_ONLY)
def perf(*, workload: WorkloadOptions, db: Path = DbOpt, json_out: Path = JsonOpt, system: SystemPassOptions) -> None:
    """What the CPU is busy with: perf counters, IPC, CPU utilization, host hot spots and a flame graph."""
    from surrobench.api.perf import perf as perf_pass
    from surrobench.report.system import render_phase_report

    with progress_hooks(err_console) as hooks:
        result = perf_pass(
            workload.model, db=db, options=system.options(), command=command_line(), hooks=hooks, **workload.sweep()
        )
    write_json(json_out, result.to_json())  # first: a signal while the reports print must not lose it
    for report in result.reports:
        console.print(render_phase_report(report))
    print_failed(result.run.results)
    print_warnings(list(result.warnings))
    print_stored(db, result.run.run_id)
    exit_if_configs_failed(result.run.results)
