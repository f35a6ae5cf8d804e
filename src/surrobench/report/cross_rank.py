"""The per-rank table of a cross-rank comparison (:class:`~surrobench.analysis.cross_rank.CrossRankReport`)
for the terminal: one row per rank, times in ms per aligned step."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table

from surrobench.analysis.cross_rank import CrossRankReport
from surrobench.report.escape import rich_escape

HEADER = ("rank", "step ms", "compute ms", "comm ms", "wait ms", "exposed ms", "last", "late ms", "extra ops")


def cross_rank_rich(report: CrossRankReport) -> Group:
    """A one-line scope (ranks, aligned steps, matched collectives) and the per-rank table."""
    scope = (f"[bold]{len(report.ranks)} ranks[/], {len(report.steps)} aligned steps ({report.step_source}), "
             f"{report.collectives} matched {report.comm_source or 'no'} collectives"
             + (f", {report.unmatched} on one rank only" if report.unmatched else ""))  # fmt: skip
    table = Table(title="Per rank, mean per aligned step")
    for col in HEADER:
        table.add_column(col, justify="left" if col == HEADER[-1] else "right", overflow="fold")
    for r in report.rows:
        more = "; ".join(f"{rich_escape(op.name)} +{op.ms - op.others_ms:.3f} ms" for op in r.extra_ops)
        table.add_row(str(r.rank), f"{r.step_ms:.3f}", f"{r.compute_ms:.3f}", f"{r.comm_ms:.3f}", f"{r.wait_ms:.3f}",
                      f"{r.exposed_comm_ms:.3f}", f"{r.late_share:.0%}", f"{r.late_ms:.3f}", more)  # fmt: skip
    return Group(scope, table)
