"""``surrobench perf``: one call of :func:`surrobench.api.run.perf` (the system pass: perf counters, IPC, CPU
utilization, host hot spots, a flame graph; docs/sources.md, tools §1 and §4). ``--json`` writes its
:class:`~surrobench.records.run.Profile` (``surrobench/perf-v1``)."""

from __future__ import annotations

from pathlib import Path

from surrobench.cli.app import app
from surrobench.cli.options import SWEEP_ONLY, DbOpt, JsonOpt, SystemPassOptions, WorkloadOptions, command_line
from surrobench.cli.options import err_console, option_groups, profiled_out
from surrobench.report.progress import progress_hooks


@app.command()
@option_groups(omit=SWEEP_ONLY)
def perf(*, workload: WorkloadOptions, db: Path = DbOpt, json_out: Path = JsonOpt, system: SystemPassOptions) -> None:
    """What the CPU is busy with: perf counters, IPC, CPU utilization, host hot spots and a flame graph."""
    from surrobench.api.run import perf as perf_pass
    from surrobench.report.system import render_phase_report

    options = system.options()
    with progress_hooks(err_console) as hooks:
        done = perf_pass(
            workload.model, db=db, options=options, command=command_line(), hooks=hooks, **workload.sweep()
        )
    profiled_out(done, db, json_out, (render_phase_report(report) for report in done.reports))
