"""Detectors of straggler, comm_wait, comm_not_overlapped; stakes against the longest mean step."""

from __future__ import annotations

import dataclasses
import statistics

from surrobench.analysis.cross_rank import CrossRankReport
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.records.findings import SEVERITIES, Evidence, Finding, rank_findings
from surrobench.records.run import grouped

MAX_LISTED_RANKS = 8
"""Ranks quoted one by one in a finding's evidence; the summary counts the rest."""


def _step_ms(report: CrossRankReport) -> float:
    return max((r.step_ms for r in report.rows), default=0.0)


def straggler(report: CrossRankReport, th: Thresholds) -> Finding | None:
    """The rank last into most collectives (else most above the median compute). Gain: its lateness per step."""
    step = _step_ms(report)
    if not step:
        return None
    if report.collectives:
        row = max(report.rows, key=lambda r: r.late_ms)
        if row.late_share < th.straggler_late_share_min:
            return None
    else:
        row = max(report.rows, key=lambda r: r.compute_ms)
    others_compute = statistics.median(r.compute_ms for r in report.rows if r.rank != row.rank)
    late = row.late_ms if report.collectives else row.compute_ms - others_compute
    severity = th.severity(late / step)
    if severity is None or late <= 0:
        return None
    computes = f"rank {row.rank} computes {row.compute_ms:.3f} ms per step, the other ranks {others_compute:.3f} ms"
    evidence = [
        Evidence("timeline", f"rank {row.rank} of ranks {list(report.ranks)}", row.rank, "rank"),
        Evidence("timeline", computes + " (median)", row.compute_ms - others_compute, "ms"),
    ]
    if report.collectives:
        waited = statistics.mean(r.wait_ms for r in report.rows if r.rank != row.rank)
        last = f"it enters {row.late_share:.0%} of {report.collectives} matched collectives last, {late:.3f} ms"
        wait = f"the other ranks wait {waited:.3f} ms per step inside collectives (mean)"
        evidence += [Evidence("timeline", last + " per step after the others", late, "ms")]
        evidence += [Evidence("timeline", wait, waited, "ms")]
    for op in row.extra_ops:
        text = f"{op.name}: {op.ms:.3f} ms per step on rank {row.rank}, {op.others_ms:.3f} ms on the others (median)"
        evidence.append(Evidence("profiler", text, op.ms - op.others_ms, "ms"))
    more = f": more {row.extra_ops[0].name}" if row.extra_ops else ""
    summary = f"rank {row.rank} is {late:.3f} ms per step behind the other ranks{more}"
    action = (
        f"give rank {row.rank} the same work as the others (its extra ops above: an uneven "
        "domain split or batch, host work only it runs); if the work is equal, compare its GPU clocks, "
        "temperature and host load with the others'"
    )
    return Finding("straggler", severity, summary, tuple(evidence), action, late)


def comm_wait(report: CrossRankReport, th: Thresholds) -> Finding | None:
    """Collective time waiting for a late rank. Gain: the longest wait per step."""
    step = _step_ms(report)
    if not step or not report.collectives:
        return None
    waiting = sorted((r for r in report.rows if th.severity(r.wait_ms / step)), key=lambda r: -r.wait_ms)
    if not waiting:
        return None
    worst = waiting[0]
    latest = max(report.rows, key=lambda r: r.late_share)
    evidence = []
    for r in waiting[:MAX_LISTED_RANKS]:
        text = f"rank {r.rank}: {r.wait_ms:.3f} of {r.comm_ms:.3f} ms per step inside collectives spent waiting"
        evidence.append(Evidence("timeline", text, r.wait_ms, "ms"))
    text = (
        f"last to arrive: rank {latest.rank} ({latest.late_share:.0%} of "
        f"{report.collectives} matched {report.comm_source} collectives)"
    )
    evidence.append(Evidence("timeline", text, latest.late_share, "fraction"))
    also = f" ({len(waiting) - 1} more ranks wait too)" if len(waiting) > 1 else ""
    summary = f"rank {worst.rank} waits {worst.wait_ms:.3f} ms per step inside collectives for a late rank{also}"
    action = (
        "make the ranks arrive together: fix the straggler (uneven work, host load, a slower "
        "GPU); the wait is not communication and a faster interconnect will not remove it"
    )
    return Finding("comm_wait", th.severity(worst.wait_ms / step), summary, tuple(evidence), action, worst.wait_ms)


def comm_not_overlapped(report: CrossRankReport, th: Thresholds) -> Finding | None:
    """Communication with no compute alongside, waits excluded. Gain (upper bound): that time per step."""
    step = _step_ms(report)
    if not step or not report.collectives:
        return None
    exposed = {r.rank: max(r.exposed_comm_ms - r.wait_ms, 0.0) for r in report.rows}
    row = max(report.rows, key=lambda r: exposed[r.rank])
    gain = exposed[row.rank]
    severity = th.severity(gain / step)
    if severity is None:
        return None
    evidence = []
    for r in sorted(report.rows, key=lambda r: -exposed[r.rank])[:MAX_LISTED_RANKS]:
        text = f"rank {r.rank}: {r.comm_ms:.3f} ms per step inside collectives, {r.exposed_comm_ms:.3f} ms with no "
        text += f"compute alongside, {r.wait_ms:.3f} ms of it waiting for peers"
        evidence.append(Evidence("timeline", text, exposed[r.rank], "ms"))
    summary = f"{gain:.3f} ms per step of communication on rank {row.rank} runs with no compute alongside"
    action = (
        "overlap communication with compute: issue collectives with async_op=True and wait "
        "where the result is used; split the work so interior cells compute while halos or buckets move"
    )
    return Finding("comm_not_overlapped", severity, summary, tuple(evidence), action, gain)


DETECTORS = (straggler, comm_wait, comm_not_overlapped)


def cross_rank_findings(report: CrossRankReport | None, th: Thresholds = DEFAULT_THRESHOLDS) -> list[Finding]:
    """Every cross-rank detector on ``report`` (None: a single rank, no findings), ranked."""
    if report is None:
        return []
    return rank_findings([f for detector in DETECTORS if (f := detector(report, th)) is not None])


def merge_rank_findings(per_rank: list[list[Finding]]) -> list[Finding]:
    """One finding per kind over the ranks: the most severe, largest gain (called the worst only when no other rank
    ties it), its config naming the other ranks too."""
    by_kind = grouped((f for findings in per_rank for f in findings), lambda f: f.kind)
    merged = []

    def key(f: Finding) -> tuple:
        return SEVERITIES.index(f.severity), -(f.estimated_gain_ms or 0.0)

    for group in by_kind.values():
        worst = min(group, key=key)
        others = [f.config for f in group if f is not worst and f.config]
        if others:
            listed = ", ".join(others[:MAX_LISTED_RANKS]) + (" ..." if len(others) > MAX_LISTED_RANKS else "")
            tied = sum(key(f) == key(worst) for f in group) > 1  # no rank worse by severity or gain: none "worst"
            worst = dataclasses.replace(worst, config=f"{worst.config} ({'' if tied else 'worst; '}also {listed})")
        merged.append(worst)
    return rank_findings(merged)
