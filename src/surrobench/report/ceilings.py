"""The table of a device's measured roofline ceilings (``surrobench calibrate``)."""

from __future__ import annotations

from rich.table import Table

from surrobench.analysis.roofline import format_ridge, format_tflops
from surrobench.collect.ceilings import COPY_LABEL
from surrobench.records.ceilings import Ceilings
from surrobench.report.escape import rich_escape


def ceilings_table(ceilings: Ceilings, device: str) -> Table:
    """Copy GB/s, then per precision TFLOP/s and ridge FLOP/byte ("not usable" if zero or not finite)."""
    table = Table(title=rich_escape(f"ceilings of {ceilings.device_name} ({ceilings.note})"))
    table.add_column("ceiling")
    table.add_column("value", justify="right")
    table.add_row(f"{COPY_LABEL[device]} (read + write)", f"{ceilings.copy_gbps:.1f} GB/s")
    for precision, rate in ceilings.matmul_tflops.items():
        table.add_row(f"matmul {precision}", f"{format_tflops(rate)} TFLOP/s")
        if ceilings.unusable(precision):
            table.add_row(f"ridge point {precision}", "not usable (zero or non-finite ceiling)")
            continue
        table.add_row(f"ridge point {precision}", f"{format_ridge(ceilings.ridge_flop_per_byte(precision))} FLOP/byte")
    return table
