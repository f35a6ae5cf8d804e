"""SIGTERM and SIGHUP end a command as Ctrl-C does.

Slurm and ``timeout`` send SIGTERM at a time limit (Slurm's ``scancel`` and the ``timeout`` of GNU coreutils
both send SIGTERM first and SIGKILL only after a grace period); a closed terminal or SSH session sends SIGHUP.
While a command runs, each of them raises ``KeyboardInterrupt`` in the main thread, as SIGINT does, so every
path that keeps partial work on Ctrl-C (the sweep's stored configs and ``--json``, the run marked
``interrupted``, optimize's judged candidates, a fresh process told to store its run) keeps it on these too.
The exit code says which signal it was: ``128 + signal number``, the shell's convention (130 for SIGINT, 143
for SIGTERM, 129 for SIGHUP; POSIX ``sh``, "Exit Status").

Like Ctrl-C, the signal is acted on between Python bytecodes of the main thread: a forward inside one long
native call (a kernel, a blocking collective) is interrupted when that call returns.
"""

from __future__ import annotations

import contextlib
import os
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
    raise KeyboardInterrupt


@contextlib.contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """While the block runs, :data:`SIGNALS` raise ``KeyboardInterrupt`` (a second one too, as a second Ctrl-C
    does); the previous handlers are restored after. Outside the main thread (where Python cannot set signal
    handlers) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received.clear()
    previous = {s: signal.signal(s, _as_interrupt) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupt_exit_code() -> int:
    """The exit code of an interrupted command: ``128 +`` the first of :data:`SIGNALS` received by the last
    :func:`signals_as_interrupt` block, else :data:`~surrobench.errors.EXIT_INTERRUPTED` (Ctrl-C)."""
    return 128 + _received[0] if _received else EXIT_INTERRUPTED


def interrupt_name() -> str | None:
    """``SIGTERM`` or ``SIGHUP`` when one of them interrupted the command, None for Ctrl-C."""
    return signal.Signals(_received[0]).name if _received else None


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """While the block runs, SIGINT and :data:`SIGNALS` are held, not acted on: the block finishes (a document
    being written is written whole), then the first signal held is raised again (``signal.raise_signal``) under
    the handler that was in place before, so it ends the command as it would have, a moment later. A signal that
    was ignored stays ignored. Outside the main thread the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in (signal.SIGINT, *SIGNALS)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if held:
        signal.raise_signal(held[0])


def end_on_signal(code: int) -> None:
    """After a command has finished (its results stored, its outputs written): from now on SIGINT and
    :data:`SIGNALS` end the process at once with the command's own exit ``code``, its output flushed, since
    nothing is left to keep. Otherwise a signal during the interpreter's teardown (torch's exit handlers, worker
    pools) would end a complete command with exit 130 and no word of what was interrupted. A signal that was
    ignored stays ignored. Call it from the main thread, for a process that is about to exit."""

    def now(signum, frame) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
        os._exit(code)

    for s in (signal.SIGINT, *SIGNALS):
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, now)
