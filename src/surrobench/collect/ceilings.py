"""Measure a device's roofline ceilings once: copy bandwidth and matmul rate per precision.

- Bandwidth: ``dst.copy_(src)`` of ``copy_bytes`` on the device, counting read + write bytes
  (``2 * copy_bytes / time``), the convention of GPU.md's 4184 GB/s on the H200.
- Matmul: ``torch.mm`` of two ``n x n`` matrices, ``2 n^3`` FLOPs, per precision: ``fp32`` with TF32 off,
  ``tf32`` with TF32 on (CUDA only; on the CPU the switch has no effect and the row equals fp32), ``fp16``
  and ``bf16`` tensors (not autocast: the ceiling of the math itself).

Timing reuses the benchmark's own loop (:func:`surrobench.execution.timing.time_loop`): CUDA-event device
time on a GPU, the host clock on the CPU; the median of ``iters`` synchronized calls after ``warmup``.
"""

from __future__ import annotations

import datetime as dt
import statistics

import torch

from surrobench.analysis.roofline import Ceilings
from surrobench.execution.config import numeric_settings
from surrobench.execution.env import fingerprint
from surrobench.execution.timing import time_loop, warm_up

#: Defaults: GPU.md's sizes on CUDA (8192^3 GEMM, 1 GiB copy); small enough for a laptop CPU otherwise.
DEFAULT_SIZES = {"cuda": {"matmul_n": 8192, "copy_mib": 1024}, "cpu": {"matmul_n": 1024, "copy_mib": 256}}
MATMUL_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def _median_ms(step, device: str, warmup: int, iters: int) -> float:
    warm_up(step, warmup, device)
    samples = time_loop(step, iters, device)
    return float(statistics.median(samples.device_ms if samples.device_ms is not None else samples.latency_ms))


def measure_ceilings(device: str, *, matmul_n: int, copy_mib: int, warmup: int = 3, iters: int = 10) -> Ceilings:
    """The ceilings of ``device`` (``cpu`` or ``cuda``), named by the device name of the environment
    fingerprint. ``matmul_n``: GEMM size; ``copy_mib``: bytes copied per call, MiB."""
    n_bytes = copy_mib * 2**20
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    copy_ms = _median_ms(lambda i: dst.copy_(src), device, warmup, iters)
    del src, dst
    rates = {}
    for precision, dtype in MATMUL_DTYPES.items():
        with numeric_settings(precision, device, cudnn_benchmark=False):
            a = torch.randn(matmul_n, matmul_n, device=device).to(dtype)
            b = torch.randn(matmul_n, matmul_n, device=device).to(dtype)
            ms = _median_ms(lambda i: torch.mm(a, b), device, warmup, iters)
        rates[precision] = 2 * matmul_n**3 / (ms / 1e3) / 1e12
    return Ceilings(
        device_name=fingerprint(device)["device_name"], copy_gbps=2 * n_bytes / (copy_ms / 1e3) / 1e9,
        matmul_tflops=rates, measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        note=f"copy {copy_mib} MiB, matmul {matmul_n}^3, median of {iters} after {warmup} warm-up",
    )  # fmt: skip
