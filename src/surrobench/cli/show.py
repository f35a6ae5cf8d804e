"""``surrobench show RUN``: one stored run (or run JSON file) as a table, markdown or run JSON."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from surrobench.cli import app
from surrobench.cli.options import DbOpt, JsonOpt, check_writable, console, write_json
from surrobench.errors import UsageError
from surrobench.report.markdown import results_markdown
from surrobench.report.terminal import results_table
from surrobench.results.schema import RunRecord, run_from_json
from surrobench.results.store import ResultStore


def load_run_arg(run: str, db: Path) -> RunRecord:
    """A run named on the command line: a run JSON file path, or a run id (or unique prefix) in ``db``.

    Raises:
        UsageError: unreadable or invalid JSON file, unknown run id, missing database.
    """
    path = Path(run)
    if path.suffix == ".json" or path.is_file():
        try:
            return run_from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{run}: not a readable surrobench run JSON ({type(exc).__name__}: {exc})") from None
    if not db.is_file():
        raise UsageError(f"run {run!r}: no results database at {str(db)!r} (use --db)")
    with ResultStore(db) as store:
        return store.load_run(run)


@app.command()
def show(
    run: str = typer.Argument(..., help="Run id (or unique prefix) in --db, or a run JSON file."),
    db: Path = DbOpt,
    markdown: Path = typer.Option(None, "--markdown", help="Write the results as a markdown table here."),
    json_out: Path = JsonOpt,
) -> None:
    """Show one stored run: the results table, and optionally markdown or the run JSON."""
    check_writable(markdown, "--markdown")
    check_writable(json_out, "--json")
    record = load_run_arg(run, db)
    console.print(results_table(record.results, title=f"run {record.run_id} on {record.env.get('device_name')}"))
    if markdown is not None:
        markdown.write_text(results_markdown(record.results))
    write_json(json_out, record.to_json())
