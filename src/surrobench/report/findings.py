"""The judgment table (docs/sources.md, method §4) for the terminal (rich) and for docs (markdown).

Columns: kind, severity, config, summary, the profiler side (profiler and roofline evidence), the
timeline side (timeline, run and system evidence), the action and the estimated gain in ms per step.
"""

from __future__ import annotations

from rich.table import Table

from surrobench.records.findings import Finding
from surrobench.report.escape import md_escape, rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.report.markdown import md_table

#: Printed under an empty judgment table.
NO_FINDINGS = "no findings: nothing above the report floor (see surrobench.analysis.thresholds)"
PROFILER_SIDE = ("profiler", "roofline")
_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "green"}


def _side(f: Finding, sources: tuple[str, ...], *, inside: bool) -> str:
    return "\n".join(e.text for e in f.evidence if (e.source in sources) == inside)


def failed_lines(failed: list[dict]) -> list[str]:
    """One line (rich markup) per config that failed, from diagnosis ``context.failed_configs`` entries
    (:func:`surrobench.api.diagnose.failed_configs_json`): ``failed: LABEL: STATUS: CAUSE [ERROR]``, the
    error alone when no cause is known."""
    lines = []
    for c in failed:
        what = f"{c['cause']} [{c['error']}]" if c.get("cause") else str(c.get("error") or "")
        text = f"{c['label']}: {c['status']}: {what}"
        lines.append(f"[bold red]failed:[/bold red] {rich_escape(text)}")
    return lines


def finding_row(f: Finding) -> list[str]:
    """The cells of one finding in :data:`HEADER` order, plain text (evidence lines joined by newlines)."""
    gain = "-" if f.estimated_gain_ms is None else f"{f.estimated_gain_ms:.3f}"
    return [
        f.kind,
        f.severity,
        f.config or "",
        f.summary,
        _side(f, PROFILER_SIDE, inside=True),
        _side(f, PROFILER_SIDE, inside=False),
        f.action,
        gain,
    ]


HEADER = (
    "kind",
    "severity",
    "config",
    "summary",
    "profiler evidence",
    "timeline / run evidence",
    "action",
    "est. gain ms",
)


def findings_rich(findings: list[Finding], title: str, width: int | None = None) -> Table:
    """A rich table, one row per finding, most important first (as given), fitted to ``width`` terminal
    cells (kind, severity and gain never cut; one stacked block per finding when the columns do not fit:
    :func:`~surrobench.report.fit.fit_table`). Every cell is text, never markup
    (:func:`~surrobench.report.escape.rich_escape`); the caller's ``title`` is markup."""
    rows = []
    for f in findings:
        cells = [rich_escape(c) for c in finding_row(f)]
        cells[1] = f"[{_STYLE[f.severity]}]{f.severity}[/]"
        rows.append(cells)
    columns = [
        Col(col, "right" if col == "est. gain ms" else "left", keep=col in ("kind", "severity", "est. gain ms"))
        for col in HEADER
    ]
    return fit_table(columns, rows, width, title=title, show_lines=True)


def findings_markdown(findings: list[Finding]) -> str:
    """A GitHub-flavoured markdown table; evidence lines joined with ``<br>``, pipes escaped (:func:`md_table`)."""
    rows = [finding_row(f) for f in findings] or [["(no findings)"] + [""] * (len(HEADER) - 1)]
    return md_table(HEADER, rows)


def findings_renderables(findings: list[Finding], title: str, width: int | None = None) -> list[Table | str]:
    """What ``surrobench diagnose`` prints: the judgment table titled ``title`` (plain text, escaped here),
    and :data:`NO_FINDINGS` under it when it is empty."""
    return [findings_rich(findings, rich_escape(title), width=width)] + ([] if findings else [NO_FINDINGS])


def findings_section_markdown(findings: list[Finding], title: str) -> str:
    """The judgment table as a markdown section: ``title`` as a level-3 heading, then :func:`findings_markdown`."""
    return f"### {md_escape(title, newline=' ')}\n\n" + findings_markdown(findings)
