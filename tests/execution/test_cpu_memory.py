"""A CPU config's peak memory is its own (:class:`surrobench.execution.memory.PeakMemoryTracker`): the same
whatever ran before it in the process, and never 0 for a candidate that reuses what the baseline freed."""

from __future__ import annotations

import pytest
import torch
from conftest import TinySurrogate, exec_config
from torch import nn

from surrobench.execution.interleave import open_variant, time_round
from surrobench.execution.memory import _glibc
from surrobench.execution.runner import prepare_model, run_config

MIB = 2**20

pytestmark = pytest.mark.skipif(_glibc() is None, reason="the high-water mark is reset on Linux with glibc only")


class Temporaries(nn.Module):
    """Writes a temporary of ``batch * 8 MiB`` per call (under glibc's pinned mmap threshold for batch <= 3: served
    from the heap, where an earlier config's freed blocks would hide it)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 1)

    def forward(self, x):
        t = torch.ones(x.shape[0] * 2 * MIB)  # 8 MiB per sample of the batch, fp32
        return self.conv(x) + t[0]


def _peak(prepared, batch):
    r = run_config(exec_config(batch=batch, iters=3), prepared)
    assert r.status == "ok"
    return r.peak_mem_bytes


#: Calls of one config inside its CPU peak's bracket, each allocating a temporary: 1 warm-up, 3 timed and the input
#: set's check after them (``check_calls(..., "end")``; the cold start and the first check come before it). Counted as
#: 4 the bound was under what the heap may keep: under load a config often kept 4 of its 5 temporaries resident
#: (32.3 MiB at batch 1 in 4 of 17 processes, 96 MiB at batch 3 in 6), 0.7 MiB under it.
CALLS = 5


def test_cpu_peak_memory_is_independent_of_config_order():
    """Small then large, large then small: each config reads its own temporaries, at least one and at most one per
    call it made: the heap's reuse of torch's aligned blocks keeps from one to every call's temporary resident
    (docs/benchmarks/cpu-allocator.md: one to three alone, up to six in a full suite); before the fix the second
    config read what the first had left free in the heap, near 0. The first config of the process is one of them:
    its one-off growth (thread pools, first allocations) comes in its first call, before the bracket."""
    prepared = prepare_model(TinySurrogate(Temporaries), "cpu", 0)
    small_first, large_after = _peak(prepared, 1), _peak(prepared, 3)
    large_first, small_after = _peak(prepared, 3), _peak(prepared, 1)
    for small in (small_first, small_after):
        assert 8 * MIB - 0.5 * MIB <= small <= CALLS * 8 * MIB + MIB
    for large in (large_first, large_after):
        assert 24 * MIB - 0.5 * MIB <= large <= CALLS * 24 * MIB + MIB


def test_an_optimize_candidate_has_its_own_peak_not_zero():
    prepared = prepare_model(TinySurrogate(Temporaries), "cpu", 0)
    cfg = exec_config(batch=2)
    baseline = open_variant(cfg, prepared, own_module=False)
    time_round(baseline, 1, 2)
    candidate = open_variant(cfg, prepared)
    time_round(candidate, 1, 2)
    assert baseline.peak_bytes >= 15 * MIB and candidate.peak_bytes >= 15 * MIB


class CompilerGrowth(Temporaries):
    """Its first call grows the resident set by 64 MiB kept for good, as a compiler's (Inductor's code, caches,
    its Python heap) does; each call writes its ``batch * 8 MiB`` temporary."""

    held: list = []

    def forward(self, x):
        if not self.held:
            self.held.append(torch.ones(16 * MIB))  # 64 MiB, touched
        return super().forward(x)


def test_an_optimize_candidates_cpu_peak_is_its_steps_not_its_builds():
    """A compiled candidate's build grew the resident set by a compiler's memory (compile read 90.9 MiB beside the
    eager step's 4.3 MiB): on the CPU a candidate's peak is its timed rounds', what its step writes per call."""
    CompilerGrowth.held.clear()
    candidate = open_variant(exec_config(batch=2), prepare_model(TinySurrogate(CompilerGrowth), "cpu", 0))
    assert candidate.peak_bytes == 0  # its build: not the step's
    time_round(candidate, 1, 2)
    assert 15 * MIB <= candidate.peak_bytes < 64 * MIB and candidate.result().peak_mem_bytes == candidate.peak_bytes


def test_a_run_configs_cpu_peak_leaves_out_what_the_first_call_of_the_process_kept():
    """A one-time cache that the process's first call builds and keeps (thread pools, oneDNN's primitives, FFT plans;
    here 64 MiB) is not that config's: a config's CPU peak is its warm-up's and timed calls', the same as the same
    config's after it (a zoo U-Net at 32 read 5.4 MiB first, 1.9 after: docs/benchmarks/cpu-allocator.md)."""
    CompilerGrowth.held.clear()
    prepared = prepare_model(TinySurrogate(CompilerGrowth), "cpu", 0)
    first, again = _peak(prepared, 1), _peak(prepared, 1)
    assert CompilerGrowth.held  # the cache was built, in the first config's first call
    for peak in (first, again):
        assert 8 * MIB - 0.5 * MIB <= peak <= CALLS * 8 * MIB + MIB
