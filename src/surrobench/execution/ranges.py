"""Named ranges for the phases of an inference step (docs/sources.md, method §3): a ``record_function`` range and,
on CUDA, an NVTX range of the same name. ``surrobench::data_prep`` surrounds the build of a config's inputs; each
step is ``surrobench::forward`` then ``surrobench::post_process``. The timed loop carries no ranges.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.profiler import record_function

from surrobench.execution.modes import Step

RANGE_PREFIX = "surrobench::"
PHASES = ("data_prep", "forward", "post_process")


@contextlib.contextmanager
def phase_range(phase: str, device: str) -> Iterator[None]:
    """Range ``surrobench::<phase>``, ``phase`` one of :data:`PHASES`."""
    name = RANGE_PREFIX + phase
    nvtx = device == "cuda"
    if nvtx:
        torch.cuda.nvtx.range_push(name)
    try:
        with record_function(name):
            yield
    finally:
        if nvtx:
            torch.cuda.nvtx.range_pop()


def annotated_step(step: Step, device: str) -> Step:
    """``step(i)`` inside a ``forward`` range, then a ``post_process`` range that waits for the device,
    so each call ends with the device idle (as in the method's profiling loop, docs/sources.md §2). Returns None."""

    def run(i: int) -> None:
        with phase_range("forward", device):
            output = step(i)
        with phase_range("post_process", device):
            if device == "cuda":
                torch.cuda.synchronize()
            del output

    return run
