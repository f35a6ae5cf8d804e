"""Nsight Systems collection (docs/sources.md, method §3): ``nsys profile --trace=cuda,nvtx,osrt,cudnn,cublas``
(``--cuda-memory-usage`` only on request: costly) around the profiling child, with
``--capture-range=cudaProfilerApi`` on CUDA; :func:`require_nsys` refuses up front where nsys is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from surrobench.collect.child import child_argv, config_stem
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.records.schemas import NSYS_REPORT_SUFFIXES as REPORT_SUFFIXES

NSYS_TRACE = "cuda,nvtx,osrt,cudnn,cublas"


@dataclass(frozen=True)
class NsysRun:
    """Outcome of :func:`run_nsys`: the report it produced (None: none) and one line saying where, or why none."""

    report: Path | None
    message: str


def run_nsys(output: Path, cmd: list[str]) -> NsysRun:
    """Run ``cmd`` (:func:`nsys_command`'s, writing ``output``) when ``nsys`` exists and check the report; never
    raises for a missing ``nsys``."""
    if shutil.which("nsys") is None:
        return NsysRun(None, f"nsys is not on PATH; run this where it is: {' '.join(cmd)}")
    done = subprocess.run(cmd, capture_output=True, text=True)
    report = next((p for p in (Path(f"{output}{s}") for s in REPORT_SUFFIXES) if p.exists()), None)
    if report is None:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return NsysRun(None, f"nsys exited {done.returncode} without a report: {tail}")
    return NsysRun(report, f"report written: {report}")


@dataclass(frozen=True)
class NsysOptions:
    """The nsys phase: the child's step schedule, the folder for reports, ``--cuda-memory-usage``."""

    schedule: ProfileSchedule = field(default_factory=ProfileSchedule)
    trace_dir: Path = Path("surrobench-traces")
    cuda_memory_usage: bool = False


def nsys_command(cfg: ExecConfig, run_id: str, options: NsysOptions) -> tuple[Path, Path, list[str]]:
    """``<trace_dir>/<config_stem>``: the report's base name, the child's result file and the ``nsys profile`` argv
    around the child's command line (:func:`~surrobench.collect.child.child_argv`, profiler ``none``), with
    ``--capture-range=cudaProfilerApi`` (between Start/Stop only) on CUDA; the config JSON written beside them."""
    base = options.trace_dir / config_stem(run_id, cfg)
    config_path, result_path = base.with_name(base.name + ".config.json"), base.with_name(base.name + ".result.json")
    config_path.write_text(json.dumps(cfg.to_json()))
    cmd = ["nsys", "profile", f"--trace={NSYS_TRACE}", f"--output={base}", "--force-overwrite=true"]
    if options.cuda_memory_usage:
        cmd.append("--cuda-memory-usage=true")
    if cfg.device == "cuda":
        cmd.append("--capture-range=cudaProfilerApi")
    return base, result_path, cmd + child_argv(config_path, result_path, options.schedule, profiler="none")


def require_nsys(cfg: ExecConfig, run_id: str, options: NsysOptions) -> None:
    """Fail before measuring when ``nsys`` is missing, quoting the command for ``cfg``. Raises UsageError: not on PATH."""
    if shutil.which("nsys") is not None:
        return
    _, _, cmd = nsys_command(cfg, run_id, options)
    raise UsageError("nsys is not on PATH (install NVIDIA Nsight Systems); where it is, run: " + " ".join(cmd))
