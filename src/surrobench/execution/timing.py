"""The timing core: cold start, warm-up, timed loop (docs/sources.md, method §1 and §5; triton.testing.do_bench).

The device is idle before each call. ``latency_ms``: the host clock over the call and a device-wide synchronize,
what a caller waits. On CUDA, ``device_ms``: events around the call on the current stream; ``host_ms``: the host
clock to the call's return, the step's submission. On CPU only the host clock is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from surrobench.execution.deadline import ConfigTimeout
from surrobench.execution.host_facts import cpu_times, other_cpus
from surrobench.execution.memory import minor_faults
from surrobench.records.stats import NS_PER_MS


@dataclass(frozen=True)
class TimedSamples:
    """Per-iteration times of one config, ms, shapes ``(iters,)``; ``device_ms`` and ``host_ms`` (the step's
    submission, module docstring) None on CPU. ``faults_per_call``: on CPU, the process's minor page faults
    (:func:`~surrobench.execution.memory.minor_faults`) per timed call, else None."""

    latency_ms: np.ndarray
    device_ms: np.ndarray | None
    host_ms: np.ndarray | None = None
    faults_per_call: float | None = None
    other_cpus: float | None = None  # on CPU, the CPUs other processes kept busy over the calls (measure_round)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_once(step: Callable[[int], object], device: str) -> float:
    """Host time in ms of one synchronized call ``step(0)``; used for the cold start."""
    _sync(device)
    t0 = time.perf_counter_ns()
    step(0)
    _sync(device)
    return (time.perf_counter_ns() - t0) / NS_PER_MS


def warm_up(step: Callable[[int], object], iters: int, device: str) -> None:
    """Run ``step`` ``iters`` times untimed, then wait for the device."""
    for i in range(iters):
        step(i)
    _sync(device)


def measure_round(
    step: Callable[[int], object],
    warmup: int,
    iters: int,
    device: str,
    before_each: Callable[[], None] | None = None,
    after_warmup: Callable[[], None] | None = None,
) -> TimedSamples:
    """The one timed round of every loop: ``warmup`` untimed calls, ``after_warmup`` with the device idle, then
    :func:`time_loop`, which raises ConfigTimeout, with the CPUs other processes kept busy over it on the CPU."""
    warm_up(step, warmup, device)
    if after_warmup is not None:
        after_warmup()
    since = cpu_times() if device == "cpu" else None
    samples = time_loop(step, iters, device, before_each)
    return replace(samples, other_cpus=other_cpus((since, cpu_times()))) if since is not None else samples


def time_loop(
    step: Callable[[int], object], iters: int, device: str, before_each: Callable[[], None] | None = None
) -> TimedSamples:
    """Time ``iters`` (>= 1) calls of ``step(i)``, synchronizing after each, the result dropped; ``before_each`` runs
    before each call, outside the timed region, with the device idle.

    Raises:
        ConfigTimeout: the config's limit passed (:mod:`surrobench.execution.deadline`), or KeyboardInterrupt
            (Ctrl-C or a signal), carrying the times of the iterations that finished (``timed_ms``, ``device_ms``).
    """
    cuda = device == "cuda"
    latency_ns = np.empty(iters, dtype=np.int64)
    submit_ns = np.empty(iters, dtype=np.int64)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)] if cuda else []
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)] if cuda else []
    faults = 0 if cuda else minor_faults()
    done = 0  # iterations finished: what a ConfigTimeout keeps
    _sync(device)
    try:
        for i in range(iters):
            if before_each is not None:
                before_each()
            if cuda:  # recorded before the host clock starts: its cost is the harness's, not the model's
                starts[i].record()
            t0 = time.perf_counter_ns()
            step(i)
            if cuda:
                submit_ns[i] = time.perf_counter_ns() - t0
                ends[i].record()
                torch.cuda.synchronize()
            latency_ns[i] = time.perf_counter_ns() - t0
            done += 1
    except (ConfigTimeout, KeyboardInterrupt) as exc:  # the finished iterations' events are complete (synchronized)
        exc.timed_ms = tuple((latency_ns[:done] / NS_PER_MS).tolist())
        exc.device_ms = tuple(s.elapsed_time(e) for s, e in zip(starts[:done], ends[:done]))
        raise
    if not cuda:
        return TimedSamples(latency_ns / NS_PER_MS, None, faults_per_call=(minor_faults() - faults) / iters)
    # Reading elapsed times after the loop keeps the query calls out of the timed region.
    device_ms = np.array([s.elapsed_time(e) for s, e in zip(starts, ends)], dtype=np.float64)
    return TimedSamples(latency_ns / NS_PER_MS, device_ms, submit_ns / NS_PER_MS)
