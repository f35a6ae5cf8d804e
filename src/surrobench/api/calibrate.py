"""``calibrate``: measure a device's roofline ceilings once and store them for this machine
(``surrobench calibrate``).

The ceilings are kept in the user's cache folder, per host and device, per thread count on a CPU
(:mod:`surrobench.results.ceilings`), where ``diagnose`` reads them whatever its database. Sizes under
:data:`surrobench.collect.ceilings.MIN_SIZES` are refused before anything is measured or stored: they time
the per-call overhead (launch or dispatch) and caches, not a ceiling, and would replace a good calibration.
"""

from __future__ import annotations

from pathlib import Path

import torch

from surrobench.collect.ceilings import DEFAULT_SIZES, MIN_SIZES, measure_ceilings
from surrobench.errors import UsageError
from surrobench.execution.sweep import resolve_device
from surrobench.records.ceilings import Ceilings
from surrobench.results.ceilings import save_ceilings

_WHY_MIN = "smaller sizes time the per-call overhead (launch/dispatch) and caches, not the ceiling"


def check_sizes(device: str, matmul_n: int | None, copy_mib: int | None, iters: int) -> None:
    """Reject non-positive values and sizes under the device's minimum; each error names only its flag.

    Raises:
        UsageError: the first offending parameter, with the value given.
    """
    for name, value in (("matmul_n", matmul_n), ("copy_mib", copy_mib), ("iters", iters)):
        if value is not None and value < 1:
            raise UsageError.bad(name, f"{value}: must be a positive integer")
    low = MIN_SIZES[device]
    if matmul_n is not None and matmul_n < low["matmul_n"]:
        raise UsageError.bad("matmul_n", f"{matmul_n}: must be >= {low['matmul_n']} on {device}: {_WHY_MIN}")
    if copy_mib is not None and copy_mib < low["copy_mib"]:
        raise UsageError.bad("copy_mib", f"{copy_mib}: must be >= {low['copy_mib']} on {device}: {_WHY_MIN}")


def calibrate(
    device: str = "auto", *, matmul_n: int | None = None, copy_mib: int | None = None, iters: int = 10
) -> tuple[Ceilings, Path]:
    """Measure the copy bandwidth (GB/s) and the matmul rate per precision (TFLOP/s) of ``device`` (``cpu``,
    ``cuda`` or ``auto``), store them for this machine and return them with the file they are stored in.

    ``matmul_n``: GEMM size n (n x n @ n x n); ``copy_mib``: MiB per copy; None takes the device's default
    (:data:`surrobench.collect.ceilings.DEFAULT_SIZES`). ``iters``: timed calls per measurement (median).

    Raises:
        UsageError: a non-positive value, a size under the device's minimum, no GPU for cuda, or a cache
            folder that cannot be written.
    """
    device = resolve_device(device)
    check_sizes(device, matmul_n, copy_mib, iters)
    sizes = DEFAULT_SIZES[device]
    ceilings = measure_ceilings(
        device,
        matmul_n=sizes["matmul_n"] if matmul_n is None else matmul_n,
        copy_mib=sizes["copy_mib"] if copy_mib is None else copy_mib,
        iters=iters,
    )
    return ceilings, save_ceilings(ceilings, torch.get_num_threads() if device == "cpu" else None)
