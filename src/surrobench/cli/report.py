"""``surrobench report``: one self-contained HTML page of one or more runs (and their comparison)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import output_option, DbOpt, MatchOptions, console, option_groups, print_warnings
from surrobench.cli.options import write_output
from surrobench.report.escape import rich_escape


@app.command()
@option_groups()
def report(
    *,
    runs: list[str] = typer.Argument(
        ..., help="Run ids (or unique prefixes) in --db, run JSON files, or serve run ids."
    ),
    output: Path = output_option(Path("report.html"), "--output", "-o", help="The HTML file to write."),
    db: Path = DbOpt,
    matching: MatchOptions,
    trace: Path = typer.Option(None, "--trace", help="Kineto or nsys trace whose first profiled step is drawn."),
) -> None:
    """Write an HTML report: results, plots, and for two runs the comparison (first run is BASE).

    A serve run is drawn as its latency-throughput curve and tables; two serve runs also compare their
    capacity at the P99 target."""
    from surrobench.api.report import build_report
    from surrobench.report.html import report_page

    built = build_report(runs, db=db, trace=trace, **matching.keywords())
    write_output(output, report_page(built), "--output")
    if built.uncompared:
        print_warnings([f"{', '.join(built.uncompared)}: none compared, a comparison takes two runs"])
    console.print(f"wrote {rich_escape(output)}")
