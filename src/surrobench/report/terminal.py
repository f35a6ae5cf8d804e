"""Rich terminal tables for results."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.results.schema import ConfigResult

_BYTES_PER_MIB = 1024**2


def format_rate(per_s: float | None) -> str:
    """``12.3k/s``-style rate with an SI prefix; ``-`` when unknown."""
    if per_s is None:
        return "-"
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_s >= factor:
            return f"{per_s / factor:.3g}{prefix}/s"
    return f"{per_s:.3g}/s"


def results_table(results: Iterable[ConfigResult], title: str | None = None) -> Table:
    """Model, shape, batch, precision, mode, median, P95, throughput, peak memory, status (issue 2).

    The shape column is the executed primary input as run (batch included where the input has one).
    """
    results = list(results)
    # device time and top op only when some config has them (CUDA runs, profiled runs): narrower tables
    with_device = any(r.device_ms for r in results)
    with_top_op = any(r.top_op for r in results)
    table = Table(title=title)
    columns = [("model", "left"), ("shape", "left"), ("B", "right"), ("prec", "left"), ("mode", "left"),
               ("median ms", "right"), ("P95 ms", "right")]  # fmt: skip
    columns += [("device ms", "right")] if with_device else []
    columns += [("samples/s", "right"), ("points/s", "right"), ("peak MiB", "right")]
    columns += [("top op", "left")] if with_top_op else []
    for name, justify in [*columns, ("status", "left")]:
        table.add_column(name, justify=justify)
    for r in results:
        lat = r.latency_ms
        row = [r.model, r.shape_text(), str(r.batch), r.precision, r.mode,
               f"{lat.median:.3f}" if lat else "-", f"{lat.p95:.3f}" if lat else "-"]  # fmt: skip
        row += [f"{r.device_ms.median:.3f}" if r.device_ms else "-"] if with_device else []
        row += [
            format_rate(r.samples_per_s),
            format_rate(r.points_per_s),
            f"{r.peak_mem_bytes / _BYTES_PER_MIB:.1f}" if r.peak_mem_bytes is not None else "-",
        ]
        row += [f"{r.top_op['name']} {r.top_op['share']:.0%}" if r.top_op else "-"] if with_top_op else []
        row.append(r.status if r.status == "ok" else f"[red]{r.status}[/red]: {r.error or ''}")
        table.add_row(*row)
    return table
