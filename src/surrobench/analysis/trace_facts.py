"""Per-step facts beyond :class:`TimelineReport`: the model's own syncs, H2D copies, cross-stream waits."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import STREAM_WAIT_CALLS, SYNC_CALLS, call_mask, enclosing_top_level, host_op_chains
from surrobench.analysis.timeline import TimelineReport
from surrobench.trace.model import CopyKind, HostMemory, Timeline

FORWARD_RANGES = frozenset({"surrobench::forward", "forward"})


@dataclass(frozen=True)
class TraceFacts:
    """Per-step averages over the profiled steps (one without steps), ms and bytes: ``step_ms`` (median, None without
    steps), busy, ``launch_bound`` and model-sync idle, model syncs and their op, H2D copies, stream waits."""

    steps: int
    step_ms: float | None
    gpu_busy_ms: float
    busy_share: float
    launch_gap_ms: float
    model_syncs: float
    sync_op: str
    model_sync_gap_ms: float
    h2d_ms: float
    h2d_bytes: float
    h2d_pageable_share: float
    stream_waits: float


def _model_sync_rows(tl: Timeline) -> np.ndarray:
    """Rows of ``tl.api_calls`` that are the model's synchronizing calls (module docstring)."""
    api = tl.api_calls
    rows = np.flatnonzero(call_mask(tl, SYNC_CALLS))
    fwd = tl.ranges.take(tl.name_mask(tl.ranges.name_id, FORWARD_RANGES.__contains__))
    if len(fwd) == 0:
        return rows[[bool(c) for c in host_op_chains(tl, rows)]] if rows.size else rows
    return rows[enclosing_top_level(fwd, api.rank[rows], api.tid[rows], api.start_ns[rows]) >= 0]


def trace_facts(tl: Timeline, report: TimelineReport) -> TraceFacts:
    """The per-step facts of ``tl``, whose :func:`~surrobench.analysis.timeline.analyze_timeline` is ``report``."""
    steps = max(len(tl.steps), 1)
    syncs = _model_sync_rows(tl)
    sync_gap_ns = report.gaps.sync_gap_ns(syncs) if report.gaps else 0
    ops = Counter(c for c in host_op_chains(tl, syncs) if c)
    cp = tl.memcpy
    h2d = cp.kind == CopyKind.H2D
    h2d_bytes = float(cp.bytes[h2d].sum())
    pageable = float(cp.bytes[h2d & (cp.host_memory == HostMemory.PAGEABLE)].sum())
    launch_gap = sum(c.total_ms for c in report.gaps.by_cause if c.cause == "launch_bound") if report.gaps else 0.0
    busy = sum(d.busy_ms for d in report.devices)
    window = sum(d.window_ms for d in report.devices)
    return TraceFacts(
        steps=steps,
        step_ms=statistics.median(s.dur_ms for s in report.steps) if report.steps else None,
        gpu_busy_ms=busy / steps,
        busy_share=busy / window if window else 0.0,
        launch_gap_ms=launch_gap / steps,
        model_syncs=syncs.size / steps,
        sync_op=ops.most_common(1)[0][0] if ops else "",
        model_sync_gap_ms=sync_gap_ns / 1e6 / steps,
        h2d_ms=float(cp.dur_ns[h2d].sum()) / 1e6 / steps,
        h2d_bytes=h2d_bytes / steps,
        h2d_pageable_share=pageable / h2d_bytes if h2d_bytes else 0.0,
        stream_waits=float(call_mask(tl, STREAM_WAIT_CALLS).sum()) / steps,
    )
