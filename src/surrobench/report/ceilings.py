"""The table of a device's measured roofline ceilings (``surrobench calibrate``)."""

from __future__ import annotations

from rich.table import Table

from surrobench.analysis.roofline import format_ridge, format_tflops
from surrobench.collect.ceilings import COPY_LABEL
from surrobench.records.ceilings import Ceilings
from surrobench.report.escape import rich_escape
from surrobench.report.fit import plain_table


def ceilings_table(ceilings: Ceilings, device: str) -> Table:
    """Copy GB/s, then per precision TFLOP/s and ridge FLOP/byte ("not usable" if zero or not finite)."""
    rows = [(f"{COPY_LABEL[device]} (read + write)", f"{ceilings.copy_gbps:.1f} GB/s")]
    for precision, rate in ceilings.matmul_tflops.items():
        ridge = "not usable (zero or non-finite ceiling)"
        if not ceilings.unusable(precision):
            ridge = f"{format_ridge(ceilings.ridge_flop_per_byte(precision))} FLOP/byte"
        rows += [(f"matmul {precision}", f"{format_tflops(rate)} TFLOP/s"), (f"ridge point {precision}", ridge)]
    title = rich_escape(f"ceilings of {ceilings.device_name} ({ceilings.note})")
    return plain_table(("ceiling", "value"), rows, title=title, right=("value",))
