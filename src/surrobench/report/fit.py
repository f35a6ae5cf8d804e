"""Tables that fit the terminal without cutting a number or an id (rich cuts ``382.…`` or breaks ``severit y``):
:func:`fit_table` never wraps ``keep`` columns, wraps text at spaces, drops ``minor`` columns (named in the
caption), and last stacks rows as ``field  value`` lines."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from rich import box
from rich.table import Table
from rich.text import Text

from surrobench.report.escape import rich_escape

#: Rich's cell padding (one space each side) and the vertical rule between cells.
_PER_COLUMN = 3
#: Longest word of a free-text column kept whole; longer ones may fold.
_MAX_WORD_CELLS = 32
#: Widest a stacked table's field names get (longer wrap at spaces): ``P99 ms [95% CI]``, ``speedup @ error`` fit.
_STACKED_FIELD_WIDTH = 16


@dataclass(frozen=True)
class Col:
    """One column: ``keep`` never wrapped or cut; ``minor`` > 0 may be dropped (highest first)."""

    header: str
    justify: str = "left"
    keep: bool = False
    minor: int = 0


def columns(
    headers: Sequence[str], left: Collection[str] = (), minor: dict[str, int] | None = None, wrap=None
) -> list[Col]:
    """:class:`Col` per header: ``left`` ones left-justified, the rest right; kept whole unless in ``wrap``
    (default ``left``); ``minor``: header -> drop order."""
    wrap = left if wrap is None else wrap
    minor = minor or {}
    return [Col(h, "left" if h in left else "right", keep=h not in wrap, minor=minor.get(h, 0)) for h in headers]


def _need(col: Col, cells: list[str]) -> int:
    """``col``'s narrowest width: kept, its widest cell and header; text, its longest word."""
    if col.keep:
        return _natural(col, cells)
    longest = max((Text(w).cell_len for c in cells for w in Text.from_markup(c).plain.split()), default=0)
    return max(max((len(word) for word in col.header.split()), default=1), min(longest, _MAX_WORD_CELLS))


def _natural(col: Col, cells: list[str]) -> int:
    """The width ``col`` takes unwrapped: its header or its widest line."""
    return max([len(col.header), *(Text.from_markup(line).cell_len for c in cells for line in c.split("\n"))])


def _share(spare: int, need: list[int], natural: list[int]) -> list[int]:
    """Widths from ``need`` with ``spare`` cells given towards ``natural``, least-wanting columns first."""
    widths = list(need)
    wants = sorted(range(len(need)), key=lambda i: natural[i] - need[i])
    for n, i in enumerate(wants):
        give = min(max(natural[i] - need[i], 0), spare // (len(wants) - n))
        widths[i] += give
        spare -= give
    return widths


def plain_table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    title: str | None = None,
    caption: str | None = None,
    right: Collection[str] | bool = (),
    escape: bool = False,
    width: int | None = None,
    **options,
) -> Table:
    """A rich table of ``rows`` as rich wraps them: ``right`` columns (True: all) right-justified, the others left;
    ``escape``: each cell through :func:`rich_escape`; ``options``: every column's (``overflow="fold"``). Given a
    ``width``, :func:`fit_table` fits it (every column wraps at spaces; too narrow, stacked), never rich, which cuts
    or folds a word to fit."""
    rows = [list(map(rich_escape, row)) if escape else list(row) for row in rows]
    left = [h for h in header if not (right is True or h in right)]
    if width is not None:
        return fit_table(columns(header, left, wrap=header), rows, width, title=title, caption=caption)
    table = Table(title=title, caption=caption)
    for col in header:
        table.add_column(col, justify="left" if col in left else "right", **options)
    for row in rows:
        table.add_row(*row)
    return table


def fit_table(
    columns: Sequence[Col],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A rich table of escaped ``rows`` fitting ``width`` cells (None: no limit) without cutting kept cells."""
    keep = list(range(len(columns)))
    need = [_need(col, [row[i] for row in rows]) for i, col in enumerate(columns)]

    def total() -> int:
        return sum(need[i] for i in keep) + _PER_COLUMN * len(keep) + 1

    if width is not None:
        minors = sorted((i for i, c in enumerate(columns) if c.minor), key=lambda i: -columns[i].minor)
        while total() > width and minors:
            keep.remove(minors.pop(0))
        if total() > width:  # one ``field  value`` line per cell, rows separated by a rule
            table = Table(title=title, caption=caption, show_header=False, box=box.SIMPLE_HEAD)
            longest = max((len(col.header) for col in columns), default=1)  # a field name on one line when it fits
            table.add_column("field", style="bold", max_width=min(_STACKED_FIELD_WIDTH, longest))
            table.add_column("value", overflow="fold")
            for row in rows:
                for j, (col, cell) in enumerate(zip(columns, row)):
                    table.add_row(col.header, cell, end_section=j == len(columns) - 1)
            return table
        dropped = [col.header for i, col in enumerate(columns) if i not in keep]
        if dropped:
            shown = f"not shown at {width} columns: {', '.join(dropped)} (a wider terminal or --json shows them)"
            caption = "\n".join(filter(None, (caption, rich_escape(shown))))
    natural = [_natural(columns[i], [row[i] for row in rows]) for i in keep]
    sizes = None if width is None else _share(width - total(), [need[i] for i in keep], natural)
    table = Table(title=title, caption=caption)
    for n, i in enumerate(keep):
        col = columns[i]
        table.add_column(
            col.header,
            justify=col.justify,
            no_wrap=col.keep,
            min_width=need[i],
            width=None if sizes is None else sizes[n],
            overflow="ellipsis" if col.keep else "fold",  # fold: only a word over _MAX_WORD_CELLS
        )
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table
