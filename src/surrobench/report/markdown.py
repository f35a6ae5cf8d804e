"""Markdown tables: :func:`md_table` and the results table (``show --markdown``)."""

from __future__ import annotations

from collections.abc import Iterable

from surrobench.records.run import ConfigResult
from surrobench.report.cells import result_cells
from surrobench.report.escape import md_escape


def md_table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A GitHub-flavoured markdown table, each cell through :func:`~surrobench.report.escape.md_escape`."""
    header = list(header)
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(md_escape, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


_RESULT_COLUMNS = (
    ("model", "model"),
    ("input shape", "shape"),
    ("B", "batch"),
    ("prec", "precision"),
    ("mode", "mode"),
    ("median ms", "median"),
    ("95% CI of median", "ci"),
    ("P95 ms", "p95"),
    ("device ms", "device"),
    ("cold start ms", "cold_start"),
    ("samples/s", "samples_per_s"),
    ("points/s", "points_per_s"),
    ("peak MiB", "peak_mib"),
    ("status", "status"),
)


def results_markdown(results: Iterable[ConfigResult]) -> str:
    """The results table as markdown, with cold start and the median's CI."""
    results = list(results)
    columns = _RESULT_COLUMNS
    if any("placement" in r.extra for r in results):  # a multi-process run: which rank measured each row
        columns = (("ranks", "ranks"), *columns)
    cells = map(result_cells, results)
    return md_table((title for title, _ in columns), ([c[key] for _, key in columns] for c in cells))
