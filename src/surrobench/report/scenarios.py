"""The planted-bottleneck suite's verdicts (``surrobench scenarios``) for the terminal and as markdown."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.table import Table

from surrobench.api.scenarios import Outcome
from surrobench.records.findings import Finding
from surrobench.report.findings import findings_markdown
from surrobench.report.escape import md_table, rich_escape
from surrobench.report.fit import columns, fit_table

HEADER = ("scenario", "expected", "top finding", "result", "false alarms (controls)", "note")


def outcome_cells(o: Outcome) -> list[str]:
    """One row: scenario, expected and top finding, pass / FAIL / skipped, control alarms, note."""
    result = "skipped" if o.passed is None else ("pass" if o.passed else "FAIL")
    return [o.scenario.name, o.scenario.expected, o.top_kind or "-", result, ", ".join(o.false_alarms) or "-", o.note]


def scenarios_table(outcomes: Iterable[Outcome], device: str, width: int | None = None) -> Table:
    """The rich table of the suite run on ``device``, one row per scenario (:func:`outcome_cells`), fitted to
    ``width`` (:func:`~surrobench.report.fit.fit_table`): names and verdicts never cut, the alarms and the note
    wrapped at spaces, stacked as field/value lines where even that does not fit."""
    cols = columns(HEADER, left=HEADER, wrap=("false alarms (controls)", "note"))
    rows = [[rich_escape(cell) for cell in outcome_cells(o)] for o in outcomes]
    return fit_table(cols, rows, width, title=f"scenarios on {device}")


def scenarios_markdown(outcomes: Iterable[Outcome], findings: Mapping[str, list[Finding]]) -> str:
    """The table as markdown, then each scenario's judgment table under a level-4 heading of its name."""
    lines = [md_table(HEADER, map(outcome_cells, outcomes)).rstrip("\n")]
    for name, found in findings.items():
        lines += ["", f"#### {name}", "", findings_markdown(found)]
    return "\n".join(lines) + "\n"
