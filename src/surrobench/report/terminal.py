"""Rich terminal tables for results."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.report.cells import failure_text, result_cells
from surrobench.report.escape import rich_escape
from surrobench.results.schema import ConfigResult


def results_table(results: Iterable[ConfigResult], title: str | None = None) -> Table:
    """Model, shape, batch, precision, mode, median, P95, throughput, peak memory, status (issue 2).

    The shape column is the executed primary input as run (batch included where the input has one).
    """
    results = list(results)
    # device time and top op only when some config has them (CUDA runs, profiled runs): narrower tables
    with_device = any(r.device_ms for r in results)
    with_top_op = any(r.top_op for r in results)
    with_ranks = any("placement" in r.extra for r in results)
    table = Table(title=title)  # the caller's markup; names in it escaped with rich_escape
    columns = [("ranks", "left")] if with_ranks else []
    columns += [("model", "left"), ("shape", "left"), ("B", "right"), ("prec", "left"), ("mode", "left"),
               ("median ms", "right"), ("P95 ms", "right")]  # fmt: skip
    columns += [("device ms", "right")] if with_device else []
    columns += [("samples/s", "right"), ("points/s", "right"), ("peak MiB", "right")]
    columns += [("top op", "left")] if with_top_op else []
    for name, justify in [*columns, ("status", "left")]:
        table.add_column(name, justify=justify)
    keys = ["ranks"] * with_ranks + ["model", "shape", "batch", "precision", "mode", "median", "p95"]
    keys += ["device"] * with_device
    keys += ["samples_per_s", "points_per_s", "peak_mib"] + ["top_op"] * with_top_op
    for r in results:
        cells = result_cells(r)
        status = r.status if r.status == "ok" else f"[red]{r.status}[/red]: {rich_escape(failure_text(r))}"
        table.add_row(*[rich_escape(cells[k]) for k in keys], status)
    return table
