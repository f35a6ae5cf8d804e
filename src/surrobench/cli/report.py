"""``surrobench report``: one self-contained HTML page of one or more runs (and their comparison)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.analysis.diagnose import diagnose_run
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.api.diagnose import diagnose_stored
from surrobench.cli.app import app
from surrobench.cli.options import (
    AllowEnvMismatchOpt,
    DbOpt,
    IgnoreFieldOpt,
    ThresholdOpt,
    check_writable,
    console,
    parse_fields,
    write_output,
)
from surrobench.api.compare import is_run_file, load_run, op_times
from surrobench.records.findings import Finding
from surrobench.records.run import RunRecord
from surrobench.report.escape import rich_escape
from surrobench.report.html import ReportInput, render_report
from surrobench.report.plots import spans_from_timeline
from surrobench.results.compare import compare_runs
from surrobench.results.store import ResultStore, optimizations_of_runs


@app.command()
def report(
    runs: list[str] = typer.Argument(..., help="Run ids (or unique prefixes) in --db, or run JSON files."),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="The HTML file to write."),
    db: Path = DbOpt,
    threshold: float = ThresholdOpt,
    allow_env_mismatch: bool = AllowEnvMismatchOpt,
    ignore_field: str = IgnoreFieldOpt,
    trace: Path = typer.Option(None, "--trace", help="Kineto or nsys trace whose first profiled step is drawn."),
) -> None:
    """Write an HTML report: results, plots, and for two runs the comparison (first run is BASE)."""
    check_writable(output, "--output")
    records = tuple(load_run(ref, db) for ref in runs)
    ops = [op_times(ref, db, r) for ref, r in zip(runs, records)]
    comparison = (
        compare_runs(
            records[0],
            records[1],
            threshold=threshold,
            allow_env_mismatch=allow_env_mismatch,
            ignore_fields=parse_fields(ignore_field),
            base_ops=ops[0],
            new_ops=ops[1],
        )
        if len(records) == 2
        else None
    )
    by_label = {
        f"{r.run_id[-4:]} {c.label()}": ops_ms[c.key()]
        for r, ops_ms in zip(records, ops)
        for c in r.results
        if c.key() in ops_ms
    }
    cpu_labels = frozenset(f"{r.run_id[-4:]} {c.label()}" for r in records for c in r.results if c.device == "cpu")
    timeline = None
    if trace is not None:
        from surrobench.trace import load_trace  # heavy parser; only when asked for

        timeline = spans_from_timeline(load_trace(trace))
    optimizations = ()
    if db.is_file():  # the optimizations that made these runs (surrobench optimize), when they are stored
        with ResultStore(db) as store:
            optimizations = tuple(optimizations_of_runs(store, [r.run_id for r in records]))
    findings = {r.run_id: _diagnosis(ref, r, db) for ref, r in zip(runs, records)}
    data = ReportInput(
        runs=records,
        comparison=comparison,
        op_tables=by_label,
        cpu_op_labels=cpu_labels,
        findings=findings,
        timeline=timeline,
        timeline_title=trace.name if trace else "",
        optimizations=optimizations,
    )
    write_output(output, render_report(data), "--output")
    console.print(f"wrote {rich_escape(output)}")


def _diagnosis(ref: str, record: RunRecord, db: Path) -> list[Finding]:
    """The run's findings as ``diagnose --run`` gives them (op tables and traces of a stored run); for a run
    JSON file the run-level findings of its results alone."""
    if is_run_file(ref):
        return diagnose_run(
            [], list(record.results), th=DEFAULT_THRESHOLDS, device_memory_bytes=record.env.get("gpu_memory_bytes")
        )
    with ResultStore(db) as store:
        return diagnose_stored(record.run_id, store, DEFAULT_THRESHOLDS)[1]
