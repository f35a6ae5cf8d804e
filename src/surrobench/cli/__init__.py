"""The ``surrobench`` command line: one typer app, one thin module per command (docs/design.md, "The layers as
built"). A :class:`surrobench.errors.UsageError` raised anywhere below is one line on stderr, exit code 2, here.

Every command module is imported for ``--help``, so it imports at its top only what its options need; torch,
scipy.stats and matplotlib are imported in the command's body (docs/benchmarks/startup.md).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import threading
import warnings
from pathlib import Path

import typer

from surrobench.cli.app import app, flow_help, fold_option_help
from surrobench.cli.signals import ignore_late_signals, interrupt_exit_code, signals_as_interrupt
from surrobench.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, Interrupted, UsageError

# click's usage errors' base, from typer's re-exports (typer >= 0.28 vendors click, older ones depend on it).
_CLICK_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _show_version(value: bool) -> None:
    if value:
        from surrobench.version import __version__

        print(f"surrobench {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_show_version, is_eager=True, help="Print the version and exit.", metavar=""
    ),
) -> None:
    """Benchmark, profile and diagnose the inference of physics surrogate models."""


def _register() -> None:
    # Each command module adds itself to ``app`` on import.
    from surrobench.cli import analyze, calibrate, compare, diagnose, models, optimize, perf  # noqa: F401
    from surrobench.cli import profile, report, run, scenarios, serve, show, versus  # noqa: F401

    flow_help()
    fold_option_help()


def main(argv: list[str] | None = None) -> None:
    """Run the app in this process: bad input (ours or click's) and a standard output that cannot take the output
    are one line on stderr, exit 2; an interrupt exits 128 + the signal's number saying what was kept; other codes:
    :mod:`surrobench.errors`. A reader that went away (``| head``) is no error."""
    if sys.stdout is None:  # started with standard output closed (``>&-``)
        _fail("standard output is closed; redirect it to a file or /dev/null")
    args = (sys.argv[1:] if argv is None else argv) or ["--help"]  # no_args_is_help, without click's exception path
    started = _start_analyze_workers(args)
    try:
        with warnings.catch_warnings():
            # Inductor says so each time a compiled candidate of a complex-valued model is built (FNOs); the
            # candidate's measured speedup already tells what it costs, and the two lines broke the command's output
            warnings.filterwarnings("ignore", message="Torchinductor does not support code generation for complex")
            _run(args)
    finally:
        if started:
            from surrobench.api.analyze import discard_prestarted

            discard_prestarted()


_ANALYZE_VALUE_OPTIONS = frozenset({"--json", "--gap-threshold-us", "--workers", "--dask-scheduler"})
"""``analyze``'s options that take a value (tests/cli/test_analyze.py holds this to the command's own)."""


def _start_analyze_workers(args: list[str]) -> bool:
    """For ``analyze`` of one trace file: start the workers that read its pieces while the commands import
    (:func:`surrobench.trace.kineto_split.prestart`; ~0.4 s of the 401 MB trace's 2.5 s, docs/benchmarks/startup.md).
    True when asked to; the arguments are only guessed at here, the command parses them."""
    if args[0] != "analyze" or "--help" in args:
        return False
    paths, value_next = [], False
    for arg in args[1:]:
        if value_next or arg in _ANALYZE_VALUE_OPTIONS:
            value_next = not value_next
        elif not arg.startswith("-"):
            paths.append(arg)
    if len(paths) != 1:
        return False
    from surrobench.api.analyze import prestart

    prestart(Path(paths[0]))
    return True


def _run(args: list[str]) -> None:
    """:func:`main` after its arguments are known; a signal after the first is held until it exits."""
    if args[0] != "--version":  # the version is printed before any command is parsed: it needs none of them
        _register()
    with signals_as_interrupt():
        real = sys.stdout
        try:
            guard = sys.stdout = _StdoutGuard(real)  # the command's standard output, flushed at its end; then restored
            code = app(args=args, prog_name="surrobench", standalone_mode=False)
            guard.flush()
        except UsageError as exc:
            from surrobench.cli.options import usage_line  # the options (and numpy) only for an error: --version

            _fail(usage_line(exc))
        except Interrupted as exc:
            _interrupted(str(exc))
        except _CLICK_ERROR as exc:  # unknown option, bad value, missing argument
            _fail(" ".join(exc.format_message().split()), exc.exit_code)
        except (typer.Abort, KeyboardInterrupt):  # click's form of end-of-input and of a KeyboardInterrupt outside
            _interrupted("interrupted")  # a sweep; a KeyboardInterrupt as itself when it came as click returned
        finally:
            sys.stdout = real
        if code == EXIT_INTERRUPTED:  # typer's own exit for a KeyboardInterrupt outside a sweep
            _interrupted("interrupted")
        sys.exit(code if isinstance(code, int) else EXIT_OK)


class _StdoutGuard(io.TextIOBase):
    """``sys.stdout`` while a command runs. A reader that went away (``| head -1``) is not an error: the rest of
    the output is dropped and the command goes on. An output that cannot take more (``/dev/full``) is
    :class:`UsageError`. Either way fd 1 then points at /dev/null, so the flush at exit cannot fail again."""

    def __init__(self, stream) -> None:
        super().__init__()
        self._stream = stream

    def _failed(self, exc: OSError) -> None:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        if not isinstance(exc, BrokenPipeError):
            raise UsageError(f"cannot write to standard output ({exc.strerror or exc}); nothing stored was lost")

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._failed(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._failed(exc)

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


def entry() -> None:
    """The ``surrobench`` console command and ``python -m surrobench``: the current folder first on the import
    path, as ``python -m`` puts it; after the command a signal no longer changes its exit code, and threads a
    model left running are named and not waited for (``os._exit``)."""
    if (cwd := os.getcwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:  # a signal after the command's handling of signals ended, before the line below
        code = interrupt_exit_code()
    else:
        code = EXIT_OK
    ignore_late_signals()  # done: a late Ctrl-C during the teardown leaves this exit code as it is
    if stray := stray_threads():
        names = ", ".join(t.name for t in stray[:5])
        left = f"the model left {len(stray)} thread(s) running ({names}); exiting without waiting for them"
        print(f"surrobench: warning: {left}", file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)


def stray_threads() -> list[threading.Thread]:
    """Live non-daemon threads but the main one that the model (or its factory) left, which the interpreter would wait
    for at exit; TorchInductor's worker pools (:func:`surrobench.execution.modes.compile_worker_threads`) left out."""
    ours: set[threading.Thread] = set()
    if "torch._inductor" in sys.modules:  # only when torch.compile ran; importing torch here costs seconds
        from surrobench.execution.modes import compile_worker_threads

        ours = compile_worker_threads()
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive() and t not in ours]


def _interrupted(message: str) -> None:
    """Exit as interrupted: ``message`` (what was kept), prefixed with the signal when it was not Ctrl-C."""
    code = interrupt_exit_code()
    _fail(message, code, prefix=f"{signal.Signals(code - 128).name}: " if code != EXIT_INTERRUPTED else "")


def _fail(message: str, code: int = EXIT_USAGE, prefix: str = "error: ") -> None:
    print(f"surrobench: {prefix}{message}", file=sys.stderr)
    sys.exit(code)
