"""A run as rows for a notebook: flat records, a pandas DataFrame (pandas optional) and a small HTML table.

One row per config result; times in ms, memory in bytes, throughput per second, the top op's share a
fraction, as in the run JSON (docs/design.md, "Run JSON"). The per-iteration samples are counted
(``n_samples``), not listed: ``ConfigResult.samples_ms`` holds them. ``run`` is a
:class:`~surrobench.records.run.RunRecord` and ``r`` a ``ConfigResult`` (not imported: ``records.run`` calls
this module from its methods).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas

#: The keys of every record, in column order.
RECORD_KEYS = (
    "run_id", "label", "model", "shape", "batch", "precision", "device", "mode", "status", "median_ms", "p95_ms",
    "p99_ms", "mean_ms", "ci95_low_ms", "ci95_high_ms", "device_median_ms", "samples_per_s", "points_per_s",
    "peak_mem_bytes", "cold_start_ms", "top_op", "top_op_share", "n_samples", "warmup", "iters", "error",
)  # fmt: skip
#: Rows of :func:`run_html`; the rest are counted under the table.
HTML_ROWS = 50
_BYTES_PER_MIB = 1024**2


def result_record(run_id: str, r) -> dict:
    """One flat dict of :data:`RECORD_KEYS` for ``r`` (None where unknown)."""
    lat, dev, top = r.latency_ms, r.device_ms, r.top_op or {}
    return {
        "run_id": run_id,
        "label": r.label(),
        "model": r.model,
        "shape": r.shape_text(),
        "batch": r.batch,
        "precision": r.precision,
        "device": r.device,
        "mode": r.mode,
        "status": r.status,
        "median_ms": lat.median if lat else None,
        "p95_ms": lat.p95 if lat else None,
        "p99_ms": lat.p99 if lat else None,
        "mean_ms": lat.mean if lat else None,
        "ci95_low_ms": lat.ci95_median[0] if lat else None,
        "ci95_high_ms": lat.ci95_median[1] if lat else None,
        "device_median_ms": dev.median if dev else None,
        "samples_per_s": r.samples_per_s,
        "points_per_s": r.points_per_s,
        "peak_mem_bytes": r.peak_mem_bytes,
        "cold_start_ms": r.cold_start_ms,
        "top_op": top.get("name"),
        "top_op_share": top.get("share"),
        "n_samples": len(r.samples_ms),
        "warmup": r.warmup,
        "iters": r.iters,
        "error": r.error,
    }


def run_records(run) -> list[dict]:
    """:func:`result_record` of every result of ``run``, in order."""
    return [result_record(run.run_id, r) for r in run.results]


def run_dataframe(run) -> pandas.DataFrame:
    """:func:`run_records` as a ``pandas.DataFrame`` with the columns :data:`RECORD_KEYS`.

    Raises:
        ImportError: pandas is not installed (surrobench does not need it; ``to_records()`` does not).
    """
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "to_pandas() needs pandas, which surrobench does not install: pip install pandas "
            "(or use to_records(), a list of dicts)"
        ) from None
    return pandas.DataFrame(run_records(run), columns=list(RECORD_KEYS))


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def run_html(run) -> str:
    """A small HTML table for a notebook (``_repr_html_``): the run in a caption, then per result (at most
    :data:`HTML_ROWS`) its label, status, median and P95 (ms), samples/s and peak MiB, or its error. Every
    text is escaped."""
    head = ("config", "status", "median ms", "P95 ms", "samples/s", "peak MiB")
    rows = []
    for rec in run_records(run)[:HTML_ROWS]:
        peak = rec["peak_mem_bytes"]
        status = rec["status"] if rec["status"] == "ok" else f"{rec['status']}: {(rec['error'] or '')[:120]}"
        cells = (
            rec["label"],
            status,
            _cell(rec["median_ms"], ".3f"),
            _cell(rec["p95_ms"], ".3f"),
            _cell(rec["samples_per_s"], ".4g"),
            _cell(peak / _BYTES_PER_MIB if peak is not None else None, ".1f"),
        )
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    more = len(run.results) - HTML_ROWS
    caption = (
        f"run {run.run_id} ({run.created}, tag {run.tag or '-'}) on {run.env.get('device_name')}: "
        f"{len(run.results)} result(s)" + (f", {more} more not shown (to_records() has all)" if more > 0 else "")
    )
    header = "".join(f"<th>{h}</th>" for h in head)
    return (
        f"<table><caption>{html.escape(caption)}</caption><thead><tr>{header}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
