"""Every analyzer over one :class:`Timeline` (as HTA): busy, gaps, launches, streams, and trace checks."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import gpu_activity
from surrobench.analysis.busy import DeviceBusy, RangeShare, StepBusy, analysis_windows, device_busy, range_shares
from surrobench.analysis.busy import step_busy
from surrobench.analysis.gaps import DEFAULT_GAP_THRESHOLD_NS, GapReport, find_gaps
from surrobench.analysis.launches import LaunchStats, launch_stats
from surrobench.analysis.streams import CommStats, SerialPair, StreamBusy, comm_stats, stream_stats
from surrobench.records import schemas
from surrobench.trace.model import Timeline, load_warnings

MAX_ANOMALY_EXAMPLES = 5
#: Runtime and driver calls that launch one kernel each (CUDA Runtime / Driver API reference:
#: cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel, cuLaunchKernel, cuLaunchKernelEx ...).
_KERNEL_LAUNCH = re.compile(r"^cu(?:da)?Launch(?:Cooperative)?Kernel")

STATUS_MESSAGES = {
    "ok": "",
    "gpu_activities_missing": "GPU activities missing (CUPTI?): the trace shows a CUDA run (CUDA API calls "
    "or device properties) but no kernel, copy or memset; re-profile with "
    "ProfilerActivity.CUDA and check that CUPTI is available",
    "cpu_only": "no GPU activity and no sign of a CUDA run: a CPU-only trace, nothing to say about GPU idle time",
    "empty": "the trace holds no events this analysis reads",
    "durations_missing": "no GPU activity carries a duration ('dur'): busy time, idle time and gaps cannot be "
    "measured; re-export the trace",
}


@dataclass(frozen=True)
class Anomalies:
    """Things in the trace that should not be there; listed, never fatal."""

    overlapping_ops_same_stream: int
    zero_duration_ops: int
    negative_duration_events: int
    ops_without_launch: int
    examples: tuple[str, ...]
    trace: dict[str, int]  # what the loader could not take as written (TraceMeta.anomalies, LOAD_ANOMALIES)
    launches_without_kernel: int = 0  # kernel launch calls whose correlation id no GPU op carries


@dataclass(frozen=True)
class TimelineReport:
    """Everything :func:`analyze_timeline` found. ``to_dict()`` gives the ``--json`` document."""

    schema: str
    source: str
    paths: tuple[str, ...]
    ranks: tuple[int, ...]
    status: str
    message: str
    devices: tuple[DeviceBusy, ...]
    steps: tuple[StepBusy, ...]
    ranges: tuple[RangeShare, ...]
    gaps: GapReport | None
    launches: LaunchStats | None
    streams: tuple[StreamBusy, ...]
    serialized_streams: tuple[SerialPair, ...]
    comm: CommStats | None
    anomalies: Anomalies
    event_counts: dict[str, int]
    #: What the trace lost on its way (:func:`trace_warnings`); any makes the headline numbers ``repaired``.
    warnings: tuple[str, ...] = ()
    repaired: bool = False

    def to_dict(self) -> dict:
        """Plain dict/list/str/number structure (``json.dumps``-able)."""
        return dataclasses.asdict(self)


def analyze_timeline(tl: Timeline, gap_threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS) -> TimelineReport:
    """Every timeline analysis on ``tl`` (gaps from ``gap_threshold_ns``); never raises on odd traces."""
    act = gpu_activity(tl)
    status = _status(tl, act)
    windows = analysis_windows(tl, act)
    has_gpu = status == "ok"
    streams, serial = stream_stats(act) if has_gpu else ((), ())
    anomalies = _anomalies(tl, act)
    warnings = tuple(trace_warnings(tl, anomalies))
    return TimelineReport(
        schema=schemas.TIMELINE,
        source=tl.meta.source,
        paths=tl.meta.paths,
        ranks=tl.meta.ranks,
        status=status,
        message=STATUS_MESSAGES[status],
        devices=device_busy(tl, act, windows),
        steps=step_busy(tl, act),
        ranges=range_shares(tl, act, windows),
        gaps=find_gaps(tl, act, windows, gap_threshold_ns) if has_gpu else None,
        launches=launch_stats(tl, act) if has_gpu else None,
        streams=streams,
        serialized_streams=serial,
        comm=comm_stats(act) if has_gpu else None,
        anomalies=anomalies,
        event_counts=dict(tl.meta.event_counts),
        warnings=warnings,
        repaired=bool(warnings),
    )


def trace_warnings(tl: Timeline, anomalies: Anomalies | None = None) -> list[str]:
    """One line per loader repair and for launches without kernels; ``anomalies``: of ``tl`` if known."""
    lines = load_warnings(tl.meta.anomalies)
    lost = (anomalies or _anomalies(tl, gpu_activity(tl))).launches_without_kernel
    if lost:
        launches = int(tl.name_mask(tl.api_calls.name_id, _KERNEL_LAUNCH.match).sum())
        lines.append(
            f"{lost} of {launches} kernel launches have no kernel in the trace ({launches} launches, "
            f"{len(tl.kernels)} kernels): kernel count, busy share and gaps are understated"
        )
    return lines


def _status(tl: Timeline, act) -> str:
    if len(act) and tl.meta.anomalies.get("events_without_duration") and not (act.end_ns > act.start_ns).any():
        return "durations_missing"
    if len(act):
        return "ok"
    if tl.meta.cuda_run or len(tl.api_calls):
        return "gpu_activities_missing"
    return "cpu_only" if len(tl.cpu_ops) or len(tl.ranges) or len(tl.steps) else "empty"


def _anomalies(tl: Timeline, act) -> Anomalies:
    """Overlapping ops on one stream, zero/negative durations, GPU ops with no launch call."""
    order = np.lexsort((act.start_ns, act.stream, act.device, act.rank))
    key = np.stack([act.rank[order], act.device[order], act.stream[order]])
    same = (key[:, 1:] == key[:, :-1]).all(axis=0) if order.size > 1 else np.zeros(0, dtype=bool)
    s, e = act.start_ns[order], act.end_ns[order]
    overlap = same & (s[1:] < e[:-1])
    tables = (tl.kernels, tl.memcpy, tl.memset, tl.api_calls, tl.cpu_ops, tl.ranges, tl.steps)
    negative = sum(int((t.dur_ns < 0).sum()) for t in tables)
    examples = [
        f"stream {int(act.stream[order[i + 1]])}: '{tl.name(act.name_id[order[i + 1]])}' starts "
        f"{(e[i] - s[i + 1]) / 1e3:.3f} us before '{tl.name(act.name_id[order[i]])}' ends"
        for i in np.flatnonzero(overlap)[:MAX_ANOMALY_EXAMPLES].tolist()
    ]
    launches = tl.name_mask(tl.api_calls.name_id, _KERNEL_LAUNCH.match) & (tl.api_calls.correlation >= 0)
    launches[act.launch[act.launch >= 0]] = False
    return Anomalies(
        launches_without_kernel=int(launches.sum()),
        overlapping_ops_same_stream=int(overlap.sum()),
        zero_duration_ops=int((act.end_ns == act.start_ns).sum()),
        negative_duration_events=negative,
        ops_without_launch=int((act.launch < 0).sum()),
        examples=tuple(examples),
        trace=dict(tl.meta.anomalies),
    )
