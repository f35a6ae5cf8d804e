"""``load_trace`` and ``analyze``: a Kineto or Nsight Systems trace as one :class:`Timeline`, and what its
timeline says (GPU busy and idle, gaps and their causes, launches, syncs, streams; across ranks for a folder
of rank traces). Behind ``surrobench analyze``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from surrobench.analysis.cross_rank import CrossRankReport, timeline_cross_rank
from surrobench.analysis.gaps import DEFAULT_GAP_THRESHOLD_NS
from surrobench.analysis.timeline import TimelineReport, analyze_timeline
from surrobench.api.rank_traces import RankTraces, analyze_rank_traces, rank_trace_set
from surrobench.errors import UsageError
from surrobench.trace import load_trace as load_trace  # a Kineto or nsys trace (file, pipe, rank folder)
from surrobench.trace.model import Timeline

# The CLI starts the readers of a large trace's pieces while its commands import (surrobench.cli.main).
from surrobench.trace.kineto_split import discard_prestarted as discard_prestarted, prestart as prestart  # noqa: E402

#: 11.6 days: any longer gap threshold could only mean "no gaps".
MAX_GAP_THRESHOLD_US = 1e12


def check_gap_threshold(gap_threshold_us: float) -> None:
    """Raise :class:`UsageError` (naming ``gap_threshold_us``) for a gap threshold (µs) that is negative, not finite
    or above :data:`MAX_GAP_THRESHOLD_US`."""
    if not math.isfinite(gap_threshold_us) or not 0 <= gap_threshold_us <= MAX_GAP_THRESHOLD_US:
        raise UsageError.bad(
            "gap_threshold_us",
            f"{gap_threshold_us}: must be a finite number of microseconds up to {MAX_GAP_THRESHOLD_US:.0e}",
        )


def analyze(timeline: Timeline, *, gap_threshold_us: float = DEFAULT_GAP_THRESHOLD_NS / 1e3) -> TimelineReport:
    """The timeline report of ``timeline``; GPU idle intervals shorter than ``gap_threshold_us`` (µs) are not
    gaps. An odd trace is no error (missing GPU activity is a status, malformed events are anomalies); a bad
    threshold is (:func:`check_gap_threshold`)."""
    check_gap_threshold(gap_threshold_us)
    return analyze_timeline(timeline, gap_threshold_ns=round(gap_threshold_us * 1e3))


@dataclass(frozen=True)
class TraceAnalysis:
    """A trace's timeline report and, for several ranks in one timeline, its cross-rank report (else None)."""

    timeline: TimelineReport
    cross_rank: CrossRankReport | None

    def to_json(self) -> dict:
        """The timeline report (``surrobench/timeline-v1``), with ``cross_rank`` beside its keys for several ranks."""
        return {**self.timeline.to_dict(), **({"cross_rank": self.cross_rank.to_dict()} if self.cross_rank else {})}


def analyze_trace(
    paths: str | Path | Sequence[str | Path],
    *,
    gap_threshold_us: float = DEFAULT_GAP_THRESHOLD_NS / 1e3,
    workers: int | None = None,
    dask_scheduler: str | None = None,
) -> TraceAnalysis | RankTraces:
    """The analysis of a trace (a file, or a folder read as one timeline: :func:`load_trace` then :func:`analyze`,
    with the cross-rank report of several ranks) or of a rank set (a folder or list of more than one rank trace:
    :class:`~surrobench.api.rank_traces.RankTraces`, each rank in a worker, ``workers`` and ``dask_scheduler`` as
    :func:`~surrobench.api.rank_traces.analyze_rank_traces`). ``gap_threshold_us``: shortest idle interval (µs)
    listed as a gap.

    Raises:
        UsageError: as :func:`load_trace`, :func:`analyze` and :func:`~surrobench.api.rank_traces.rank_trace_set`.
    """
    check_gap_threshold(gap_threshold_us)  # before reading what may be a large trace
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    rank_files = rank_trace_set(paths)
    if rank_files is not None:
        gap_ns = round(gap_threshold_us * 1e3)
        return analyze_rank_traces(
            rank_files, diagnose=False, gap_threshold_ns=gap_ns, workers=workers, dask_scheduler=dask_scheduler
        )
    timeline = load_trace(paths[0])
    return TraceAnalysis(analyze(timeline, gap_threshold_us=gap_threshold_us), timeline_cross_rank(timeline))
