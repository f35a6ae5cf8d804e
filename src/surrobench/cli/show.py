"""``surrobench show RUN``: one stored run (or run JSON file) as a table, markdown or run JSON."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import DbOpt, JsonOpt, MarkdownOpt, check_writable, console, write_json, write_output
from surrobench.report.escape import rich_escape


@app.command()
def show(
    run: str = typer.Argument(..., help="Run id (or unique prefix) in --db, or a run JSON file."),
    db: Path = DbOpt,
    markdown: Path = MarkdownOpt,
    json_out: Path = JsonOpt,
) -> None:
    """Show one stored run: the results table (and a multi-process run's scaling table), and optionally
    markdown or the run JSON."""
    from surrobench.api.compare import load_run
    from surrobench.report.run import run_markdown, run_tables

    check_writable(markdown, "--markdown")
    check_writable(json_out, "--json")
    record = load_run(run, db)
    title = rich_escape(f"run {record.run_id} on {record.env.get('device_name')}")
    for table in run_tables(record, title, width=console.width):
        console.print(table)
    if markdown is not None:
        write_output(markdown, run_markdown(record), "--markdown")
    write_json(json_out, record.to_json())
