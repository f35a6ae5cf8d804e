"""Many rank traces for the terminal: the per-rank table and the ranks' reports and findings."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group, RenderableType

from surrobench.analysis.cross_rank import CrossRankReport
from surrobench.analysis.timeline import TimelineReport
from surrobench.api.rank_traces import RankTraces
from surrobench.report.escape import rich_escape
from surrobench.report.findings import findings_renderables
from surrobench.report.fit import plain_table

HEADER = ("rank", "step ms", "compute ms", "comm ms", "wait ms", "exposed ms", "last", "late ms", "extra ops")
#: Under the compact findings of ``analyze``, which has no ``--explain``.
RANK_TRACES_HINT = "the evidence behind each finding: --json, or surrobench diagnose of these traces with --explain"
MAX_PRINTED_RANKS = 4
"""Ranks whose whole timeline report is printed; the others are in the JSON (64 ranks would scroll away)."""


def cross_rank_rich(report: CrossRankReport) -> Group:
    """A one-line scope (ranks, aligned steps, matched collectives) and the per-rank table."""
    scope = (
        f"[bold]{len(report.ranks)} ranks[/], {len(report.steps)} aligned steps ({report.step_source}), "
        f"{report.collectives} matched {report.comm_source or 'no'} collectives"
        + (f", {report.unmatched} on one rank only" if report.unmatched else "")
        + (
            f"; their exits {report.end_spread_ms:.3f} ms apart (median; an offset between the ranks' clocks "
            "would show here)"
            if report.collectives
            else ""
        )
    )
    rows = []
    for r in report.rows:
        more = "; ".join(f"{rich_escape(op.name)} +{op.ms - op.others_ms:.3f} ms" for op in r.extra_ops)
        ms = [f"{v:.3f}" for v in (r.step_ms, r.compute_ms, r.comm_ms, r.wait_ms, r.exposed_comm_ms)]
        rows.append([str(r.rank), *ms, f"{r.late_share:.0%}", f"{r.late_ms:.3f}", more])
    title = "Per rank, mean per aligned step"
    return Group(scope, plain_table(HEADER, rows, title=title, right=HEADER[:-1], overflow="fold"))


def rank_traces_rich(
    traces: RankTraces,
    timeline: Callable[[TimelineReport], RenderableType] | None,
    title: str,
    width: int | None = None,
) -> Group:
    """The first :data:`MAX_PRINTED_RANKS` ranks' reports, the per-rank table and compact findings."""
    parts: list = []
    if timeline is not None:
        parts += [timeline(r.timeline) for r in traces.ranks[:MAX_PRINTED_RANKS]]
        if len(traces.ranks) > MAX_PRINTED_RANKS:
            parts.append(f"({len(traces.ranks) - MAX_PRINTED_RANKS} more ranks' timeline reports in --json)")
    if traces.cross_rank is not None:
        parts.append(cross_rank_rich(traces.cross_rank))
    parts += findings_renderables(list(traces.findings), title, width, hint=RANK_TRACES_HINT)
    return Group(*parts)
