"""The cells of one config's results row, shared by the HTML and markdown results tables."""

from __future__ import annotations

import math

from surrobench.execution.failures import UNKNOWN, recorded_cause
from surrobench.records.config import mode_text
from surrobench.records.run import BYTES_PER_MIB, ConfigResult, fmt, placement


def format_rate(per_s: float | None) -> str:
    """``12.3k/s``-style rate with an SI prefix; ``-`` when unknown."""
    if per_s is None:
        return "-"
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_s >= factor:
            return f"{per_s / factor:.3g}{prefix}/s"
    return f"{per_s:.3g}/s"


def failure_text(r: ConfigResult) -> str:
    """A failed config's known cause with the error in brackets; the error alone without a cause."""
    cause = recorded_cause(r.error, r.extra)
    error = r.error or ""
    return error if cause.cause_id == UNKNOWN else f"{cause.line} [{error}]"


def result_cells(r: ConfigResult) -> dict[str, str]:
    """Every results-table cell of ``r`` by column (``model`` ... ``status``), ms, ``-`` where unknown; ``median_ci``
    the median's 95% CI to its third significant digit (7.46: ``[5.89, 8.10]``; 0.0885: ``[0.0871, 0.0902]``)."""
    lat = r.latency_ms
    places = max(2 - math.floor(math.log10(lat.median)), 0) if lat and lat.median > 0 else 0
    where = placement(r)
    return {
        "model": r.model,
        "shape": r.shape_text(),
        "batch": str(r.batch),
        "precision": r.precision,
        "mode": mode_text(r.mode, r.extra),  # with the settings it ran with: threads=1, channels_last
        "median": fmt(lat.median if lat else None),
        "ci": f"{lat.ci95_median[0]:.3f}–{lat.ci95_median[1]:.3f}" if lat else "-",
        "median_ci": f"[{lat.ci95_median[0]:.{places}f}, {lat.ci95_median[1]:.{places}f}]" if lat else "-",
        "p95": fmt(lat.p95 if lat else None),
        "device": fmt(r.device_ms.median if r.device_ms else None),
        "cold_start": fmt(r.cold_start_ms, ".1f"),
        "samples_per_s": format_rate(r.samples_per_s) if r.status == "ok" else "-",
        "points_per_s": format_rate(r.points_per_s) if r.status == "ok" else "-",
        "peak_mib": fmt(r.peak_mem_bytes / BYTES_PER_MIB if r.peak_mem_bytes is not None else None, ".1f"),
        "top_op": f"{r.top_op['name']} {r.top_op['share']:.0%}" if r.top_op else "-",
        "ranks": where.label() if where is not None else "-",
        "status": r.status if r.status == "ok" else f"{r.status}: {failure_text(r)}",
    }
