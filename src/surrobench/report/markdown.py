"""Markdown tables for docs and pull requests: :func:`md_table`, the table writer of the results, findings,
comparison and scenarios markdown, and the results table (``surrobench show --markdown``)."""

from __future__ import annotations

from collections.abc import Iterable

from surrobench.report.terminal import format_rate
from surrobench.results.schema import ConfigResult

_BYTES_PER_MIB = 1024**2


def md_escape(text: object, newline: str = "<br>") -> str:
    """``text`` for a GitHub-flavoured markdown table cell: backslashes and pipes escaped (a bare ``|``
    would end the cell), each newline as ``newline`` (a raw one would end the row)."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", newline)


def md_table(header: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    """A GitHub-flavoured markdown table, one line per row and a trailing newline; every cell goes
    through :func:`md_escape`."""
    header = list(header)
    lines = ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(md_escape, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def results_markdown(results: Iterable[ConfigResult]) -> str:
    """A GitHub-flavoured markdown table: the terminal table's columns plus cold start and the CI of the
    median. Free text (errors, user model names) is escaped (:func:`md_escape`)."""
    header = ("model", "input shape", "B", "prec", "mode", "median ms", "95% CI of median", "P95 ms", "device ms",
              "cold start ms", "samples/s", "points/s", "peak MiB", "status")  # fmt: skip
    rows = []
    for r in results:
        lat = r.latency_ms
        ci = f"{lat.ci95_median[0]:.3f}–{lat.ci95_median[1]:.3f}" if lat else "-"
        status = r.status if r.status == "ok" else f"{r.status}: {r.error or ''}"
        rows.append([
            r.model, r.shape_text(), str(r.batch), r.precision, r.mode,
            _fmt(lat.median if lat else None), ci, _fmt(lat.p95 if lat else None),
            _fmt(r.device_ms.median if r.device_ms else None), _fmt(r.cold_start_ms, ".1f"),
            format_rate(r.samples_per_s), format_rate(r.points_per_s),
            _fmt(r.peak_mem_bytes / _BYTES_PER_MIB if r.peak_mem_bytes is not None else None, ".1f"), status,
        ])  # fmt: skip
    return md_table(header, rows)
