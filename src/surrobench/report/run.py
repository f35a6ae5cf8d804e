"""One stored run as ``run`` and ``show`` print it: results and scaling tables, terminal and markdown."""

from __future__ import annotations

from rich.table import Table

from surrobench.records.run import RunRecord
from surrobench.report.markdown import results_markdown
from surrobench.report.scaling import scaling_markdown, scaling_table
from surrobench.report.terminal import results_table
from surrobench.results.scaling import scaling_rows

SCALING_TITLE = "scaling: one device (rank 0 alone) vs all ranks together"


def run_tables(record: RunRecord, title: str, width: int | None = None) -> list[Table]:
    """The results table of ``record`` and, for a multi-process run, its scaling table."""
    tables = [results_table(record.results, title=title, width=width)]
    rows = scaling_rows(record.results)
    if rows:
        tables.append(scaling_table(rows, title=SCALING_TITLE))
    return tables


def run_markdown(record: RunRecord) -> str:
    """The results table as markdown and, for a multi-process run, the scaling table after it."""
    rows = scaling_rows(record.results)
    return results_markdown(record.results) + (f"\n{scaling_markdown(rows)}" if rows else "")
