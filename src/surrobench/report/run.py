"""One stored run as ``run`` and ``show`` print it: the results table (terminal and markdown) and, for a
multi-process run, the scaling table."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.records.run import ConfigResult, RunRecord, scaling_rows
from surrobench.report.cells import failure_text, result_cells
from surrobench.report.escape import md_table, rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.report.scaling import scaling_markdown, scaling_table

SCALING_TITLE = "scaling: one device (rank 0 alone) vs all ranks together"
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


def results_table(results: Iterable[ConfigResult], title: str | None = None, width: int | None = None) -> Table:
    """The results table fitted to ``width``; shape as executed; ``title`` is markup."""
    results = list(results)
    # device time and top op only when some config has them (CUDA runs, profiled runs): narrower tables
    with_device = any(r.device_ms for r in results)
    with_top_op = any(r.top_op for r in results)
    with_ranks = any("placement" in r.extra for r in results)
    columns = [(Col("ranks", keep=True), "ranks")] if with_ranks else []
    columns += [
        (Col("model"), "model"),
        (Col("shape", keep=True), "shape"),
        (Col("B", "right", keep=True), "batch"),
        (Col("prec", keep=True), "precision"),
        (Col("mode", keep=True), "mode"),
        (Col("median ms", "right", keep=True), "median"),
        (Col("95% CI", "right", keep=True, minor=6), "median_ci"),
        (Col("P95 ms", "right", keep=True), "p95"),
    ]
    columns += [(Col("device ms", "right", keep=True, minor=1), "device")] if with_device else []
    columns += [
        (Col("samples/s", "right", keep=True, minor=2), "samples_per_s"),
        (Col("points/s", "right", keep=True, minor=4), "points_per_s"),
        (Col("peak MiB", "right", keep=True, minor=3), "peak_mib"),
    ]
    columns += [(Col("top op", minor=5), "top_op")] if with_top_op else []
    rows = []
    for r in results:
        cells = result_cells(r)
        status = r.status if r.status == "ok" else f"[red]{r.status}[/red]: {rich_escape(failure_text(r))}"
        rows.append([rich_escape(cells[key]) for _, key in columns] + [status])
    return fit_table([col for col, _ in columns] + [Col("status")], rows, width, title=title)


def results_markdown(results: Iterable[ConfigResult]) -> str:
    """The results table as markdown, with cold start and the median's CI."""
    results = list(results)
    columns = _RESULT_COLUMNS
    if any("placement" in r.extra for r in results):  # a multi-process run: which rank measured each row
        columns = (("ranks", "ranks"), *columns)
    cells = map(result_cells, results)
    return md_table((title for title, _ in columns), ([c[key] for _, key in columns] for c in cells))


def run_tables(record: RunRecord, title: str, width: int | None = None) -> list[Table]:
    """The results table of ``record`` and, for a multi-process run, its scaling table."""
    tables = [results_table(record.results, title=title, width=width)]
    rows = scaling_rows(record.results)
    if rows:
        tables.append(scaling_table(rows, title=SCALING_TITLE, width=width))
    return tables


def run_markdown(record: RunRecord) -> str:
    """The results table as markdown and, for a multi-process run, the scaling table after it."""
    rows = scaling_rows(record.results)
    return results_markdown(record.results) + (f"\n{scaling_markdown(rows)}" if rows else "")
