"""Peak memory of one config: CUDA allocator peaks, or the config's own resident-set peak on the CPU; and glibc
malloc's thresholds pinned for every timed process (:func:`pin_malloc_thresholds`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import resource
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

from surrobench.execution.host_facts import proc_value

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")

#: mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: glibc's largest dynamic mmap threshold on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``, mallopt(3)), pinned: a block
#: under it is reused from the heap, one over it freshly mapped on every call, whatever ran before; the trim
#: threshold twice it, as glibc's dynamic rule keeps (why: docs/benchmarks/cpu-allocator.md).
MMAP_THRESHOLD_BYTES = 32 * 2**20
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES
#: The environment variables through which a user sets glibc's thresholds themselves (mallopt(3)): then they stand.
_USER_MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (mallopt, malloc_trim), else None (macOS, musl, Windows)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


@functools.cache
def pin_malloc_thresholds() -> bool:
    """Pin glibc malloc's mmap and trim thresholds for this process, once: glibc otherwise raises its mmap threshold
    to each large block freed (mallopt(3), "M_MMAP_THRESHOLD"), so one large op decides whether later temporaries
    page-fault on every call. Whether they were pinned (not on another C library, nor over ``MALLOC_*_``)."""
    libc = _glibc()
    if libc is None or any(name in os.environ for name in _USER_MALLOC_ENV):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )


def minor_faults() -> int:
    """The process's minor page faults so far (getrusage(2) ``ru_minflt``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def release_free_heap() -> None:
    """Return the heap's free pages to the system (glibc ``malloc_trim(0)``), so the resident set holds live memory
    only."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@dataclass(frozen=True)
class PeakMemory:
    """Peak memory in bytes; on CUDA ``reserved_bytes`` (the caching allocator's) and ``alloc_retries`` (its
    ``num_alloc_retries`` during the config, PyTorch docs "CUDA semantics"), None on CPU."""

    peak_bytes: int
    reserved_bytes: int | None
    alloc_retries: int | None = None
    own_peak: bool = True


def available_bytes(device: str) -> int:
    """Memory a new allocation can take now, bytes: ``torch.cuda.mem_get_info``'s free on CUDA, ``MemAvailable``
    on the CPU."""
    return torch.cuda.mem_get_info()[0] if device == "cuda" else psutil.virtual_memory().available


class PeakMemoryTracker:
    """Brackets a config: ``start()`` resets the peak, ``stop()`` reads it. CUDA: the allocator's peaks. CPU: the
    peak resident set's growth, after :func:`release_free_heap` and a VmHWM reset (``5`` to
    ``/proc/self/clear_refs``, proc(5)), else over the lifetime's ``ru_maxrss`` (``own_peak`` False); started after
    a config's first calls, which page in libtorch's code (docs/benchmarks/cpu-allocator.md)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._rss0 = 0
        self._retries0 = 0
        self._reset = False

    def start(self) -> None:
        if self.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            self._retries0 = torch.cuda.memory_stats().get("num_alloc_retries", 0)
            return
        release_free_heap()
        try:
            _CLEAR_REFS.write_text("5")
            self._reset = _glibc() is not None
        except OSError:
            self._reset = False
        self._rss0 = psutil.Process().memory_info().rss

    def stop(self) -> PeakMemory:
        if self.device == "cuda":
            retries = torch.cuda.memory_stats().get("num_alloc_retries", 0) - self._retries0
            return PeakMemory(torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), retries)
        status = proc_value("VmHWM:", _STATUS)  # the peak resident set, "<n> kB"
        own = self._reset and status is not None
        hwm_kb = int(status.split()[0]) if status is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return PeakMemory(max(0, hwm_kb * 1024 - self._rss0), None, own_peak=own)
