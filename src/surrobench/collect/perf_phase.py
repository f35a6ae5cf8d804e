"""How long the system-level phase samples: ``window_s`` of steps by the timed median, at least one."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from surrobench.collect.torch_profiler import DEFAULT_WAIT, ProfileSchedule

DEFAULT_WINDOW_S = 2.0
"""Seconds of measured steps: 200 py-spy samples and ~1000 perf samples, enough for a 5% share to show."""
MAX_WINDOW_STEPS = 100_000  # bounds the step count for sub-microsecond steps


@dataclass(frozen=True)
class PerfOptions:
    """How long to sample (s), where to put flame graphs (None: not kept), how many hot spots per sampler."""

    window_s: float = DEFAULT_WINDOW_S
    flamegraph_dir: Path | None = None
    top: int = 20


def window_schedule(median_ms: float | None, window_s: float) -> ProfileSchedule:
    """``DEFAULT_WAIT`` unmeasured steps, then enough steps of ``median_ms`` to fill ``window_s`` seconds."""
    steps = math.ceil(window_s * 1e3 / median_ms) if median_ms else 1
    return ProfileSchedule(wait=DEFAULT_WAIT, warmup=0, active=min(max(steps, 1), MAX_WINDOW_STEPS))
