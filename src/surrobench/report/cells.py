"""The cells of one config's results row, shared by the HTML and markdown results tables."""

from __future__ import annotations

from surrobench.execution.failures import UNKNOWN, recorded_cause
from surrobench.records.run import ConfigResult
from surrobench.results.scaling import placement

BYTES_PER_MIB = 1024**2


def format_rate(per_s: float | None) -> str:
    """``12.3k/s``-style rate with an SI prefix; ``-`` when unknown."""
    if per_s is None:
        return "-"
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if per_s >= factor:
            return f"{per_s / factor:.3g}{prefix}/s"
    return f"{per_s:.3g}/s"


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def failure_text(r: ConfigResult) -> str:
    """What went wrong in a failed config: the known cause in one line (as the runner stored it, else read
    from the error text) followed by the original error in brackets; the error alone when no cause is known."""
    cause = recorded_cause(r.error, r.extra)
    error = r.error or ""
    return error if cause.cause_id == UNKNOWN else f"{cause.line} [{error}]"


def result_cells(r: ConfigResult) -> dict[str, str]:
    """Every cell a results table may show for ``r``, by column: ``model``, ``shape``, ``batch``,
    ``precision``, ``mode``, ``median``, ``ci`` (95% CI of the median), ``p95``, ``device`` (device-time
    median), ``cold_start``, ``samples_per_s``, ``points_per_s``, ``peak_mib``, ``top_op``, ``ranks`` (where
    a multi-process run measured it, :meth:`~surrobench.results.scaling.Placement.label`) and ``status``
    (with :func:`failure_text` of a failed config); ``-`` where a value is unknown, and for the rates of a config
    that is not ``ok`` (a ``nonfinite`` one keeps its timings, but no rate of valid output). Times in ms."""
    lat = r.latency_ms
    where = placement(r)
    return {
        "model": r.model,
        "shape": r.shape_text(),
        "batch": str(r.batch),
        "precision": r.precision,
        "mode": r.mode,
        "median": _fmt(lat.median if lat else None),
        "ci": f"{lat.ci95_median[0]:.3f}–{lat.ci95_median[1]:.3f}" if lat else "-",
        "p95": _fmt(lat.p95 if lat else None),
        "device": _fmt(r.device_ms.median if r.device_ms else None),
        "cold_start": _fmt(r.cold_start_ms, ".1f"),
        "samples_per_s": format_rate(r.samples_per_s) if r.status == "ok" else "-",
        "points_per_s": format_rate(r.points_per_s) if r.status == "ok" else "-",
        "peak_mib": _fmt(r.peak_mem_bytes / BYTES_PER_MIB if r.peak_mem_bytes is not None else None, ".1f"),
        "top_op": f"{r.top_op['name']} {r.top_op['share']:.0%}" if r.top_op else "-",
        "ranks": where.label() if where is not None else "-",
        "status": r.status if r.status == "ok" else f"{r.status}: {failure_text(r)}",
    }
