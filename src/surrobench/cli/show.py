"""``surrobench show RUN``: one stored run (or run JSON file) as a table, markdown or run JSON; a serve run (or serve
JSON file) as ``serve`` prints it, markdown or its serve JSON; an optimization as ``optimize`` printed it."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import DbOpt, JsonOpt, MarkdownOpt, optimization_out, console, print_warnings, serve_out
from surrobench.cli.options import write_json, write_output
from surrobench.records.serve import ServeRecord
from surrobench.report.escape import rich_escape


@app.command(name="import")
def import_(
    path: Path = typer.Argument(
        ..., help="A JSON file of run, serve or optimize --json, or the recovery file a failed database left."
    ),
    db: Path = DbOpt,
) -> None:
    """Store a run, serve or optimize JSON file in --db, such as the recovery file of a failed database.

    A run adds the configs the database lacks (importing twice adds nothing); a serve run or an optimization is
    stored whole. A command whose database could not be written (disk full, locked) names its recovery file."""
    from surrobench.api.compare import import_run

    imported = import_run(path, db=db)
    if imported.what == "run":
        added = f"{imported.added} config(s) added" if imported.added else "every config was stored already"
    else:
        added = "added" if imported.added else "replaced"
    line = f"imported {imported.what} {rich_escape(imported.record_id)} into {rich_escape(db)}: {added}"
    console.print(line, soft_wrap=True)


@app.command()
def show(
    run: str = typer.Argument(
        ...,
        help="Run id (or unique prefix) in --db, an optimization id that optimize printed, or a run or serve JSON file.",
    ),
    db: Path = DbOpt,
    markdown: Path = MarkdownOpt,
    json_out: Path = JsonOpt,
) -> None:
    """Show one stored run, serve run or optimization as the command that made it printed it.

    A run: the results table (and a multi-process run's scaling table; a diagnose run's findings: `diagnose --run`);
    a serve run as `serve` prints it (its tables per batching policy, the peak search, its notes), with --json its
    serve JSON; an optimization as `optimize` printed it, with --json its optimize JSON."""
    from surrobench.api.compare import load, sweep_warnings
    from surrobench.report.run import run_markdown, run_tables

    record = load(run, db)
    if isinstance(record, dict):
        optimization_out(record, markdown, json_out, db)
        return
    if isinstance(record, ServeRecord):  # as serve prints it, under a line naming the run
        from surrobench.report.serve_tables import serve_markdown

        console.print(rich_escape(f"serve run {record.run_id} on {record.env.get('device_name')}: {record.label()}"))
        serve_out(record)
        as_markdown = serve_markdown
    else:
        for table in run_tables(record, rich_escape(f"run {record.run_id} on {record.device_text()}"), console.width):
            console.print(table)
        print_warnings(sweep_warnings(list(record.results), record.env))  # as run printed them, from stored fields
        cut = record.env.get("unsaved") or {}  # how a run cut short ended; the configs it stored, short of rounds
        if record.env.get("interrupted") or cut:
            short = record.short_of_rounds
            of = f" of {cut['planned']} planned" if cut.get("planned") else ""
            how = f"stopped by a failed database write ({cut['cause']})" if cut else "interrupted"
            rounds = f", {short} with fewer rounds than asked" if short else ""
            print_warnings([f"run {record.run_id} was {how}: {len(record.results)}{of} config(s) stored{rounds}"])
        as_markdown = run_markdown
    if markdown is not None:
        write_output(markdown, as_markdown(record), "--markdown")
    write_json(json_out, record.to_json())
