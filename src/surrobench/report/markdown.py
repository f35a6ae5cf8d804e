"""Markdown tables: :func:`md_table`."""

from __future__ import annotations

from collections.abc import Iterable

from surrobench.report.escape import md_escape


def md_table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A GitHub-flavoured markdown table, each cell through :func:`~surrobench.report.escape.md_escape`."""
    header = list(header)
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(md_escape, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"
