"""``surrobench calibrate``: measure the device's roofline ceilings once and store them in the database.

``surrobench diagnose`` reads them by device name (:mod:`surrobench.analysis.roofline`); without them it
falls back to GPU.md's H200 numbers on a GPU and skips the roofline on a CPU.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from surrobench.cli import app
from surrobench.cli.options import DbOpt, DeviceOpt, JsonOpt, check_writable, console, write_json
from surrobench.collect.ceilings import DEFAULT_SIZES, measure_ceilings
from surrobench.errors import UsageError
from surrobench.execution.sweep import resolve_device
from surrobench.results.store import ResultStore, add_ceilings


@app.command()
def calibrate(
    device: str = DeviceOpt, db: Path = DbOpt, json_out: Path = JsonOpt,
    matmul_n: int | None = typer.Option(None, "--matmul-n", help="GEMM size n (n x n @ n x n); default 8192 on "
                                                                 "CUDA, 1024 on CPU."),
    copy_mib: int | None = typer.Option(None, "--copy-mib", help="MiB per device-to-device copy; default 1024 on "
                                                                 "CUDA, 256 on CPU."),
    iters: int = typer.Option(10, "--iters", help="Timed calls per measurement (median)."),
) -> None:  # fmt: skip
    """Measure copy bandwidth and matmul TFLOP/s per precision; store them for the roofline."""
    device = resolve_device(device)
    sizes = DEFAULT_SIZES[device]
    matmul_n = matmul_n or sizes["matmul_n"]
    copy_mib = copy_mib or sizes["copy_mib"]
    if matmul_n < 1 or copy_mib < 1 or iters < 1:
        raise UsageError(f"--matmul-n {matmul_n} --copy-mib {copy_mib} --iters {iters}: all must be >= 1")
    check_writable(json_out, "--json")
    ceilings = measure_ceilings(device, matmul_n=matmul_n, copy_mib=copy_mib, iters=iters)
    with ResultStore(db) as store:
        add_ceilings(store, ceilings)
    table = Table(title=f"ceilings of {ceilings.device_name} ({ceilings.note})")
    table.add_column("ceiling")
    table.add_column("value", justify="right")
    table.add_row("device-to-device copy (read + write)", f"{ceilings.copy_gbps:.1f} GB/s")
    for precision, rate in ceilings.matmul_tflops.items():
        table.add_row(f"matmul {precision}", f"{rate:.2f} TFLOP/s")
        table.add_row(f"ridge point {precision}", f"{ceilings.ridge_flop_per_byte(precision):.1f} FLOP/byte")
    console.print(table)
    console.print(f"stored in {db} for {ceilings.device_name}")
    write_json(json_out, ceilings.to_json())
