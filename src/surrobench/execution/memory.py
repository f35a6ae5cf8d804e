"""Peak memory of one config: CUDA allocator peaks, or resident-set growth on the CPU."""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")


@dataclass(frozen=True)
class PeakMemory:
    """Peak memory in bytes. ``reserved_bytes`` is the CUDA caching allocator's reserve (None on CPU);
    ``alloc_retries``: times the allocator failed a cudaMalloc, freed its cache and retried during the config
    (``torch.cuda.memory_stats()["num_alloc_retries"]``, PyTorch docs "CUDA semantics", memory management),
    None on CPU."""

    peak_bytes: int
    reserved_bytes: int | None
    alloc_retries: int | None = None


def _vm_hwm_bytes() -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakMemoryTracker:
    """Brackets a config: ``start()`` resets the peak, ``stop()`` reads it.

    CUDA: ``torch.cuda.reset_peak_memory_stats`` / ``max_memory_allocated`` / ``max_memory_reserved``
    (absolute: weights, inputs and activations). CPU: growth of the peak resident set over the RSS at
    ``start()``. On Linux the kernel's high-water mark (VmHWM) is reset by writing ``5`` to
    ``/proc/self/clear_refs`` (proc(5)); where that is not allowed, ``ru_maxrss`` (lifetime peak, so
    possibly an overestimate carried over from earlier configs) is used instead.
    """

    def __init__(self, device: str) -> None:
        self.device = device
        self._rss0 = 0
        self._retries0 = 0

    def start(self) -> None:
        if self.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            self._retries0 = torch.cuda.memory_stats().get("num_alloc_retries", 0)
            return
        try:
            _CLEAR_REFS.write_text("5")
        except OSError:
            pass
        self._rss0 = psutil.Process().memory_info().rss

    def stop(self) -> PeakMemory:
        if self.device == "cuda":
            retries = torch.cuda.memory_stats().get("num_alloc_retries", 0) - self._retries0
            return PeakMemory(torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), retries)
        hwm = _vm_hwm_bytes()
        if hwm is None:
            hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return PeakMemory(max(0, hwm - self._rss0), None)
