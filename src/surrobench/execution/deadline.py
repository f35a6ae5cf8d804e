"""A time limit per config (``--timeout-s``): a config over it ends ``timeout`` and the sweep goes on.

A one-shot ``setitimer(ITIMER_REAL)`` whose SIGALRM handler raises :class:`ConfigTimeout` in the main thread,
between bytecodes or out of a blocking system call (PEP 475); a long native call (a huge kernel, a hung
synchronize or collective) is stopped only when it returns. Only the main thread receives signals: a limit in
another thread is refused.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from surrobench.errors import UsageError


class ConfigTimeout(BaseException):
    """The config ran past its limit; a ``BaseException`` so that a model's ``except Exception`` does not swallow
    it. ``timed_ms``/``device_ms``: the host and CUDA-event times (ms) of the timed calls finished before it."""

    def __init__(self, timeout_s: float, limit: str = "--timeout-s") -> None:
        super().__init__(f"over the {timeout_s:.3g} s limit ({limit})")
        self.timeout_s = timeout_s
        self.timed_ms: tuple[float, ...] = ()
        self.device_ms: tuple[float, ...] = ()


def check_timeout_s(timeout_s: float | None) -> None:
    """Raise :class:`UsageError` naming ``timeout_s`` unless it is None or a finite number > 0 (seconds)."""
    if timeout_s is None:
        return
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
        raise UsageError.bad("timeout_s", f"{timeout_s!r}: a number of seconds, not {type(timeout_s).__name__}")
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise UsageError.bad("timeout_s", f"{timeout_s}: must be a finite number of seconds > 0")
    if threading.current_thread() is not threading.main_thread():
        detail = ": needs the main thread (its timer is a signal, which only the main thread gets)"
        raise UsageError.bad("timeout_s", detail)


@contextlib.contextmanager
def deadline(timeout_s: float | None, limit: str = "--timeout-s") -> Iterator[list[bool]]:
    """Raise :class:`ConfigTimeout` (its message naming the ``limit``) in the block once ``timeout_s`` seconds have
    passed (None: no limit); the timer is cancelled and the previous SIGALRM handler restored on the way out. Yields
    a list that holds True once the limit has passed, so the caller knows its own cut whatever the block raised."""
    if timeout_s is None:
        yield []
        return

    active = [True]
    fired = []

    def expire(signum: int, frame) -> None:
        if active[0]:  # not in the ``finally`` below
            fired.append(True)
            raise ConfigTimeout(timeout_s, limit)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield fired
    finally:
        active[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if fired:
            stop_compile_workers()


def stop_compile_workers() -> None:
    """After a cut: kill torch.compile's worker processes (this process's descendants running torch's
    ``_inductor/compile_worker``, read from ``/proc``; none where inductor is not loaded) and, where one was, reset
    torch's pool, so that a later compilation starts a fresh one and the exit does not wait on the abandoned jobs: on
    an H100 with torch 2.11, a diagnose whose compilation the budget cut hung in torch's atexit
    ``shutdown_compile_workers`` until killed (docs/benchmarks/h200-measured-advice.md, "A cut compilation and the
    exit")."""
    async_compile = sys.modules.get("torch._inductor.async_compile")
    if async_compile is None:
        return
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):  # bytes: a process's name need not be UTF-8
        with contextlib.suppress(OSError, IndexError):
            children.setdefault(int(stat.read_bytes().rsplit(b")", 1)[1].split()[1]), []).append(int(stat.parent.name))
    family = list(children.get(os.getpid(), []))
    killed = False
    for pid in family:
        family += children.get(pid, [])
        with contextlib.suppress(OSError):
            if b"_inductor/compile_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
                killed = True
    if killed:  # torch's other start methods' workers are not matched: their shutdown would wait here, not at exit
        async_compile.shutdown_compile_workers()
