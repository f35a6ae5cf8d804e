"""A config's Nsight Compute counters as a compact terminal table and the replay's cost."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from surrobench.report.cells import fmt
from surrobench.report.escape import rich_escape
from surrobench.report.fit import fit_table
from surrobench.report.fit import columns as fit_columns
from surrobench.report.kernel_tables import MAX_KERNEL_ROWS, short_kernel_name

COLUMNS = ("kernel", "class", "ncu us", "DRAM %", "tensor %", "FMA %", "occupancy", "verdict")
_NUMBERS = ("ncu us", "DRAM %", "tensor %", "FMA %", "occupancy")
#: Columns dropped first on a narrow terminal (the highest first).
_MINOR = {"class": 1, "FMA %": 2, "occupancy": 3}


def verdict_cell(kernel: dict) -> str:
    """``memory (DRAM)``, ``latency (L2; grid_too_small)``: bound, limiting unit, latency cause."""
    why = kernel["limiter"] + (f"; {kernel['cause']}" if kernel["cause"] else "")
    return f"{kernel['bound']} ({why})"


def counter_rows(counters: dict, top_n: int = MAX_KERNEL_ROWS) -> list[tuple[str, ...]]:
    """The ``top_n`` longest launches as :data:`COLUMNS` text cells; occupancy ``achieved/theoretical``; ``-`` unknown."""
    longest = sorted(counters["kernels"], key=lambda k: -k["counters"]["duration_ns"])[:top_n]
    rows = []
    for k in longest:
        c = k["counters"]
        occupancy = f"{fmt(c['achieved_occupancy'], '.0%')}/{fmt(c['theoretical_occupancy'], '.0%')}"
        rows.append(
            (
                short_kernel_name(c["name"]),
                k["kernel_class"] or "-",
                f"{c['duration_ns'] / 1e3:.1f}",
                fmt(c["dram_of_peak"], ".0%"),
                fmt(c["tensor_pipe_active"], ".0%"),
                fmt(c["fma_pipe_active"], ".0%"),
                occupancy,
                verdict_cell(k),
            )
        )
    return rows


def cost_line(counters: dict) -> str:
    """What the replay cost: ``counters: 14 kernel launches, 252 passes, 38.2 s under ncu (92.6% ...)``."""
    wall = counters["ncu_wall_s"]
    covered = counters["covered_share"]
    measured = counters.get("measured_launches")
    once = f" ({measured} measured, identical ones credited)" if measured is not None else ""
    cost = f"{len(counters['kernels'])} kernel launches{once}, {counters['passes']} passes, "
    cost += f"{wall:.1f} s under ncu" if wall is not None else "ncu time unknown"
    return f"counters: {cost}" + (f" ({covered:.1%} of kernel time)" if covered is not None else "")


def counters_rich(counters: dict, width: int | None = None, top_n: int = MAX_KERNEL_ROWS, label: str = "") -> Table:
    """The longest launches as a rich table fitted to ``width`` (:func:`~surrobench.report.fit.fit_table`)."""
    columns = fit_columns(COLUMNS, [c for c in COLUMNS if c not in _NUMBERS], _MINOR)
    rows = [list(map(rich_escape, row)) for row in counter_rows(counters, top_n)]
    shown = f"{len(rows)} of {len(counters['kernels'])}" if len(rows) < len(counters["kernels"]) else len(rows)
    title = f"{label + ': ' if label else ''}Nsight Compute counters, {shown} launches (longest first)"
    return fit_table(columns, rows, width, title=rich_escape(title))


def counters_renderables(by_label: dict[str, dict], width: int | None = None) -> list[Table | Text]:
    """Per measured config (``{label: counters JSON}``) its table and cost line."""
    out: list[Table | Text] = []
    for label, counters in by_label.items():
        if counters["problem"] is None and counters["kernels"]:
            out += [counters_rich(counters, width, label=label), Text(cost_line(counters))]
    return out
