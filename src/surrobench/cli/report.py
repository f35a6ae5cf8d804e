"""``surrobench report``: one self-contained HTML page of one or more runs (and their comparison)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli import app
from surrobench.cli.compare import AllowEnvMismatchOpt, IgnoreFieldOpt, ThresholdOpt, parse_fields
from surrobench.cli.options import DbOpt, check_writable, console
from surrobench.cli.runref import load_run_ref
from surrobench.report.html import ReportInput, render_report
from surrobench.report.plots import spans_from_timeline
from surrobench.results.compare import compare_runs


@app.command()
def report(
    runs: list[str] = typer.Argument(..., help="Run ids (or unique prefixes) in --db, or run JSON files."),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="The HTML file to write."),
    db: Path = DbOpt, threshold: float = ThresholdOpt, allow_env_mismatch: bool = AllowEnvMismatchOpt,
    ignore_field: str = IgnoreFieldOpt,
    trace: Path = typer.Option(None, "--trace", help="Kineto or nsys trace whose first profiled step is drawn."),
) -> None:  # fmt: skip
    """Write an HTML report: results, plots, and for two runs the comparison (first run is BASE)."""
    check_writable(output, "--output")
    records = tuple(load_run_ref(ref, db) for ref in runs)
    comparison = (
        compare_runs(records[0], records[1], threshold=threshold, allow_env_mismatch=allow_env_mismatch,
                     ignore_fields=parse_fields(ignore_field))
        if len(records) == 2 else None
    )  # fmt: skip
    timeline = None
    if trace is not None:
        from surrobench.trace import load_trace  # heavy parser; only when asked for

        timeline = spans_from_timeline(load_trace(trace))
    data = ReportInput(runs=records, comparison=comparison, timeline=timeline, timeline_title=trace.name if trace else "")
    output.write_text(render_report(data), encoding="utf-8")
    console.print(f"wrote {output}")
