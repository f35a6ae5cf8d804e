"""The capacity comparison of two serve runs as a rich table and Markdown, from the same cells."""

from __future__ import annotations

from rich.table import Table

from surrobench.api.compare import ComparedServeRuns
from surrobench.report.cells import fmt
from surrobench.report.escape import md_escape, rich_escape
from surrobench.report.fit import plain_table
from surrobench.report.markdown import md_table


CAPACITY_COLUMNS = ("run", "id", "served", "best policy", "capacity rps", "first failing rps")


def _rps(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.1f}"


def capacity_rows(pair: ComparedServeRuns) -> list[list[str]]:
    """BASE's and NEW's row of :data:`CAPACITY_COLUMNS` (the search's bracket: capacity, first failing rate)."""
    c = pair.capacity
    rows = []
    for side, record, policy, (lo, hi) in (
        ("BASE", pair.base, c.base_policy, c.base_rps),
        ("NEW", pair.new, c.new_policy, c.new_rps),
    ):
        label = policy.label() if policy else "the endpoint's own batching"
        rows.append([side, record.run_id, record.label(), label, f"{lo:.1f}", _rps(hi)])
    return rows


def capacity_line(pair: ComparedServeRuns) -> str:
    """NEW / BASE capacity with the interval of the two brackets, and the verdict."""
    c = pair.capacity
    lo, hi = c.ratio_interval
    return f"NEW / BASE capacity {fmt(c.ratio, '.2f')} [{fmt(lo, '.2f')}, {fmt(hi, '.2f')}]: {c.verdict}"


def capacity_table(pair: ComparedServeRuns) -> Table:
    """The two runs' capacities at the P99 target, the ratio line as the caption."""
    title, caption = f"capacity at P99 <= {pair.capacity.target_p99_ms:g} ms", rich_escape(capacity_line(pair))
    rows = capacity_rows(pair)
    return plain_table(CAPACITY_COLUMNS, rows, title=title, caption=caption, right=CAPACITY_COLUMNS[4:], escape=True)


def capacity_markdown(pair: ComparedServeRuns) -> str:
    """:func:`capacity_table` as Markdown: a heading, the table, the ratio line."""
    head = f"## Capacity at P99 <= {pair.capacity.target_p99_ms:g} ms\n\n"
    return head + md_table(CAPACITY_COLUMNS, capacity_rows(pair)) + f"\n{md_escape(capacity_line(pair))}\n"
