"""``surrobench scenarios``: run the planted-bottleneck suite, diagnose each, and check the verdicts.

Exit code 0 when every scenario that ran passed, 1 when one failed (a regression of the diagnosis),
2 for bad input. ``--json`` writes each scenario's outcome and findings; ``--markdown`` the table.
"""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import count_option, DbOpt, DeviceOpt, JsonOpt, MarkdownOpt, ThresholdsOpt, TraceOutOpt
from surrobench.cli.options import WarmupOpt, console, print_warnings, write_json, write_output
from surrobench.api.defaults import MIN_ITERS, load_thresholds, low_iterations_note, prepare_trace_dir


@app.command()
def scenarios(
    only: str | None = typer.Option(None, "--only", help="Comma-separated scenario names (default: all)."),
    device: str = DeviceOpt,
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    trace_out: Path = TraceOutOpt,
    warmup: int = WarmupOpt,
    iters: int = count_option(MIN_ITERS, "--iters", help="Timed iterations."),
    config: Path | None = ThresholdsOpt,
    markdown: Path | None = MarkdownOpt,
) -> None:
    """Run each planted-bottleneck scenario, diagnose it, check that its bottleneck is the top finding."""
    from surrobench.api.scenarios import run_scenarios
    from surrobench.report.scenarios import scenarios_markdown, scenarios_table

    th = load_thresholds(config)
    prepare_trace_dir(trace_out)
    note = low_iterations_note(warmup, iters)
    print_warnings([note] if note else [])
    suite = run_scenarios(only, device=device, db=db, trace_dir=trace_out, warmup=warmup, iters=iters, thresholds=th)
    console.print(scenarios_table(suite.outcomes, suite.device, width=console.width))
    if markdown is not None:
        write_output(markdown, scenarios_markdown(suite.outcomes, suite.findings), "--markdown")
    write_json(json_out, suite.to_json())
    if suite.failed:
        raise typer.Exit(1)
