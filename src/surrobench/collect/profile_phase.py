"""The profiling phase's options, trace folder and trace files (the phase: :func:`surrobench.api.profile.profile_run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from surrobench.collect.child import config_stem
from surrobench.collect.torch_profiler import ProfileSchedule
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
    if options.trace_dir is None:
        return None
    return options.trace_dir / (config_stem(run_id, cfg) + (".json.gz" if options.gzip else ".json"))
