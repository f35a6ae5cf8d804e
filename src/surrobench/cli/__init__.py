"""The ``surrobench`` command line: one typer app, one module per command.

Commands are thin (STYLE.md): parse arguments, call the library, render. Errors a user can cause are
raised as :class:`surrobench.errors.UsageError` anywhere below and turned into one line on stderr with
exit code 2 here, at the edge.
"""

from __future__ import annotations

import os
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


# typer re-exports click's exception classes (typer >= 0.28 vendors click, older ones depend on it): take
# the common base of usage errors from them rather than importing click, so both work.
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _register() -> None:
    # Each command module adds itself to ``app`` on import.
    from surrobench.cli import analyze, calibrate, compare, diagnose, models, optimize, perf, profile, report, run, scenarios, show  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app; bad input of any kind (ours, or click's own usage errors) becomes
    one line on stderr and exit code 2; ``--fail-on-regression`` style exits keep their codes."""
    _register()
    args = sys.argv[1:] if argv is None else argv
    if not args:  # no_args_is_help, without click's exception path
        args = ["--help"]
    try:
        code = app(args=args, prog_name="surrobench", standalone_mode=False)
    except UsageError as exc:
        _fail(str(exc))
    except _CLICK_ERROR as exc:  # unknown option, bad value, missing argument
        _fail(" ".join(exc.format_message().split()), exc.exit_code)
    except typer.Abort:
        _fail("interrupted", 130)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader of a pipe went away: what was asked for was still done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int = 2) -> None:
    print(f"surrobench: error: {message}", file=sys.stderr)
    sys.exit(code)
