"""Markdown tables of results, for docs and pull requests (``surrobench show --markdown``)."""

from __future__ import annotations

from collections.abc import Iterable

from surrobench.report.terminal import format_rate
from surrobench.results.schema import ConfigResult

_BYTES_PER_MIB = 1024**2


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def results_markdown(results: Iterable[ConfigResult]) -> str:
    """A GitHub-flavoured markdown table: the terminal table's columns plus cold start and the CI of the
    median. Pipes in free text (errors, user model names) are escaped."""
    header = ("| model | input shape | B | prec | mode | median ms | 95% CI of median | P95 ms | device ms "
              "| cold start ms | samples/s | points/s | peak MiB | status |")  # fmt: skip
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for r in results:
        lat = r.latency_ms
        ci = f"{lat.ci95_median[0]:.3f}–{lat.ci95_median[1]:.3f}" if lat else "-"
        status = r.status if r.status == "ok" else f"{r.status}: {r.error or ''}"
        cells = [
            r.model, r.shape_text(), str(r.batch), r.precision, r.mode,
            _fmt(lat.median if lat else None), ci, _fmt(lat.p95 if lat else None),
            _fmt(r.device_ms.median if r.device_ms else None), _fmt(r.cold_start_ms, ".1f"),
            format_rate(r.samples_per_s), format_rate(r.points_per_s),
            _fmt(r.peak_mem_bytes / _BYTES_PER_MIB if r.peak_mem_bytes is not None else None, ".1f"), status,
        ]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
