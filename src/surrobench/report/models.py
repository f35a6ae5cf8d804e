"""The table of the reference surrogates (``surrobench models``)."""

from __future__ import annotations

from rich.table import Table

from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table

TITLE = "surrobench reference surrogates"
#: Column headers and their alignment, in the order of a :func:`surrobench.workload.zoo.describe` row.
_COLUMNS = (
    ("name", "left"),
    ("paper", "left"),
    ("layout", "left"),
    ("parameters", "right"),
    ("point kind", "left"),
    ("typical N", "right"),
)


def models_table(rows: list[dict[str, object]], width: int | None = None) -> Table:
    """The rich table of :func:`surrobench.workload.zoo.describe` rows, fitted to ``width`` cells
    (:func:`~surrobench.report.fit.fit_table`: the name and the numbers whole, text wrapped at spaces; too narrow
    for that, one ``field  value`` block per surrogate)."""
    cols = [Col(header, justify, keep=header in ("name", "parameters", "typical N")) for header, justify in _COLUMNS]
    keys = ("name", "paper", "layout", "parameters", "point_kind", "default_size")
    cells = [[rich_escape(f"{r[k]:,}" if k == "parameters" else str(r[k])) for k in keys] for r in rows]
    return fit_table(cols, cells, width, title=TITLE)
