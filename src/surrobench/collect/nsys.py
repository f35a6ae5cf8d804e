"""Nsight Systems collection: the source text's ``nsys profile`` command, run when ``nsys`` exists.

Command (course ch. 3, section 3): ``nsys profile --trace=cuda,nvtx,osrt,cudnn,cublas --output=NAME
python ...``. ``--cuda-memory-usage=true`` only on request: the same text warns that it adds
significant overhead and should be on only when chasing memory problems.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

NSYS_TRACE = "cuda,nvtx,osrt,cudnn,cublas"
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")


@dataclass(frozen=True)
class NsysRun:
    """Outcome of :func:`run_nsys`: the command, whether it ran, and the report it produced (if any)."""

    command: tuple[str, ...]
    ran: bool
    report: Path | None
    message: str


def nsys_command(output: Path, target: list[str], cuda_memory_usage: bool = False) -> list[str]:
    """The ``nsys profile`` command line profiling ``target`` (argv) into ``output`` (no suffix)."""
    cmd = ["nsys", "profile", f"--trace={NSYS_TRACE}", f"--output={output}", "--force-overwrite=true"]
    if cuda_memory_usage:
        cmd.append("--cuda-memory-usage=true")
    return cmd + list(target)


def run_nsys(output: Path, target: list[str], cuda_memory_usage: bool = False) -> NsysRun:
    """Run :func:`nsys_command` when ``nsys`` is on PATH and check that a report was written.

    Never raises for a missing ``nsys``: the result says so and carries the command to run elsewhere.
    """
    cmd = nsys_command(output, target, cuda_memory_usage)
    shown = " ".join(cmd)
    if shutil.which("nsys") is None:
        return NsysRun(tuple(cmd), False, None, f"nsys is not on PATH; run this where it is: {shown}")
    done = subprocess.run(cmd, capture_output=True, text=True)
    report = next((p for p in (Path(f"{output}{s}") for s in REPORT_SUFFIXES) if p.exists()), None)
    if report is None:
        tail = (done.stderr or done.stdout).strip()[-300:]
        return NsysRun(tuple(cmd), True, None, f"nsys exited {done.returncode} without a report: {tail}")
    return NsysRun(tuple(cmd), True, report, f"report written: {report}")
