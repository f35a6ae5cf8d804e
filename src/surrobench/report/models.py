"""The table of the reference surrogates (``surrobench models``)."""

from __future__ import annotations

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

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
#: Cells a column of rich's default box takes besides its text: one space each side and one border.
_COLUMN_CHROME = 3


def _cells(row: dict[str, object]) -> list[str]:
    return [
        str(row["name"]),
        str(row["paper"]),
        str(row["layout"]),
        f"{row['parameters']:,}",
        str(row["point_kind"]),
        str(row["default_size"]),
    ]


def _narrowest_uncut(rows: list[list[str]]) -> int:
    """The width at which the table wraps every cell at spaces and cuts no word."""
    columns = zip([h for h, _ in _COLUMNS], *rows)
    return 1 + sum(max(len(w) for cell in col for w in cell.split()) + _COLUMN_CHROME for col in columns)


def models_table(rows: list[dict[str, object]], width: int | None = None) -> Table | Group:
    """The rich table of :func:`surrobench.workload.zoo.describe` rows; under 80 ``width`` cells, one block per surrogate."""
    cells = [_cells(row) for row in rows]
    if width is None or width >= _narrowest_uncut(cells):
        table = Table(title=TITLE)
        for header, justify in _COLUMNS:
            table.add_column(header, justify=justify, no_wrap=header == "name")  # the name is what users type
        for row in cells:
            table.add_row(*row)
        return table
    blocks: list = [Text(TITLE, style="italic")]
    for name, *fields in cells:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")  # wraps at spaces; only a word wider than the terminal is broken
        for (header, _), value in zip(_COLUMNS[1:], fields):
            grid.add_row(header, value)
        blocks += [Text(name, style="bold"), Padding(grid, (0, 0, 0, 2))]
    return Group(*blocks)
