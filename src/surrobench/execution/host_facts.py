"""What a CPU config's host was like while it was timed (in the result's ``extra``: the readings of
:func:`surrobench.execution.runner.timed_result`, :func:`other_cpus` over its timed calls, and ``run``'s
:func:`subnormal_share`), read by :mod:`surrobench.analysis.detect_host`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch only where a model runs: compare reads HOST_READINGS without it
    from torch import nn

#: Those that are readings of the host and the model, not settings of the config: compare leaves them out of
#: the per-config settings that differ (:mod:`surrobench.results.compare`).
HOST_READINGS = ("usable_cpus", "load_1m", "other_cpus", "subnormal_share")
#: The host counts as busy when other processes keep more than this share of its CPUs busy: 1.0 of 2 usable CPUs
#: took one thread's timings from 9.3 to 17.2 ms between two runs of one code, minutes apart (docs/compare.md).
BUSY_SHARE = 0.25
#: Shortest window whose reading is kept: the counters tick every 10 ms, so a steady 1.0 CPU of others read 0-4 over
#: 12 ms and 0-1.17 over 60 ms windows, 0.95-1.05 over 0.2 s (docs/benchmarks/cpu-busy-reading.md).
MIN_WINDOW_S = 0.2
#: The kernel's CPU time counters (proc(5)): a ``cpuN`` line per online CPU N, in clock ticks.
PROC_STAT = Path("/proc/stat")
#: The kernel's description of each CPU (proc(5)): ``model name``, ``flags`` (x86) or ``Features`` (ARM) lines.
CPUINFO = Path("/proc/cpuinfo")
#: Flags of native bf16 arithmetic: x86's AVX512-BF16, AMX-BF16 (Intel's Software Developer's Manual, CPUID leaf 7),
#: ARM's FEAT_BF16 (Linux's Documentation/arch/arm64/elf_hwcaps.rst, HWCAP2_BF16: Neoverse V1/V2, Graviton3); without
#: one, torch's CPU bf16 matmuls and convolutions convert to fp32 and back, slower than fp32.
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


def proc_value(key: str | tuple[str, ...], path: Path | None = None) -> str | None:
    """The value after the colon of the first line of ``path`` (None: :data:`CPUINFO`) that starts with ``key``, or
    with one of them (``("flags", "Features")``: x86's or ARM's flags); None without the file or the line (not Linux)."""
    try:
        lines = (path or CPUINFO).read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith(key)), None)


def cpu_times() -> tuple[float, float, float] | None:
    """(wall s, the busy CPU s of the CPUs this process may run on: :data:`PROC_STAT`'s ``cpuN`` lines of its affinity
    mask less idle and iowait; this process's CPU s) now, from a fixed point; None without the file or such a line.
    Not the ``cpu`` line's whole host: :func:`usable_cpus` counts these CPUs, and one busy outside them takes no time
    from ours."""
    try:
        mask = {f"cpu{n}" for n in os.sched_getaffinity(0)}
        rows = [row for line in PROC_STAT.read_text().splitlines() if (row := line.split()) and row[0] in mask]
        busy = sum(sum(map(int, row[1:9])) - int(row[4]) - int(row[5]) for row in rows)
    except (AttributeError, IndexError, OSError, ValueError):
        return None
    if not rows:  # CPUs numbered otherwise than the mask (a container's view of the file): not read, never quiet
        return None
    own = os.times()
    return own.elapsed, busy / os.sysconf("SC_CLK_TCK"), own.user + own.system


def other_cpus(*spans: tuple[tuple[float, float, float] | None, ...]) -> float | None:
    """The CPUs of the affinity mask other processes kept busy on average over ``spans``, each a (start, end) pair of
    :func:`cpu_times` readings: those CPUs' busy time less ours over the wall time, summed over the spans; None
    without a span, without every reading or under :data:`MIN_WINDOW_S` of wall time."""
    if None in (reading for span in spans for reading in span):
        return None
    wall, busy, own = (sum(end[k] - start[k] for start, end in spans) for k in range(3))
    return max(busy - own, 0.0) / wall if wall >= MIN_WINDOW_S else None


def host_load() -> tuple[float | None, int]:
    """(1-minute load average or None where the OS has none, logical CPU count)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = None
    return load, os.cpu_count() or 1


def busy_others(extra: dict, load_1m: float | None = None) -> float | None:
    """The CPUs other processes kept busy while a CPU config was timed when over :data:`BUSY_SHARE` of its CPUs, else
    None: its ``extra``'s (module docstring) ``other_cpus`` against its ``usable_cpus``, the CPUs both count; without
    that reading, a 1-minute load average ``load_1m`` over those CPUs (it holds our last minute too)."""
    others, cpus = extra.get("other_cpus"), extra.get("usable_cpus") or 1
    if others is None and load_1m is not None:
        others = max(load_1m - (1 - BUSY_SHARE) * cpus, 0.0)
    return others if others is not None and others > BUSY_SHARE * cpus else None


def free_cores_of(usable: int, others: float) -> int:
    """The cores ``others`` busy CPUs leave of ``usable``: to the nearest (0.03 CPU leaves a core free), at least 1."""
    return max(math.floor(usable - others + 0.5), 1)


def usable_cpus() -> int:
    """The logical CPUs this process may run on (its affinity mask, as ``taskset`` or a job's cgroup cpuset sets
    it; the CPU count where the OS has no affinity call)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def subnormal_share(module: "nn.Module", inputs) -> float:
    """The fraction of the floating-point values of ``module``'s parameters and buffers and of the tensors
    in ``inputs`` that are subnormal (non-zero, magnitude below ``torch.finfo(dtype).tiny``): arithmetic on them
    takes a microcode assist on x86 cores, tens to hundreds of cycles each (Intel 64 and IA-32 Architectures
    Optimization Reference Manual, "Floating-point exceptions: denormals"), unless torch.set_flush_denormal(True).
    0.0 when there is no floating value."""
    import torch

    tensors = [*module.parameters(), *module.buffers(), *(x for x in inputs if isinstance(x, torch.Tensor))]
    floats = [t.detach() for t in tensors if t.is_floating_point()]
    count = sum(t.numel() for t in floats)
    subnormal = sum(int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum()) for t in floats)
    return subnormal / count if count else 0.0
