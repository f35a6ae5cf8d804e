"""The timeline report for the terminal: busy, gaps and causes, launches, syncs, streams; for many rank traces,
the per-rank table and the ranks' reports and findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group

from surrobench.analysis.timeline import TimelineReport
from surrobench.report.escape import cut, rich_escape
from surrobench.report.findings import findings_renderables
from surrobench.report.fit import plain_table

if TYPE_CHECKING:
    from surrobench.analysis.cross_rank import CrossRankReport
    from surrobench.api.rank_traces import RankTraces

_NAME_WIDTH = 60
MAX_STEP_ROWS = 30
"""Profiled steps listed in the terminal's step table; the rest are counted in a line under it (the JSON report
keeps every step): rich draws a thousand rows slowly (docs/benchmarks/startup.md, "The step table")."""


def _short(name: str) -> str:
    """A trace name for a rich cell: cut to :data:`_NAME_WIDTH`, markup and lone surrogates escaped."""
    return rich_escape(cut(name, _NAME_WIDTH))


def _ms(*values: float) -> list[str]:
    return [f"{v:.3f}" for v in values]


def render_timeline(report: TimelineReport) -> Group:
    """Rich renderables for a :class:`TimelineReport`: devices, steps, ranges, gaps, launches, streams."""
    parts: list = [f"[bold]{report.source}[/] trace, ranks {list(report.ranks)}: status [bold]{report.status}[/]"]
    if report.message:
        parts.append(f"[yellow]{report.message}[/]")
    if gpu := report.status == "ok":  # no GPU activity (empty, CPU-only, no durations): no empty GPU tables
        repaired = " [yellow](trace read with events dropped or repaired: see the warnings)[/]"
        header = ("rank", "device", "window ms", "busy ms", "idle ms", "busy", "kernel ms", "memcpy ms")
        rows = [
            [str(d.rank), f"{d.device} {_short(d.name)}", *_ms(d.window_ms, d.busy_ms, d.idle_ms)]
            + [f"{d.busy_share:.1%}", *_ms(d.kernel_ms, d.memcpy_ms)]
            for d in report.devices
        ]
        title = "GPU busy over the profiled window" + (repaired if report.repaired else "")
        parts.append(plain_table(header, rows, title=title, right=True))
    if report.steps and gpu:
        header = ("rank", "step", "host ms", "GPU busy ms", "GPU launched ms", "busy")
        rows = [
            [str(s.rank), str(s.step), *_ms(s.dur_ms, s.gpu_busy_ms, s.gpu_time_ms), f"{s.busy_share:.1%}"]
            for s in report.steps[:MAX_STEP_ROWS]
        ]
        parts.append(plain_table(header, rows, title="Per profiled step", right=True))
        if len(report.steps) > MAX_STEP_ROWS:
            parts.append(f"... and {len(report.steps) - MAX_STEP_ROWS} more steps (--json lists every step)")
    if report.ranges:  # the GPU columns only where there was GPU activity (a CPU trace's would read 0.000)
        header = ("range", "count", "host ms", "share") + (("GPU busy ms", "GPU launched ms") if gpu else ())
        rows = [
            [_short(r.name), str(r.count), *_ms(r.dur_ms), f"{r.share:.1%}"]
            + (_ms(r.gpu_busy_ms, r.gpu_time_ms) if gpu else [])
            for r in report.ranges
        ]
        parts.append(plain_table(header, rows, title="User / NVTX ranges", right=header[1:]))
    parts += _gap_tables(report)
    if report.launches:
        lc = report.launches
        parts.append(
            f"launches: {lc.kernels} kernels ({lc.graph_kernels} from {lc.graph_launches} graph launches); "
            f"launch call median {lc.launch_us_median:.1f} us (p95 {lc.launch_us_p95:.1f}); launch-to-start "
            f"median {lc.delay_us_median:.1f} us; kernel median {lc.kernel_us_median:.1f} us; "
            f"{lc.shorter_than_launch:.0%} of kernels shorter than their launch call"
        )
    if len(report.streams) > 1:
        header = ("rank", "device", "stream", "ops", "busy ms", "overlapped ms")
        rows = [
            (str(s.rank), str(s.device), str(s.stream), str(s.ops), f"{s.busy_ms:.3f}", f"{s.overlap_ms:.3f}")
            for s in report.streams
        ]
        parts.append(plain_table(header, rows, title="Streams", right=True))
    for p in report.serialized_streams:
        parts.append(
            f"[yellow]streams {p.streams[0]} and {p.streams[1]} (device {p.device}) were active in the "
            f"same period but overlapped only {p.overlap_ms:.3f} ms: check stream waits/events[/]"
        )
    if report.comm:
        parts.append(
            f"NCCL: {report.comm.busy_ms:.3f} ms busy, {report.comm.share:.1%} of GPU busy time, "
            f"{report.comm.overlapped:.0%} overlapped with compute"
        )
    a = report.anomalies
    if a.overlapping_ops_same_stream or a.negative_duration_events or a.ops_without_launch:
        parts.append(
            f"[yellow]anomalies:[/] {a.overlapping_ops_same_stream} overlapping ops on one stream, "
            f"{a.zero_duration_ops} zero-duration ops, {a.negative_duration_events} negative durations, "
            f"{a.ops_without_launch} GPU ops without a launch call"
        )
    parts += [f"[yellow]warning:[/] {rich_escape(line)}" for line in report.warnings]
    return Group(*parts)


def _gap_tables(report: TimelineReport) -> list:
    if report.gaps is None or not report.gaps.count:
        return []
    g = report.gaps
    rows = [
        (rich_escape(c.cause), str(c.count), f"{c.total_ms:.3f}", f"{c.share:.1%}", _short(c.top_host_op))
        for c in g.by_cause
    ]
    title = f"GPU gaps > {g.threshold_us:g} us: {g.count}, {g.total_ms:.3f} ms"
    causes = plain_table(
        ("cause", "gaps", "ms", "share", "most frequent host op"), rows, title=title, right=("gaps", "ms", "share")
    )
    rows = [
        (f"{gap.start_ms:.3f}", f"{gap.dur_us:.1f}", rich_escape(gap.cause + (" (pageable)" if gap.pageable else "")))
        + (_short(gap.next_op), _short(gap.host_op or gap.sync_call))
        for gap in g.longest[:10]
    ]
    header = ("start ms", "us", "cause", "next op", "host op / sync")
    return [causes, plain_table(header, rows, title="Longest gaps", right=("start ms", "us"))]


RANK_HEADER = ("rank", "step ms", "compute ms", "comm ms", "wait ms", "exposed ms", "last", "late ms", "extra ops")
#: Under the compact findings of ``analyze``, which has no ``--explain``.
RANK_TRACES_HINT = "the evidence behind each finding: --json, or surrobench diagnose of these traces with --explain"
MAX_PRINTED_RANKS = 4
"""Ranks whose whole timeline report is printed; the others are in the JSON (64 ranks would scroll away)."""


def cross_rank_rich(report: CrossRankReport, width: int | None = None) -> Group:
    """A one-line scope (ranks, aligned steps, matched collectives) and the per-rank table (fitted to ``width``)."""
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
    table = plain_table(RANK_HEADER, rows, title=title, right=RANK_HEADER[:-1], overflow="fold", width=width)
    return Group(scope, table)


def rank_traces_rich(traces: RankTraces, title: str, width: int | None = None) -> Group:
    """The first :data:`MAX_PRINTED_RANKS` ranks' reports, the per-rank table and compact findings."""
    parts: list = [render_timeline(r.timeline) for r in traces.ranks[:MAX_PRINTED_RANKS]]
    if len(traces.ranks) > MAX_PRINTED_RANKS:
        parts.append(f"({len(traces.ranks) - MAX_PRINTED_RANKS} more ranks' timeline reports in --json)")
    if traces.cross_rank is not None:
        parts.append(cross_rank_rich(traces.cross_rank, width))
    parts += findings_renderables(list(traces.findings), title, width, hint=RANK_TRACES_HINT)
    return Group(*parts)
