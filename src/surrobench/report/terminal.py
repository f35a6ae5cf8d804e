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
    """Model, shape, batch, precision, mode, median, P95, throughput, peak memory, status (issue 2)."""
    table = Table(title=title)
    for name, justify in (
        ("model", "left"), ("shape", "left"), ("batch", "right"), ("precision", "left"), ("mode", "left"),
        ("median ms", "right"), ("P95 ms", "right"), ("device ms", "right"), ("samples/s", "right"),
        ("points/s", "right"), ("peak MiB", "right"), ("top op", "left"), ("status", "left"),
    ):  # fmt: skip
        table.add_column(name, justify=justify)
    for r in results:
        lat = r.latency_ms
        status = r.status if r.status == "ok" else f"[red]{r.status}[/red]: {r.error or ''}"
        table.add_row(
            r.model,
            "x".join(map(str, r.input_shape)) or r.shape_label,
            str(r.batch),
            r.precision,
            r.mode,
            f"{lat.median:.3f}" if lat else "-",
            f"{lat.p95:.3f}" if lat else "-",
            f"{r.device_ms.median:.3f}" if r.device_ms else "-",
            format_rate(r.samples_per_s),
            format_rate(r.points_per_s),
            f"{r.peak_mem_bytes / _BYTES_PER_MIB:.1f}" if r.peak_mem_bytes is not None else "-",
            f"{r.top_op['name']} {r.top_op['share']:.0%}" if r.top_op else "-",
            status,
        )
    return table
