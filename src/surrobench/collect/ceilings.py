"""Measure a device's roofline ceilings once: copy bandwidth and matmul rate per precision.

- Bandwidth: ``dst.copy_(src)`` of ``copy_bytes``, ``2 * copy_bytes / time`` (read + write; docs/sources.md, h200).
- Matmul: ``torch.mm`` of ``n x n``, ``2 n^3`` FLOPs: ``fp32`` (TF32 off), ``tf32`` (CUDA only; the CPU uses the
  fp32 ceiling, :data:`surrobench.records.ceilings._STAND_IN`), ``fp16`` and ``bf16`` tensors.
- :data:`MIN_SIZES` (enforced by ``calibrate``): below them the fixed per-call cost and caches set the rate.
  CPU ``n >= 256``, copy >= 16 MiB; CUDA ``n >= 2048`` (256 output tiles of 128², enough for 132 SMs),
  copy >= 256 MiB (5x a 50 MB L2).
- Timing: :func:`surrobench.execution.timing.measure_round`, median of ``iters`` after ``warmup``, :data:`REPEATS`
  times; the ceiling is the fastest repeat, the spread ``(slowest - fastest) / fastest`` (:class:`Calibration`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch

from surrobench.execution.config import numeric_settings
from surrobench.execution.env import fingerprint
from surrobench.execution.timing import measure_round
from surrobench.records.ceilings import Ceilings
from surrobench.records.run import created_now

#: Defaults: the H200 calibration's sizes on CUDA (docs/sources.md, h200) (8192^3 GEMM, 1 GiB copy); small enough for a laptop CPU otherwise.
DEFAULT_SIZES = {"cuda": {"matmul_n": 8192, "copy_mib": 1024}, "cpu": {"matmul_n": 1024, "copy_mib": 256}}
#: The smallest sizes that measure a ceiling rather than per-call overhead (module docstring).
MIN_SIZES = {"cuda": {"matmul_n": 2048, "copy_mib": 256}, "cpu": {"matmul_n": 256, "copy_mib": 16}}
MATMUL_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
#: What the copy measures, per device.
COPY_LABEL = {"cuda": "device-to-device copy", "cpu": "memory copy"}
#: Medians taken per ceiling: three, so one slow repeat (a burst of another process) shows as spread.
REPEATS = 3


@dataclass(frozen=True)
class Calibration:
    """One calibration: the ceilings and each one's spread over :data:`REPEATS` medians (a fraction)."""

    ceilings: Ceilings
    spreads: dict[str, float]


def _median_ms(step, device: str, warmup: int, iters: int) -> tuple[float, float]:
    """(fastest median of :data:`REPEATS` runs of ``iters`` calls after ``warmup``, ms; their spread)."""
    medians = []
    for _ in range(REPEATS):
        samples = measure_round(step, warmup, iters, device)
        medians.append(
            float(statistics.median(samples.device_ms if samples.device_ms is not None else samples.latency_ms))
        )
    return min(medians), (max(medians) - min(medians)) / min(medians)


def _copy_ms(device: str, n_bytes: int, warmup: int, iters: int) -> tuple[float, float]:
    """ms of one ``n_bytes`` copy on ``device``, with its spread; buffers freed on return."""
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    return _median_ms(lambda i: dst.copy_(src), device, warmup, iters)


def measure_ceilings(device: str, *, matmul_n: int, copy_mib: int, warmup: int = 3, iters: int = 10) -> Calibration:
    """The ceilings of ``device`` (``cpu``/``cuda``) with each one's spread; ``matmul_n`` GEMM size, ``copy_mib`` MiB per call."""
    n_bytes = copy_mib * 2**20
    copy_ms, copy_spread = _copy_ms(device, n_bytes, warmup, iters)
    rates, spreads = {}, {"copy": copy_spread}
    for precision in (p for p in MATMUL_DTYPES if device == "cuda" or p != "tf32"):  # no tf32 on the CPU
        dtype = MATMUL_DTYPES[precision]
        with numeric_settings(precision, cudnn_benchmark=False):
            a = torch.randn(matmul_n, matmul_n, device=device).to(dtype)
            b = torch.randn(matmul_n, matmul_n, device=device).to(dtype)
            ms, spreads[f"matmul:{precision}"] = _median_ms(lambda i: torch.mm(a, b), device, warmup, iters)
        rates[precision] = 2 * matmul_n**3 / (ms / 1e3) / 1e12
    ceilings = Ceilings(
        device_name=fingerprint(device)["device_name"],
        copy_gbps=2 * n_bytes / (copy_ms / 1e3) / 1e9,
        matmul_tflops=rates,
        measured=created_now(),
        note=f"copy {copy_mib} MiB, matmul {matmul_n}^3, fastest of {REPEATS} medians of {iters} after {warmup} warm-up",
    )
    return Calibration(ceilings, spreads)
