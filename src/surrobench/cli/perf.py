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
from surrobench.cli.options import timed_and_profiled
from surrobench.records import schemas
from surrobench.results.store import ResultStore


@app.command()
@option_groups(omit=SWEEP_ONLY)
def perf(*, workload: WorkloadOptions, db: Path = DbOpt, json_out: Path = JsonOpt, system: SystemPassOptions) -> None:
    """What the CPU is busy with: perf counters, IPC, CPU utilization, host hot spots and a flame graph."""
    from surrobench.api.perf import perf_config
    from surrobench.api.profile import ProfileInterrupted
    from surrobench.report.system import render_phase_report

    plan = workload.plan()
    check_writable(json_out, "--json")
    options = system.options()
    with ResultStore(db) as store:
        try:
            record, warnings, reports = timed_and_profiled(plan, store, options, perf_config)
        except ProfileInterrupted as cut:  # what finished is stored; its JSON is written too
            perf = [r.to_json() for r in cut.reports]
            write_json(json_out, {"schema": schemas.PERF, "run": cut.record.to_json(), "perf": perf})
            raise
    # first: a signal while the reports print must not lose it
    write_json(json_out, {"schema": schemas.PERF, "run": record.to_json(), "perf": [r.to_json() for r in reports]})
    for report in reports:
        console.print(render_phase_report(report))
    print_failed(record.results)
    print_warnings(warnings)
    print_stored(db, record.run_id)
    exit_if_configs_failed(record.results)
