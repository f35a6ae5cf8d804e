"""A profiled config's kernel table, compact, from :meth:`surrobench.records.kernels.KernelTable.to_json`."""

from __future__ import annotations

import re

from rich.table import Table

from surrobench.report.escape import cut, rich_escape
from surrobench.report.fit import fit_table
from surrobench.report.fit import columns as fit_columns

#: Widest a shortened kernel name gets, in characters (cut with an ellipsis beyond).
NAME_WIDTH = 64
#: Kernel rows shown at most, whatever ``top_n`` the op table takes: the view stays a glance.
MAX_KERNEL_ROWS = 10
_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)|\b[A-Za-z_]\w*)::")
_COLUMNS = ("kernel", "class", "share", "device us", "calls", "op", "module")
#: Columns dropped first on a narrow terminal (the highest first).
_MINOR = {"module": 4, "calls": 3, "device us": 2}


def short_kernel_name(name: str, width: int = NAME_WIDTH) -> str:
    """A kernel name for a cell, cut to ``width``: no namespaces, return type or parameters, template arguments kept
    (``vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>``); for reading, not a join key
    (:func:`surrobench.records.counters.function_name` is)."""
    text = _QUALIFIER.sub("", name).strip()
    depth, start, end = 0, 0, len(text)
    for i, ch in enumerate(text):
        depth += (ch == "<") - (ch == ">" and depth > 0)
        if depth == 0 and ch == "(" and i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_>"):
            end = i  # the parameter list, right after the name
            break
    if end < len(text):  # a function: drop the return type (``void``) before its name
        depth = 0
        for i, ch in enumerate(text[:end]):
            depth += (ch == "<") - (ch == ">" and depth > 0)
            if depth == 0 and ch == " ":
                start = i + 1
    return cut(text[start:end].strip() or text, width)


def kernel_rows(table: dict, top_n: int = MAX_KERNEL_ROWS) -> list[tuple[str, ...]]:
    """The first ``top_n`` kernel rows as :data:`_COLUMNS` cells; a lost op shows its origin."""
    rows = []
    for k in table["kernels"][:top_n]:
        op = k["op"] if k["op"] is not None else f"- ({k['origin']})"
        module = k["module"] if k["module"] is not None else "-"
        cells = (short_kernel_name(k["name"]), k["kernel_class"], f"{k['share']:.1%}", f"{k['device_us']:.1f}")
        rows.append((*cells, str(k["calls"]), op, module))
    return rows


def class_line(table: dict) -> str:
    """``kernel classes: gemm 61.2%, attention 20.0%, ...`` (the nonzero class shares, largest first)."""
    shares = ", ".join(f"{c} {s:.1%}" for c, s in table["class_shares"].items() if s > 0)
    return f"kernel classes: {shares or 'none'}"


def note_lines(table: dict) -> list[str]:
    """One line per attribution note: its kind, the op it is about, where the kernels went (or why the mapping
    is lost), how many and their µs."""
    lines = []
    for n in table["notes"]:
        about = f" {n['op']}" if n["op"] else ""
        into = f" -> {n['into']}" if n["into"] else ""
        lines.append(f"{n['kind']}{about}{into}: {n['kernels']} kernels, {n['device_us']:.1f} us")
    return lines


def kernel_table_rich(table: dict, width: int | None = None, top_n: int = MAX_KERNEL_ROWS) -> Table:
    """The top kernels as a rich table fitted to ``width``, titled with the class shares."""
    numbers = ("share", "device us", "calls")
    columns = fit_columns(_COLUMNS, [c for c in _COLUMNS if c not in numbers], _MINOR)
    rows = [list(map(rich_escape, row)) for row in kernel_rows(table, top_n)]
    title = f"top kernels of {len(table['kernels'])} rows ({table['total_us'] / table['active_steps']:.1f} us/step)"
    return fit_table(columns, rows, width, title=rich_escape(f"{title}\n{class_line(table)}"))
