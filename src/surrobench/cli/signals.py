"""SIGTERM and SIGHUP end a command as Ctrl-C does.

Slurm's ``scancel`` and GNU ``timeout`` send SIGTERM; a closed terminal or SSH session sends SIGHUP. While a command
runs the first signal raises ``KeyboardInterrupt`` in the main thread, keeping what Ctrl-C keeps, later ones held;
the exit code is ``128 + signal number`` (130, 143, 129; POSIX ``sh``, "Exit Status"), acted on between bytecodes.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

from surrobench.errors import EXIT_INTERRUPTED

#: The signals handled as Ctrl-C, besides SIGINT itself.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []


def _as_interrupt(signum: int, frame) -> None:
    _received.append(signum)
    if len(_received) != 2:  # the first, and a third to end a wind-down that hangs; the second is held
        raise KeyboardInterrupt


@contextlib.contextmanager
def _handled(signals: tuple, handler) -> Iterator[None]:
    """``handler`` for ``signals`` while the block runs, the previous handlers restored after. Outside the main
    thread (where Python cannot set signal handlers) the block runs unchanged."""
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, handler) for s in signals} if main else {}
    try:
        yield
    finally:
        for s, before in previous.items():
            signal.signal(s, before)


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """While the block runs, the first of SIGINT (where Python's handler has it) and :data:`SIGNALS` raises
    ``KeyboardInterrupt``; the second is held (raised as the first unwinds, in a weakref callback, it is printed as
    "Exception ignored" and lost), unless the first was lost so; a third raises again, the way out of a wind-down
    that hangs. Outside the main thread as :func:`_handled`."""
    _received.clear()
    hook = sys.unraisablehook

    def lost(args) -> None:  # a KeyboardInterrupt swallowed in a callback: the next signal is the first again
        if args.exc_type is KeyboardInterrupt:
            _received.clear()
        else:
            hook(args)

    sys.unraisablehook = lost
    ctrl_c = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    try:
        with _handled(((signal.SIGINT,) if ctrl_c else ()) + SIGNALS, _as_interrupt):
            yield
    finally:
        sys.unraisablehook = hook


def interrupt_exit_code() -> int:
    """The exit code of an interrupted command: ``128 +`` the first of :data:`SIGNALS` received by the last
    :func:`signals_as_interrupt` block, else :data:`~surrobench.errors.EXIT_INTERRUPTED` (Ctrl-C)."""
    return 128 + _received[0] if _received else EXIT_INTERRUPTED


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """While the block runs, SIGINT and :data:`SIGNALS` are held: the block finishes (a document is written whole),
    then the first signal held is raised again under the handler in place before (an ignored one stays ignored),
    ending the command as it would have a moment later. Outside the main thread as :func:`_handled`."""
    held: list[int] = []
    with _handled((signal.SIGINT, *SIGNALS), lambda signum, frame: held.append(signum)):
        yield
    if held:
        signal.raise_signal(held[0])


def ignore_late_signals() -> None:
    """After a command has finished, let the process exit with its code. SIGINT and :data:`SIGNALS` are ignored:
    CPython restores a handled signal's default action as it finalizes, an ignored one stays (``_PySignal_Fini``).
    CPython's flag of a KeyboardInterrupt that left code run from a source string (a dataclass's methods as they are
    made, :func:`exec`), set though the command caught it, is cleared: ``python -m`` ends by SIGINT while it is set
    (``exit_sigint``, Modules/main.c), and each string run clears it first (Python/pythonrun.c). Main thread only."""
    for s in (signal.SIGINT, *SIGNALS):
        signal.signal(s, signal.SIG_IGN)
    exec("")
