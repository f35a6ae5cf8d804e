"""A profiled config's kernel table, compact, from :meth:`surrobench.records.kernels.KernelTable.to_json`, and its
Nsight Compute counters as a compact terminal table with the replay's cost."""

from __future__ import annotations

import re

from rich.table import Table
from rich.text import Text

from surrobench.report.cells import fmt
from surrobench.report.escape import cut, rich_escape
from surrobench.report.fit import columns as fit_columns, fit_table

#: Widest a shortened kernel name gets, in characters (cut with an ellipsis beyond).
NAME_WIDTH = 64
#: Kernel rows shown at most, whatever ``top_n`` the op table takes: the view stays a glance.
MAX_KERNEL_ROWS = 10
_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)|\b[A-Za-z_]\w*)::")
_COLUMNS = ("kernel", "class", "share", "device us", "calls", "op", "module")
#: Columns dropped first on a narrow terminal (the highest first).
_MINOR = {"module": 4, "calls": 3, "device us": 2}


def short_kernel_name(name: str) -> str:
    """A kernel name for a cell, cut to :data:`NAME_WIDTH`: no namespaces, return type or parameters, template arguments kept
    (``vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>``); for reading, not a join key
    (:func:`surrobench.records.counters.function_name` is)."""
    text = _QUALIFIER.sub("", name).strip()
    depth, start, end, named = 0, 0, len(text), 0
    for i, ch in enumerate(text):
        depth += (ch == "<") - (ch == ">" and depth > 0)
        if depth == 0 and ch == " ":
            named = i + 1  # after the last top-level space: a function's return type (``void``) comes before
        elif depth == 0 and ch == "(" and i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_>"):
            start, end = named, i  # a function: its name, between its return type and its parameter list
            break
    return cut(text[start:end].strip() or text, NAME_WIDTH)


def kernel_rows(table: dict) -> list[tuple[str, ...]]:
    """The first :data:`MAX_KERNEL_ROWS` kernel rows as :data:`_COLUMNS` cells; a lost op shows its origin."""
    rows = []
    for k in table["kernels"][:MAX_KERNEL_ROWS]:
        op = k["op"] if k["op"] is not None else f"- ({k['origin']})"
        module = k["module"] if k["module"] is not None else "-"
        cells = (short_kernel_name(k["name"]), k["kernel_class"], f"{k['share']:.1%}", f"{k['device_us']:.1f}")
        rows.append((*cells, str(k["calls"]), op, module))
    return rows


def note_lines(table: dict) -> list[str]:
    """One line per attribution note: its kind, the op it is about, where the kernels went (or why the mapping
    is lost), how many and their µs."""
    lines = []
    for n in table["notes"]:
        about = f" {n['op']}" if n["op"] else ""
        into = f" → {n['into']}" if n["into"] else ""
        lines.append(f"{n['kind']}{about}{into}: {n['kernels']} kernels, {n['device_us']:.1f} us")
    return lines


def kernel_table_rich(table: dict, width: int | None = None) -> Table:
    """The top kernels as a rich table fitted to ``width``, titled with the class shares."""
    numbers = ("share", "device us", "calls")
    columns = fit_columns(_COLUMNS, [c for c in _COLUMNS if c not in numbers], _MINOR)
    rows = [list(map(rich_escape, row)) for row in kernel_rows(table)]
    title = f"top kernels of {len(table['kernels'])} rows ({table['total_us'] / table['active_steps']:.1f} us/step)"
    shares = ", ".join(f"{c} {s:.1%}" for c, s in table["class_shares"].items() if s > 0)  # largest first
    return fit_table(columns, rows, width, title=rich_escape(f"{title}\nkernel classes: {shares or 'none'}"))


COUNTER_COLUMNS = ("kernel", "class", "ncu us", "DRAM %", "tensor %", "FMA %", "occupancy", "verdict")
_NUMBERS = ("ncu us", "DRAM %", "tensor %", "FMA %", "occupancy")
#: Columns dropped first on a narrow terminal (the highest first).
_COUNTER_MINOR = {"class": 1, "FMA %": 2, "occupancy": 3}


def counter_rows(counters: dict) -> list[tuple[str, ...]]:
    """The :data:`MAX_KERNEL_ROWS` longest launches as :data:`COUNTER_COLUMNS` text cells; occupancy ``achieved/theoretical``; ``-`` unknown."""
    longest = sorted(counters["kernels"], key=lambda k: -k["counters"]["duration_ns"])[:MAX_KERNEL_ROWS]
    rows = []
    for k in longest:
        c = k["counters"]
        rows.append(
            (
                short_kernel_name(c["name"]),
                k["kernel_class"] or "-",
                f"{c['duration_ns'] / 1e3:.1f}",
                fmt(c["dram_of_peak"], ".0%"),
                fmt(c["tensor_pipe_active"], ".0%"),
                fmt(c["fma_pipe_active"], ".0%"),
                f"{fmt(c['achieved_occupancy'], '.0%')}/{fmt(c['theoretical_occupancy'], '.0%')}",
                f"{k['bound']} ({'; '.join(filter(None, (k['limiter'], k['cause'])))})",  # latency (L2; grid_too_small)
            )
        )
    return rows


def counters_renderables(by_label: dict[str, dict], width: int | None = None) -> list[Table | Text]:
    """Per measured config (``{label: counters JSON}``) its longest launches as a rich table fitted to ``width``
    (:func:`~surrobench.report.fit.fit_table`) and what the replay cost (``counters: 14 kernel launches, 252 passes,
    38.2 s under ncu (92.6% of kernel time)``)."""
    columns = fit_columns(COUNTER_COLUMNS, [c for c in COUNTER_COLUMNS if c not in _NUMBERS], _COUNTER_MINOR)
    out: list[Table | Text] = []
    for label, counters in by_label.items():
        if counters["problem"] is not None or not counters["kernels"]:
            continue
        rows = [list(map(rich_escape, row)) for row in counter_rows(counters)]
        shown = f"{len(rows)} of {len(counters['kernels'])}" if len(rows) < len(counters["kernels"]) else len(rows)
        title = f"{label + ': ' if label else ''}Nsight Compute counters, {shown} launches (longest first)"
        wall = counters["ncu_wall_s"]
        covered = counters["covered_share"]
        measured = counters.get("measured_launches")
        once = f" ({measured} measured, identical ones credited)" if measured is not None else ""
        cost = f"{len(counters['kernels'])} kernel launches{once}, {counters['passes']} passes, "
        cost += f"{wall:.1f} s under ncu" if wall is not None else "ncu time unknown"
        cost += f" ({covered:.1%} of kernel time)" if covered is not None else ""
        out += [fit_table(columns, rows, width, title=rich_escape(title)), Text(f"counters: {cost}")]
    return out
