"""``surrobench calibrate``: measure the device's roofline ceilings once and store them for this machine
(:mod:`surrobench.results.ceilings`: the user's cache folder, per host and device, per thread count on a CPU).

``surrobench diagnose`` reads them there, whatever its ``--db`` (:mod:`surrobench.analysis.roofline`);
without them it falls back to the built-in H200 numbers on a GPU and skips the roofline on a CPU.

Sizes under :data:`surrobench.collect.ceilings.MIN_SIZES` are refused (a usage error, before anything is
measured or stored): they measure per-call overhead, not a ceiling, and would replace a good calibration.
On the CPU the copy is a host memory copy and no ``tf32`` rate is measured (:mod:`surrobench.collect.ceilings`).
``--json`` writes ``surrobench/ceilings-v1``: the stored fields plus ``schema``.
"""

from __future__ import annotations

from pathlib import Path

import torch
import typer

from surrobench.cli.app import app
from surrobench.cli.options import DeviceOpt, JsonOpt, check_writable, console, write_json
from surrobench.collect.ceilings import DEFAULT_SIZES, MIN_SIZES, measure_ceilings
from surrobench.errors import UsageError
from surrobench.execution.sweep import resolve_device
from surrobench.records import schemas
from surrobench.report.ceilings import ceilings_table
from surrobench.report.escape import rich_escape
from surrobench.results.ceilings import save_ceilings

_WHY_MIN = "smaller sizes time the per-call overhead (launch/dispatch) and caches, not the ceiling"


def check_sizes(device: str, matmul_n: int | None, copy_mib: int | None, iters: int) -> None:
    """Reject non-positive values and sizes under the device's minimum; each error names only its flag.

    Raises:
        UsageError: the first offending flag, with the value given.
    """
    for flag, value in (("--matmul-n", matmul_n), ("--copy-mib", copy_mib), ("--iters", iters)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: must be a positive integer")
    low = MIN_SIZES[device]
    if matmul_n is not None and matmul_n < low["matmul_n"]:
        raise UsageError(f"--matmul-n {matmul_n}: must be >= {low['matmul_n']} on {device}: {_WHY_MIN}")
    if copy_mib is not None and copy_mib < low["copy_mib"]:
        raise UsageError(f"--copy-mib {copy_mib}: must be >= {low['copy_mib']} on {device}: {_WHY_MIN}")


@app.command()
def calibrate(
    device: str = DeviceOpt,
    json_out: Path = JsonOpt,
    matmul_n: int | None = typer.Option(
        None,
        "--matmul-n",
        help="GEMM size n (n x n @ n x n); default 8192 on CUDA, 1024 on CPU; at least 2048 on CUDA, 256 on CPU.",
    ),
    copy_mib: int | None = typer.Option(
        None,
        "--copy-mib",
        help="MiB per copy (device-to-device, or host memory "
        "on CPU); default 1024 on CUDA, 256 on CPU; at "
        "least 256 on CUDA, 16 on CPU.",
    ),
    iters: int = typer.Option(10, "--iters", help="Timed calls per measurement (median)."),
) -> None:
    """Measure copy bandwidth and matmul TFLOP/s per precision; store them for the roofline."""
    device = resolve_device(device)
    check_sizes(device, matmul_n, copy_mib, iters)
    sizes = DEFAULT_SIZES[device]
    matmul_n = sizes["matmul_n"] if matmul_n is None else matmul_n
    copy_mib = sizes["copy_mib"] if copy_mib is None else copy_mib
    check_writable(json_out, "--json")
    ceilings = measure_ceilings(device, matmul_n=matmul_n, copy_mib=copy_mib, iters=iters)
    where = save_ceilings(ceilings, torch.get_num_threads() if device == "cpu" else None)
    console.print(ceilings_table(ceilings, device))
    console.print(rich_escape(f"stored in {where} for {ceilings.device_name}"))
    write_json(json_out, {"schema": schemas.CEILINGS, **ceilings.to_json()})
