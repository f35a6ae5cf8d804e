"""``surrobench perf``: the system-level pass of the profiling tools text (docs/sources.md, tools §1 and §4), "what is the CPU busy
with", before the GPU timeline and the op table. Each config is timed, then its measured steps run under
``perf stat`` (counters, IPC, CPU utilization), ``perf record -g`` and py-spy (host hot spots, flame
graph) in child processes (:mod:`surrobench.collect.perf`). A missing ``perf`` or ``py-spy`` is a
warning with its install line; the pass goes on with the other. ``--json`` writes ``surrobench/perf-v1``:
``{"schema", "run": <run-v1>, "perf": [<PerfReport.to_json()>, ...]}``; interrupted (Ctrl-C, SIGTERM,
SIGHUP), the run as stored (``env.interrupted`` true) and the configs passed before it."""

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
    check_writable,
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

    check_writable(json_out, "--json")
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
