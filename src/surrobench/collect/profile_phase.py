"""The profiling phase's options, trace folder and trace files (:func:`surrobench.api.profile.profile_phase`), and
how long the system-level phase samples: ``window_s`` of steps by the timed median, at least one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from surrobench.collect.torch_profiler import DEFAULT_WAIT, ProfileSchedule
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig


@dataclass(frozen=True)
class ProfileOptions:
    """How to profile: schedule, ``with_stack``, trace folder (None: none), ``counters`` (Nsight Compute)."""

    schedule: ProfileSchedule = field(default_factory=ProfileSchedule)
    with_stack: bool = False
    trace_dir: Path | None = None
    gzip: bool = True
    counters: bool = False


def prepare_trace_dir(path: Path, flag: str = "--trace-out") -> Path:
    """Create ``flag``'s folder, check it is writable, return it absolute. Raises UsageError."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {str(path)!r}: is a file; give a folder for one file per config")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".surrobench-write-test"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{flag} {str(path)!r}: cannot write there ({exc.strerror or exc})") from None
    return path.resolve()


def trace_file(options: ProfileOptions, run_id: str, cfg: ExecConfig) -> Path | None:
    """``<trace_dir>/<config_stem>.json[.gz]``, or None."""
    from surrobench.collect.child import config_stem  # imports torch, which PerfOptions' users need not

    if options.trace_dir is None:
        return None
    return options.trace_dir / (config_stem(run_id, cfg) + (".json.gz" if options.gzip else ".json"))


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
