"""``surrobench compare`` (the before/after table with verdicts, a CI gate) and ``surrobench history``."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import DbOpt, JsonOpt, MarkdownOpt, MatchOptions, RunRefArg, console, flag, option_groups
from surrobench.cli.options import write_json, write_output
from surrobench.errors import EXIT_REGRESSION
from surrobench.api.defaults import MIN_GATE_ROUNDS
from surrobench.report.escape import rich_escape


@app.command()
@option_groups()
def compare(
    *,
    base: str = typer.Argument(..., help=f"BASE run. {RunRefArg}"),
    new: str = typer.Argument(..., help=f"NEW run. {RunRefArg}"),
    db: Path = DbOpt,
    matching: MatchOptions,
    fail_on_regression: bool = flag(
        False,
        "--fail-on-regression",
        help=f"Exit 1 when any config regressed; needs both runs taken with --rounds {MIN_GATE_ROUNDS} or more, exit 2 "
        "without, or when the runs have no config in common.",
    ),
    json_out: Path = JsonOpt,
    markdown: Path = MarkdownOpt,
) -> None:
    """Compare two runs config by config: median, P95, peak memory, top op; ratio CIs and a verdict.

    A verdict needs the whole 95% CI of the median ratio beyond 1 ± the threshold or BASE's A/A noise,
    the larger: the rule optimize uses too (see surrobench.records.paired); "inconclusive" when the median
    ratio is beyond it and its CI is not. Two serve runs (serve --find-max)
    compare their capacity at the P99 target: higher, lower, same or inconclusive.
    """
    from surrobench.api.compare import compare_pair, gate_failed
    from surrobench.report.comparison import comparison_document, comparison_renderables

    pair = compare_pair(base, new, db=db, gate=fail_on_regression, **matching.keywords())
    for table in comparison_renderables(pair, width=console.width):
        console.print(table)
    write_json(json_out, pair.to_json())
    if markdown is not None:
        write_output(markdown, comparison_document(pair), "--markdown")
    if fail_on_regression and gate_failed(pair.comparison):
        raise typer.Exit(EXIT_REGRESSION)


@app.command()
def history(
    db: Path = DbOpt,
    model: str = typer.Option(None, "--model", "-m", help="Only runs with a config of this model."),
    tag: str = typer.Option(None, "--tag", help="Only runs with this tag."),
    since: str = typer.Option(None, "--since", help="Only runs created at or after this ISO date (UTC)."),
    json_out: Path = JsonOpt,
) -> None:
    """List the stored runs, serve runs and optimizations, newest first (show takes each id)."""
    from surrobench.api.compare import history as list_runs
    from surrobench.report.history import history_table

    runs = list_runs(db, model=model, tag=tag, since=since)
    write_json(json_out, runs.to_json())
    filters = " ".join(
        f"{flag} {value}" for flag, value in (("--model", model), ("--tag", tag), ("--since", since)) if value
    )
    if not runs and filters:  # the filters left nothing: say so, rather than an empty table
        console.print(rich_escape(f"no stored run matches {filters} in {db}"), soft_wrap=True)
        return
    console.print(history_table(runs, f"runs in {rich_escape(str(db))}", width=console.width))
