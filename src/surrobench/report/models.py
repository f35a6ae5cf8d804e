"""The table of the reference surrogates (``surrobench models``)."""

from __future__ import annotations

from rich.table import Table

#: Column headers and their alignment, in the order of a :func:`surrobench.workload.zoo.describe` row.
_COLUMNS = (
    ("name", "left"),
    ("paper", "left"),
    ("layout", "left"),
    ("parameters", "right"),
    ("point kind", "left"),
    ("typical N", "right"),
)


def models_table(rows: list[dict[str, object]]) -> Table:
    """The rich table of :func:`surrobench.workload.zoo.describe` rows: name, paper, layout, parameter count
    (thousands separated), point kind, default size."""
    table = Table(title="surrobench reference surrogates")
    for header, justify in _COLUMNS:
        table.add_column(header, justify=justify, no_wrap=header == "name")  # the name is what users type
    for row in rows:
        table.add_row(
            str(row["name"]),
            str(row["paper"]),
            str(row["layout"]),
            f"{row['parameters']:,}",
            str(row["point_kind"]),
            str(row["default_size"]),
        )
    return table
