"""What a CPU config's host was like while it was timed (:func:`host_facts`, in the result's ``extra``), read by
:mod:`surrobench.analysis.detect_host`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch only where a model runs: compare reads HOST_READINGS without it
    from torch import nn

#: Those that are readings of the host and the model, not settings of the config: compare leaves them out of
#: the per-config settings that differ (:mod:`surrobench.results.compare`).
HOST_READINGS = ("usable_cpus", "load_1m", "subnormal_share")


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
    count = subnormal = 0
    with torch.no_grad():
        for t in tensors:
            if not t.is_floating_point() or t.numel() == 0:
                continue
            a = t.detach().abs()
            subnormal += int(((a > 0) & (a < torch.finfo(t.dtype).tiny)).sum())
            count += t.numel()
    return subnormal / count if count else 0.0


def host_facts(module: "nn.Module", inputs) -> dict:
    """``{"torch_threads", "usable_cpus", "load_1m", "subnormal_share"}`` now: torch's
    intra-op threads, :func:`usable_cpus`, the 1-minute load average (None where the OS has none) and
    :func:`subnormal_share` of ``module`` and ``inputs`` (a sequence of the forward's arguments)."""
    import torch

    from surrobench.execution.env import host_load

    return {
        "torch_threads": torch.get_num_threads(),
        "usable_cpus": usable_cpus(),
        "load_1m": host_load()[0],
        "subnormal_share": subnormal_share(module, inputs),
    }
