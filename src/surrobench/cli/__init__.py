"""The ``surrobench`` command line: one typer app, one module per command.

Commands are thin (STYLE.md): parse arguments, call the library, render. Errors a user can cause are
raised as :class:`surrobench.errors.UsageError` anywhere below and turned into one line on stderr with
exit code 2 here, at the edge.
"""

from __future__ import annotations

import sys

import typer

from surrobench.errors import UsageError

app = typer.Typer(
    name="surrobench",
    help="Benchmark, profile and diagnose the inference of physics surrogate models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register() -> None:
    # Each command module adds itself to ``app`` on import.
    from surrobench.cli import analyze, calibrate, compare, diagnose, models, perf, profile, report, run, scenarios, show  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app, mapping :class:`UsageError` to one line and exit code 2."""
    _register()
    try:
        app(args=argv, standalone_mode=True)
    except UsageError as exc:
        print(f"surrobench: error: {exc}", file=sys.stderr)
        sys.exit(2)
