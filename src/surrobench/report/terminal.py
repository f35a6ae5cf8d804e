"""Rich terminal tables for results."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.records.run import ConfigResult
from surrobench.report.cells import failure_text, result_cells
from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table


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
