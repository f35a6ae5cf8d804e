"""Many rank traces: each loaded in a worker (:func:`~surrobench.trace.parallel.map_rank_traces`: local processes or
a Dask cluster) and reduced by :func:`rank_analysis`; the caller aligns the ranks
(:func:`~surrobench.analysis.cross_rank.cross_rank_report`) and adds the cross-rank findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from surrobench.analysis.cross_rank import CrossRankReport, cross_rank_report
from surrobench.analysis.detect_ranks import cross_rank_findings, merge_rank_findings
from surrobench.analysis.gaps import DEFAULT_GAP_THRESHOLD_NS
from surrobench.analysis.rank_summary import RankSummary, rank_summary
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.analysis.timeline import TimelineReport, analyze_timeline
from surrobench.records import schemas
from surrobench.records.findings import Finding, rank_findings
from surrobench.trace.model import Timeline
from surrobench.trace.parallel import map_rank_traces, rank_trace_files


@dataclass(frozen=True)
class RankAnalysis:
    """One rank: its timeline report, its own findings (``config`` = ``"rank R"``) and its summary."""

    rank: int
    timeline: TimelineReport
    findings: tuple[Finding, ...]
    summary: RankSummary


@dataclass(frozen=True)
class RankTraces:
    """Every rank's analysis, the cross-rank comparison (None for one rank) and all findings, ranked."""

    ranks: tuple[RankAnalysis, ...]
    cross_rank: CrossRankReport | None
    findings: tuple[Finding, ...]

    def to_json(self) -> dict:
        """``surrobench/rank-traces-v4``: each rank's timeline report, the cross-rank report, the findings."""
        return {
            "schema": schemas.RANK_TRACES,
            "ranks": [
                {"rank": r.rank, "timeline": r.timeline.to_dict(), "findings": [f.to_json() for f in r.findings]}
                for r in self.ranks
            ],
            "cross_rank": self.cross_rank.to_dict() if self.cross_rank is not None else None,
            "findings": [f.to_json() for f in self.findings],
        }


def rank_trace_set(paths: Sequence[Path]) -> list[Path] | None:
    """The rank trace files when ``paths`` (files or folders) hold more than one Kineto trace, else None (one timeline).

    Raises:
        UsageError: a missing path, a folder without traces, a file named twice.
    """
    if len(paths) == 1 and not Path(paths[0]).is_dir():
        return None
    files = rank_trace_files(list(paths))
    return files if len(files) > 1 else None


def rank_analysis(
    tl: Timeline,
    th: Thresholds = DEFAULT_THRESHOLDS,
    *,
    diagnose: bool = True,
    gap_threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS,
) -> RankAnalysis:
    """Runs in the worker on one rank's timeline: its timeline report, its findings (``diagnose``; the
    diagnosis reads gaps at the default threshold) and its :class:`RankSummary`."""
    rank = tl.meta.ranks[0]
    if diagnose:
        # here, not above: the diagnosis imports torch (the roofline's FLOP counter), `analyze` needs none
        from surrobench.analysis.diagnose import diagnose_config, trace_evidence

        ev = trace_evidence(tl, label=f"rank {rank}")
        report, findings = ev.timeline, tuple(diagnose_config(ev, th))
    else:
        report, findings = analyze_timeline(tl, gap_threshold_ns=gap_threshold_ns), ()
    return RankAnalysis(rank, report, findings, rank_summary(tl))


def analyze_rank_traces(
    paths: Path | str | Sequence[Path | str],
    th: Thresholds = DEFAULT_THRESHOLDS,
    *,
    diagnose: bool = True,
    gap_threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS,
    workers: int | None = None,
    dask_scheduler: str | None = None,
) -> RankTraces:
    """Analyze a folder of ``rank*.json(.gz)`` files or a list of files (each with ``distributedInfo.rank``), one
    worker per rank trace at a time. ``diagnose``: also each rank on its own with thresholds ``th`` (its findings
    merged per kind over the ranks; the cross-rank findings come either way); ``gap_threshold_ns``: shortest gap
    listed otherwise; ``workers``, ``dask_scheduler``: as :func:`~surrobench.trace.parallel.map_rank_traces`.

    Raises:
        UsageError: a bad path or trace, duplicate ranks, a worker out of memory, Dask unreachable.
    """
    job = partial(rank_analysis, th=th, diagnose=diagnose, gap_threshold_ns=gap_threshold_ns)
    ranks = tuple(map_rank_traces(paths, job, workers=workers, dask_scheduler=dask_scheduler))
    cross = cross_rank_report([r.summary for r in ranks]) if len(ranks) > 1 else None
    own = merge_rank_findings([list(r.findings) for r in ranks])
    return RankTraces(ranks, cross, tuple(rank_findings(own + cross_rank_findings(cross, th))))
