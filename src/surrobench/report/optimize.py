"""The optimize report as terminal tables and markdown: per config the source text's before/after table
(median, P95, peak memory, top-op share) for the baseline and every candidate, with verdict, speedup and
its CI, error, setup time and break-even calls; then the recipe as code and as a ``surrobench run`` line."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from surrobench.report.cells import BYTES_PER_MIB
from surrobench.report.escape import rich_escape as escape
from surrobench.report.markdown import md_table
from surrobench.results.optimize import CandidateResult, ConfigOptimization, OptimizeReport
from surrobench.results.schema import ConfigResult

COLUMNS = (
    ("candidate", "name"), ("verdict", "verdict"), ("median ms", "median"), ("P95 ms", "p95"),
    ("peak MiB", "peak_mib"), ("top op", "top_op"), ("speedup [95% CI]", "speedup"), ("rel L2", "rel_l2"),
    ("setup s", "setup_s"), ("break-even calls", "break_even"), ("reason", "reason"),
)
_VERDICT_STYLE = {"accepted": "green", "rejected_slower": "yellow", "rejected_accuracy": "red", "failed": "red"}


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _timing_cells(r: ConfigResult | None) -> dict[str, str]:
    lat = r.latency_ms if r is not None else None
    return {
        "median": _fmt(lat.median if lat else None, ".3f"),
        "p95": _fmt(lat.p95 if lat else None, ".3f"),
        "peak_mib": _fmt(r.peak_mem_bytes / BYTES_PER_MIB if r is not None and r.peak_mem_bytes is not None else None,
                         ".1f"),
        "top_op": f"{r.top_op['name']} {r.top_op['share']:.0%}" if r is not None and r.top_op else "-",
    }


def baseline_cells(entry: ConfigOptimization) -> dict[str, str]:
    """The baseline row, by column key of :data:`COLUMNS`."""
    b = entry.baseline
    setup = b.cold_start_ms / 1e3 if b.cold_start_ms is not None else None
    reason = entry.error or ("" if b.status == "ok" else f"{b.status}: {b.error}")
    return {"name": "baseline", "verdict": "-", **_timing_cells(b), "speedup": "1", "rel_l2": "0",
            "setup_s": _fmt(setup, ".2f"), "break_even": "-", "reason": reason or f"{b.precision} {b.mode}"}


def candidate_cells(c: CandidateResult) -> dict[str, str]:
    """One candidate's row, by column key of :data:`COLUMNS`."""
    sp = c.speedup
    return {
        "name": c.name, "verdict": c.verdict, **_timing_cells(c.result),
        "speedup": f"{sp.median:.2f}x [{sp.ci95[0]:.2f}, {sp.ci95[1]:.2f}]" if sp else "-",
        "rel_l2": _fmt(c.accuracy.rel_l2 if c.accuracy else None, ".1e"),
        "setup_s": _fmt(c.setup_s, ".2f"),
        "break_even": _fmt(c.break_even_calls, ".0f"),
        "reason": c.reason,
    }


def _rows(entry: ConfigOptimization) -> list[dict[str, str]]:
    return [baseline_cells(entry)] + [candidate_cells(c) for c in entry.candidates]


def config_title(entry: ConfigOptimization) -> str:
    """``fno2d 1x3x128x128 b1 fp32 eager on cuda``."""
    return f"{entry.baseline.label()} on {entry.baseline.device}"


def recipe_lines(entry: ConfigOptimization) -> list[str]:
    """The recommendation in words: the recipe, its code and its ``surrobench run`` line, the budget's
    leftovers and the notes."""
    if entry.recommended:
        best = entry.best
        speed = f" ({best.speedup.median:.2f}x [{best.speedup.ci95[0]:.2f}, {best.speedup.ci95[1]:.2f}])" if best else ""
        lines = [f"recommended: {'+'.join(entry.recommended)}{speed}", *("    " + c for c in entry.recipe_code),
                 f"run it: {entry.run_command}"]
    else:
        lines = ["recommended: nothing (no candidate was faster beyond the noise floor within the tolerance)"]
    lines += [f"not tried: {name} ({reason})" for name, reason in entry.not_tried]
    lines += [f"note: {n}" for n in entry.notes]
    return lines


def optimize_renderables(report: OptimizeReport) -> list:
    """Rich renderables: per config its table (each reason on its own line under it, so the table stays
    narrow) and recipe, then the stored runs and how to compare them."""
    out: list = []
    columns = [(title, key) for title, key in COLUMNS if key != "reason"]
    for entry in report.configs:
        table = Table(title=escape(config_title(entry)))
        for title, key in columns:
            table.add_column(title, justify="left" if key in ("name", "verdict", "top_op") else "right")
        rows = _rows(entry)
        for row in rows:
            cells = [escape(row[key]) for _, key in columns]
            style = _VERDICT_STYLE.get(row["verdict"])
            if style:
                cells[1] = f"[{style}]{cells[1]}[/]"
            table.add_row(*cells)
        reasons = [escape(f"{row['name']}: {row['reason']}") for row in rows if row["reason"]]
        out.append(Group(table, *reasons, *(escape(line) for line in recipe_lines(entry))))
    out.append(escape(stored_line(report)))
    return out


def stored_line(report: OptimizeReport) -> str:
    """Where the runs went and the ``compare`` line for the before/after pair."""
    text = f"stored as optimization {report.optimize_id}: baseline run {report.baseline_run_id}"
    if report.recipe_run_id:
        text += (f", recipe run {report.recipe_run_id}; before/after: surrobench compare {report.baseline_run_id} "
                 f"{report.recipe_run_id} --ignore-field precision,mode")
    return text


def optimize_markdown(report: OptimizeReport) -> str:
    """The report as markdown: per config a heading, the table, the recipe in a code block."""
    parts = []
    for entry in report.configs:
        rows = [[row[key] for _, key in COLUMNS] for row in _rows(entry)]
        parts += [f"### {config_title(entry)}\n", md_table((t for t, _ in COLUMNS), rows)]
        parts.append("```\n" + "\n".join(recipe_lines(entry)) + "\n```\n")
    parts.append(stored_line(report) + "\n")
    return "\n".join(parts)
