"""Measure a device's roofline ceilings once: copy bandwidth and matmul rate per precision.

- Bandwidth: ``dst.copy_(src)`` of ``copy_bytes`` on the device, counting read + write bytes
  (``2 * copy_bytes / time``), the convention of the H200's 4184 GB/s (docs/sources.md, h200). On a GPU a device-to-device
  copy, on the CPU a host memory copy (:data:`COPY_LABEL`).
- Matmul: ``torch.mm`` of two ``n x n`` matrices, ``2 n^3`` FLOPs, per precision: ``fp32`` with TF32 off,
  ``tf32`` with TF32 on, ``fp16`` and ``bf16`` tensors (not autocast: the ceiling of the math itself).
  ``tf32`` is measured on CUDA only: the TF32 switches are CUDA's (``torch.backends.cuda.matmul``,
  ``torch.backends.cudnn``), a CPU matmul is the same IEEE fp32 math either way, so a CPU ``tf32`` row would
  only be a second, noisier fp32 measurement; the roofline of a tf32 config on the CPU uses the fp32 ceiling
  (:data:`surrobench.records.ceilings._STAND_IN`).

Minimum sizes (:data:`MIN_SIZES`, enforced by ``surrobench calibrate``): below them a call is too short for its
time to be the work's. Each timed call pays a fixed cost -- a kernel launch and event record on a GPU (~5-10
us), the eager dispatch and the OpenMP fork/join on the CPU (~5-20 us) -- and smaller data stays in cache:

- CPU: ``n >= 256`` (33.5 MFLOP: ~0.3 ms at 0.1 TFLOP/s, 34 us -- still a few times the fixed cost -- at 1 TFLOP/s) and
  ``copy >= 16 MiB`` (32 MiB moved: ~1.5 ms at 20 GB/s; src + dst exceed a core's L2 many times over; a CPU
  whose L3 holds 32 MiB still reports cache bandwidth -- the default, 256 MiB, is the one to trust).
- CUDA: ``n >= 2048`` (17 GFLOP: ~22 us at the H200's 782 TFLOP/s bf16, and 2048^2 / (128 x 128) = 256
  output tiles, enough to fill the 132 SMs; a 1024^3 GEMM is 2.7 us, launch-sized, on 64 tiles) and
  ``copy >= 256 MiB`` (512 MiB moved: ~130 us at 4.2 TB/s; the source alone is 5x the H200's 50 MB L2).

With a 1-element GEMM or a 1 MiB copy the "ceiling" is the fixed cost, a rate orders of magnitude too low,
and every op of a workload would then sit far above it.

Timing reuses the benchmark's own loop (:func:`surrobench.execution.timing.time_loop`): CUDA-event device
time on a GPU, the host clock on the CPU; the median of ``iters`` synchronized calls after ``warmup``, taken
:data:`REPEATS` times per ceiling. The ceiling is the fastest repeat (another process can only slow a repeat
down), and the repeats' spread, ``(slowest - fastest) / fastest`` of their medians, says whether the
measurement can be trusted (:class:`Calibration`, checked by :func:`surrobench.api.calibrate.calibrate`).
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass

import torch

from surrobench.execution.config import numeric_settings
from surrobench.execution.env import fingerprint
from surrobench.execution.timing import time_loop, warm_up
from surrobench.records.ceilings import Ceilings

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
    """What one calibration measured: the ceilings, and per ceiling (``"copy"``, ``"matmul:fp32"``, ...) the
    spread of its :data:`REPEATS` medians, ``(slowest - fastest) / fastest`` (a fraction)."""

    ceilings: Ceilings
    spreads: dict[str, float]


def matmul_precisions(device: str) -> tuple[str, ...]:
    """The precisions whose matmul rate is measured on ``device``: no ``tf32`` on the CPU (module docstring)."""
    return tuple(p for p in MATMUL_DTYPES if device == "cuda" or p != "tf32")


def _median_ms(step, device: str, warmup: int, iters: int) -> tuple[float, float]:
    """(fastest median of :data:`REPEATS` runs of ``iters`` calls after ``warmup``, ms; their spread)."""
    medians = []
    for _ in range(REPEATS):
        warm_up(step, warmup, device)
        samples = time_loop(step, iters, device)
        medians.append(
            float(statistics.median(samples.device_ms if samples.device_ms is not None else samples.latency_ms))
        )
    return min(medians), (max(medians) - min(medians)) / min(medians)


def _copy_ms(device: str, n_bytes: int, warmup: int, iters: int) -> tuple[float, float]:
    """Time of one ``n_bytes`` copy on ``device``, ms, with its spread (:func:`_median_ms`); the buffers are
    freed on return."""
    src = torch.empty(n_bytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    return _median_ms(lambda i: dst.copy_(src), device, warmup, iters)


def measure_ceilings(device: str, *, matmul_n: int, copy_mib: int, warmup: int = 3, iters: int = 10) -> Calibration:
    """The ceilings of ``device`` (``cpu`` or ``cuda``), named by the device name of the environment
    fingerprint, with the spread of each one's repeats. ``matmul_n``: GEMM size; ``copy_mib``: bytes copied
    per call, MiB."""
    n_bytes = copy_mib * 2**20
    copy_ms, copy_spread = _copy_ms(device, n_bytes, warmup, iters)
    rates, spreads = {}, {"copy": copy_spread}
    for precision in matmul_precisions(device):
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
        measured=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        note=f"copy {copy_mib} MiB, matmul {matmul_n}^3, fastest of {REPEATS} medians of {iters} after {warmup} warm-up",
    )
    return Calibration(ceilings, spreads)
