"""``surrobench calibrate``: one call of :func:`surrobench.api.calibrate.calibrate` (the device's roofline ceilings,
stored for this machine: :mod:`surrobench.results.ceilings`; ``diagnose`` reads them whatever its ``--db``).
``--json`` writes ``surrobench/ceilings-v1``: the stored fields plus ``schema``."""

from __future__ import annotations

from pathlib import Path

from surrobench.cli.app import app
from surrobench.cli.options import DeviceOpt, JsonOpt, console, count_option, flag, write_json
from surrobench.report.escape import rich_escape


@app.command()
def calibrate(
    device: str = DeviceOpt,
    json_out: Path = JsonOpt,
    matmul_n: int | None = count_option(
        None,
        "--matmul-n",
        help="GEMM size n (n x n @ n x n); default 8192 on CUDA, 1024 on CPU; at least 2048 on CUDA, 256 on CPU.",
    ),
    copy_mib: int | None = count_option(
        None,
        "--copy-mib",
        help="MiB per copy (device-to-device, or host memory "
        "on CPU); default 1024 on CUDA, 256 on CPU; at "
        "least 256 on CUDA, 16 on CPU.",
    ),
    iters: int = count_option(10, "--iters", help="Timed calls per measurement (median)."),
    threads: int | None = count_option(
        None,
        "--threads",
        help="CPU: torch.set_num_threads while measuring; the ceilings are stored for this thread count, the one "
        "diagnose --threads N reads. Default: torch's own count.",
    ),
    force: bool = flag(False, "--force", help="Store the ceilings even on a busy host or when their repeats disagree."),
) -> None:
    """Measure copy bandwidth and matmul TFLOP/s per precision; store them for the roofline."""
    from torch import get_num_threads as torch_threads

    from surrobench.api.calibrate import calibrate as calibrate_device, resolve_device
    from surrobench.report.ceilings import ceilings_table

    device = resolve_device(device)
    ceilings, where = calibrate_device(
        device, matmul_n=matmul_n, copy_mib=copy_mib, iters=iters, threads=threads, force=force
    )
    console.print(ceilings_table(ceilings, device))
    at = f" at {threads or torch_threads()} thread(s)" if device == "cpu" else ""
    console.print(rich_escape(f"stored in {where} for {ceilings.device_name}{at}"))
    write_json(json_out, ceilings.document())
