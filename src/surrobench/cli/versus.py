"""``surrobench versus``: is the surrogate faster than the solver it replaces, at the same accuracy?"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import typer

from surrobench.cli.app import app
from surrobench.cli.options import output_option, option_groups, DeviceOpt, JsonOpt, MarkdownOpt, ModeOpt, PrecisionOpt
from surrobench.cli.options import SeedOpt, SettingsOptions, console, count_option, write_json, write_output
from surrobench.errors import UsageError


def parse_problem_args(items: list[str] | None) -> dict:
    """``--problem-arg key=value`` items as keywords, a value as a Python literal (``256``, ``(32, 64)``) when it
    is one, else as text. Raises :class:`UsageError` for an item without ``=``."""
    import ast

    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError.bad("problem_args", f"{item!r}: expected key=value")
        try:
            out[key.strip()] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key.strip()] = value
    return out


@app.command()
@option_groups()
def versus(
    *,
    problem: str = typer.Option(
        ..., "--problem", help="path/file.py:factory or package.module:factory returning the problem (docs/versus.md)."
    ),
    problem_arg: list[str] = typer.Option(
        None, "--problem-arg", help="key=value passed to the problem's factory; repeat for several."
    ),
    model: str = typer.Option(
        None, "--model", "-m", help="The surrogate (a name as for run); default: the problem's own surrogate."
    ),
    cases: int = count_option(8, "--cases", help="Cases (initial/boundary conditions) both sides solve."),
    seed: int = SeedOpt,
    device: str = DeviceOpt,
    precision: str = PrecisionOpt,
    mode: str = ModeOpt,
    batch: int = count_option(8, "--batch", help="The surrogate's batched call (throughput beside latency)."),
    warmup: int = count_option(3, "--warmup", help="Untimed calls per solver level and surrogate setting."),
    repeats: int = count_option(5, "--repeats", help="Timed calls per case and level."),
    amortize_calls: int = count_option(1000, "--amortize-calls", help="Calls one-time costs are spread over."),
    settings: SettingsOptions,
    json_out: Path = JsonOpt,
    markdown: Path = MarkdownOpt,
    html_out: Path = output_option(None, "--html", help="Write the Pareto plot and tables (self-contained HTML) here."),
) -> None:
    """Is the surrogate faster than its solver at the same accuracy: the solver's ladder and the surrogate timed and
    scored on the same cases.

    The speedup at equal accuracy is interpolated on the solver's error-time front, with a bootstrap interval over
    cases; also the error at equal runtime and the crossover. An untrained surrogate is refused (exit 2).
    docs/versus.md."""
    from surrobench.api.versus import versus as run_versus
    from surrobench.report.versus import versus_page
    from surrobench.report.versus_tables import summary_line, versus_markdown, versus_tables

    timing = dict(cases=cases, seed=seed, device=device, batch=batch, warmup=warmup, repeats=repeats)
    timing.update(amortize_calls=amortize_calls, precisions=precision, modes=mode)
    record = run_versus(problem, model, problem_args=parse_problem_args(problem_arg), **timing, **asdict(settings))
    write_json(json_out, record.to_json())  # first: what was measured is kept whatever happens to the printing
    for table in versus_tables(record, width=console.width):
        console.print(table)
    console.print(summary_line(record), markup=False)
    if markdown is not None:
        write_output(markdown, versus_markdown(record), "--markdown")
    if html_out is not None:
        write_output(html_out, versus_page(record), "--html")
