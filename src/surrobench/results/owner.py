"""Which process writes a run, and whether it is still alive (``surrobench history``'s ``abandoned``).

A process killed with no chance to mark its run (SIGKILL, an out-of-memory kill) leaves it ``running``. The row
keeps its writer's pid, host and start time (psutil's ``create_time``, seconds since the epoch, against a reused
pid), so a reader on the same host tells a run in progress from an abandoned one; another host's is shown as
stored.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

import psutil

#: Two readings of one process's start time differ by less than this, seconds: psutil derives it from the
#: boot time and the process's start in clock ticks (Linux ``/proc/PID/stat`` field 22, 1/100 s).
_START_TOLERANCE_S = 1.0


@dataclass(frozen=True)
class RunOwner:
    """The process that writes a run: ``pid``, ``host`` (``socket.gethostname()``, as the run's env has it),
    ``started`` (its start time, seconds since the epoch)."""

    pid: int
    host: str
    started: float

    @classmethod
    def current(cls) -> "RunOwner":
        """This process."""
        pid = os.getpid()
        return cls(pid, socket.gethostname(), psutil.Process(pid).create_time())

    def gone(self) -> bool:
        """True when this process has surely ended: the host is this one and no process with that pid and
        start time runs now. False when it is alive, or on another host (it cannot be checked from here)."""
        if self.host != socket.gethostname():
            return False
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.started) > _START_TOLERANCE_S:
                return True  # the pid was reused by a later process
            return process.status() == psutil.STATUS_ZOMBIE  # ended, not yet reaped by its parent
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:  # alive, but not ours to read (another user's process)
            return False
