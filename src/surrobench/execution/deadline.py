"""A time limit per config (``--timeout-s``): a config over it ends ``timeout`` and the sweep goes on.

A one-shot ``setitimer(ITIMER_REAL)`` whose SIGALRM handler raises :class:`ConfigTimeout` in the main thread,
between bytecodes or out of a blocking system call (PEP 475); a long native call (a huge kernel, a hung
synchronize or collective) is stopped only when it returns. Only the main thread receives signals: a limit in
another thread is refused.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Iterator

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
def deadline(timeout_s: float | None, limit: str = "--timeout-s") -> Iterator[None]:
    """Raise :class:`ConfigTimeout` (its message naming the ``limit``) in the block once ``timeout_s`` seconds have
    passed (None: no limit); the timer is cancelled and the previous SIGALRM handler restored on the way out."""
    if timeout_s is None:
        yield
        return

    active = [True]

    def expire(signum: int, frame) -> None:
        if active[0]:  # not in the ``finally`` below
            raise ConfigTimeout(timeout_s, limit)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        active[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
