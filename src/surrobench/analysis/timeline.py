"""Every analyzer over one :class:`Timeline` (as HTA): busy, gaps, kernel launches (launch time, launch-to-start
delay, which ops launch the GPU time, graph nodes apart), per-stream busy time, overlap, serialized streams
(docs/sources.md, method §3), NCCL overlap, and trace checks; per-step facts beyond the :class:`TimelineReport`
(:func:`trace_facts`): the model's own syncs, H2D copies, cross-stream waits.

Busy is the union of kernel, copy and memset intervals per device, per profiled step and per range (docs/design.md,
"Timeline model"): ``gpu_busy_ms`` inside the range's window, ``gpu_time_ms`` of the GPU ops launched inside it
(charged to the range that issued them)."""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from surrobench.analysis.activity import GRAPH_LAUNCH_CALLS, KERNEL, STREAM_WAIT_CALLS, SYNC_CALLS, GpuActivity
from surrobench.analysis.activity import call_mask, enclosing_top_level, gpu_activity, host_op_chains, launching_op
from surrobench.analysis.activity import take
from surrobench.analysis.gaps import DEFAULT_GAP_THRESHOLD_NS, GapReport, find_gaps
from surrobench.records import intervals, schemas
from surrobench.trace.model import CopyKind, HostMemory, Timeline, load_warnings


@dataclass(frozen=True)
class DeviceBusy:
    """One device over its rank's analysis window (ms)."""

    rank: int
    device: int
    name: str
    window_ms: float
    busy_ms: float
    idle_ms: float
    busy_share: float
    kernel_ms: float  # summed kernel durations (concurrent kernels count twice)
    memcpy_ms: float
    memset_ms: float


@dataclass(frozen=True)
class StepBusy:
    """One ``ProfilerStep#N``: its host duration and the GPU time it saw and launched (ms)."""

    rank: int
    step: int
    dur_ms: float
    gpu_busy_ms: float
    gpu_time_ms: float
    busy_share: float


@dataclass(frozen=True)
class RangeShare:
    """All instances of one range name (ms); ``share``: fraction of the window the range covered on the host."""

    name: str
    count: int
    dur_ms: float
    share: float
    gpu_busy_ms: float
    gpu_time_ms: float


def analysis_windows(tl: Timeline, act: GpuActivity) -> dict[int, tuple[int, int]]:
    """Per rank ``(t0_ns, t1_ns)``: the profiled steps (and GPU ops they launched), else first to last GPU op."""
    windows = {}
    launch_t = act.launch_ns
    for rank in tl.meta.ranks:
        mine = tl.steps.rank == rank
        ops = act.rank == rank
        if mine.any():
            t0, t1 = int(tl.steps.start_ns[mine].min()), int(tl.steps.end_ns[mine].max())
            late = ops & (launch_t >= t0) & (launch_t <= t1)
            t1 = max(t1, int(act.end_ns[late].max())) if late.any() else t1
        elif ops.any():
            t0, t1 = int(act.start_ns[ops].min()), int(act.end_ns[ops].max())
        else:
            continue
        windows[rank] = (t0, t1)
    return windows


def device_busy(tl: Timeline, act: GpuActivity, windows: dict[int, tuple[int, int]]) -> tuple[DeviceBusy, ...]:
    """Busy and idle time of every device inside its rank's window."""
    out = []
    for rank, device in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        if rank not in windows:
            continue
        t0, t1 = windows[rank]
        dev = (act.rank == rank) & (act.device == device) & (act.end_ns > t0) & (act.start_ns < t1)
        s, e = intervals.merge(np.maximum(act.start_ns[dev], t0), np.minimum(act.end_ns[dev], t1))
        busy = intervals.total(s, e)
        dur = (act.end_ns - act.start_ns)[dev]
        per_type = [float(dur[act.op_type[dev] == k].sum()) / 1e6 for k in range(3)]
        out.append(
            DeviceBusy(
                rank=rank,
                device=device,
                name=tl.meta.device_names.get(device, ""),
                window_ms=(t1 - t0) / 1e6,
                busy_ms=busy / 1e6,
                idle_ms=(t1 - t0 - busy) / 1e6,
                busy_share=busy / (t1 - t0) if t1 > t0 else 0.0,
                kernel_ms=per_type[0],
                memcpy_ms=per_type[1],
                memset_ms=per_type[2],
            )
        )
    return tuple(out)


def step_busy(tl: Timeline, act: GpuActivity) -> tuple[StepBusy, ...]:
    """GPU busy and launched time of every profiled step."""
    st = tl.steps
    busy, launched = _range_gpu(act, st.start_ns, st.end_ns, st.rank)
    return tuple(
        StepBusy(
            rank=int(r),
            step=int(n),
            dur_ms=d / 1e6,
            gpu_busy_ms=b / 1e6,
            gpu_time_ms=g / 1e6,
            busy_share=b / d if d > 0 else 0.0,
        )
        for r, n, d, b, g in zip(
            st.rank.tolist(), st.step.tolist(), st.dur_ns.tolist(), busy.tolist(), launched.tolist()
        )
    )


def range_shares(tl: Timeline, act: GpuActivity, windows: dict[int, tuple[int, int]]) -> tuple[RangeShare, ...]:
    """Per range name: count, host time, share of the window, GPU busy and launched time."""
    rg = tl.ranges
    busy, launched = _range_gpu(act, rg.start_ns, rg.end_ns, rg.rank)
    window_ns = sum(t1 - t0 for t0, t1 in windows.values())
    ids, first, inverse = np.unique(rg.name_id, return_index=True, return_inverse=True)
    columns = np.stack([np.ones_like(rg.dur_ns), rg.dur_ns, busy, launched], axis=1).astype(np.int64)
    sums = np.zeros((len(ids), 4), dtype=np.int64)  # per name: count, host ns, busy ns, launched ns
    np.add.at(sums, inverse.reshape(-1), columns)
    acc = {int(ids[i]): sums[i].tolist() for i in np.argsort(first, kind="stable")}  # names in the order first seen
    return tuple(
        sorted(
            (
                RangeShare(
                    name=tl.name(k),
                    count=int(c),
                    dur_ms=d / 1e6,
                    share=d / window_ns if window_ns else 0.0,
                    gpu_busy_ms=b / 1e6,
                    gpu_time_ms=g / 1e6,
                )
                for k, (c, d, b, g) in acc.items()
            ),
            key=lambda r: -r.dur_ms,
        )
    )


def _range_gpu(act: GpuActivity, start: np.ndarray, end: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(busy ns inside each window, ns of GPU ops launched inside it), per rank; shapes of ``start``."""
    busy = np.zeros(start.shape, dtype=np.int64)
    launched = np.zeros(start.shape, dtype=np.int64)
    launch_t = act.launch_ns
    dur = act.end_ns - act.start_ns
    for r in np.unique(rank).tolist():
        q, ops = rank == r, act.rank == r
        s, e = intervals.merge(act.start_ns[ops], act.end_ns[ops])
        busy[q] = intervals.busy_in(s, e, start[q], end[q])
        order = np.argsort(launch_t[ops], kind="stable")
        t, cum = launch_t[ops][order], np.concatenate(([0], np.cumsum(dur[ops][order])))
        launched[q] = cum[np.searchsorted(t, end[q], side="right")] - cum[np.searchsorted(t, start[q])]
    return busy, launched


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
    if len(act) and tl.meta.anomalies.get("events_without_duration") and not (act.end_ns > act.start_ns).any():
        status = "durations_missing"
    elif len(act):
        status = "ok"
    elif tl.meta.cuda_run or len(tl.api_calls):
        status = "gpu_activities_missing"
    else:
        status = "cpu_only" if len(tl.cpu_ops) or len(tl.ranges) or len(tl.steps) else "empty"
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
    if lost := (anomalies or _anomalies(tl, gpu_activity(tl))).launches_without_kernel:
        launches = int(tl.name_mask(tl.api_calls.name_id, _KERNEL_LAUNCH.match).sum())
        lines.append(
            f"{lost} of {launches} kernel launches have no kernel in the trace ({launches} launches, "
            f"{len(tl.kernels)} kernels): kernel count, busy share and gaps are understated"
        )
    return lines


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


TOP_OPS = 10
"""CPU ops listed by launched GPU time."""


@dataclass(frozen=True)
class OpKernels:
    """GPU time launched from one CPU op (:func:`~surrobench.analysis.activity.launching_op`)."""

    op: str
    kernels: int
    gpu_ms: float  # summed kernel durations


@dataclass(frozen=True)
class LaunchStats:
    """Launch stats without graph nodes, µs: call ``launch_us_*``, ``delay_us_*``, ``shorter_than_launch``."""

    kernels: int
    linked: int
    graph_kernels: int
    graph_launches: int
    launch_us_median: float
    launch_us_p95: float
    delay_us_median: float
    delay_us_p95: float
    kernel_us_median: float
    shorter_than_launch: float
    top_ops: tuple[OpKernels, ...]


def launch_stats(tl: Timeline, act: GpuActivity) -> LaunchStats:
    """Launch statistics of the kernels in ``act`` (shapes ``(n,)``)."""
    api = tl.api_calls
    kernels = act.op_type == KERNEL
    linked = kernels & (act.launch >= 0)
    launch = act.launch[linked]
    by_graph = call_mask(tl, GRAPH_LAUNCH_CALLS)[launch]
    single = launch[~by_graph]
    k_dur = (act.end_ns - act.start_ns)[linked][~by_graph]
    call_dur = api.dur_ns[single]
    delay = act.start_ns[linked][~by_graph] - api.start_ns[single]
    pct = lambda x, q: float(np.percentile(x, q)) / 1e3 if x.size else 0.0  # noqa: E731
    return LaunchStats(
        kernels=int(kernels.sum()),
        linked=int(linked.sum()),
        graph_kernels=int(by_graph.sum()),
        graph_launches=int(np.unique(launch[by_graph]).size),
        launch_us_median=pct(call_dur, 50),
        launch_us_p95=pct(call_dur, 95),
        delay_us_median=pct(delay, 50),
        delay_us_p95=pct(delay, 95),
        kernel_us_median=pct(k_dur, 50),
        shorter_than_launch=float((k_dur < call_dur).mean()) if k_dur.size else 0.0,
        top_ops=_top_ops(tl, act, linked),
    )


def _top_ops(tl: Timeline, act: GpuActivity, linked: np.ndarray) -> tuple[OpKernels, ...]:
    """Kernel time per launching CPU op, largest first; one op lookup per distinct launch call."""
    launch = act.launch[linked]
    dur = (act.end_ns - act.start_ns)[linked]
    calls, inverse = np.unique(launch, return_inverse=True)
    names = np.array(("",) + tl.names, dtype=object)  # index 0: no op
    inner = names[take(tl.cpu_ops.name_id, launching_op(tl, calls), -1) + 1].tolist()
    time_ns, count = defaultdict(int), defaultdict(int)
    per_call_ns = np.bincount(inverse.ravel(), weights=dur, minlength=calls.size)
    per_call_n = np.bincount(inverse.ravel(), minlength=calls.size)
    for op, ns, n in zip(inner, per_call_ns.tolist(), per_call_n.tolist()):
        if op:
            time_ns[op] += ns
            count[op] += n
    top = sorted(time_ns, key=lambda op: -time_ns[op])[:TOP_OPS]
    return tuple(OpKernels(op=op, kernels=count[op], gpu_ms=time_ns[op] / 1e6) for op in top)


SERIAL_OVERLAP_MAX = 0.05
"""A pair of streams counts as serialized when less than 5% of the smaller busy time overlaps ..."""

SERIAL_SPAN_MIN = 0.5
"""...while their active spans share at least half of the shorter one (our choice)."""


@dataclass(frozen=True)
class StreamBusy:
    """One stream: busy ms (union), ops, and busy ms overlapping another stream of its device."""

    rank: int
    device: int
    stream: int
    ops: int
    busy_ms: float
    overlap_ms: float


@dataclass(frozen=True)
class SerialPair:
    """Two streams of one device active in the same period that (almost) never overlapped."""

    rank: int
    device: int
    streams: tuple[int, int]
    busy_ms: tuple[float, float]
    overlap_ms: float


@dataclass(frozen=True)
class CommStats:
    """NCCL kernels: busy ms, share of device busy, fraction overlapping compute (1.0: hidden)."""

    busy_ms: float
    share: float
    overlapped: float


def stream_stats(act: GpuActivity) -> tuple[tuple[StreamBusy, ...], tuple[SerialPair, ...]]:
    """Per-stream busy and overlap, and serialized stream pairs, for every (rank, device)."""
    streams, pairs = [], []
    for rank, device in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        on_dev = (act.rank == rank) & (act.device == device)
        ids = np.unique(act.stream[on_dev]).tolist()
        rows = {s: on_dev & (act.stream == s) for s in ids}  # each stream's ops on the device
        sets = {s: intervals.merge(act.start_ns[mine], act.end_ns[mine]) for s, mine in rows.items()}
        for s in ids:
            others = on_dev & ~rows[s]
            overlap = intervals.intersection(sets[s], intervals.merge(act.start_ns[others], act.end_ns[others]))
            streams.append(
                StreamBusy(
                    rank=rank,
                    device=device,
                    stream=s,
                    ops=int(rows[s].sum()),
                    busy_ms=intervals.total(*sets[s]) / 1e6,
                    overlap_ms=overlap / 1e6,
                )
            )
        # A stream of NCCL kernels only waits for the compute that produces its data by design: whether that
        # communication could overlap compute is comm_not_overlapped's question, not a serialization.
        comm_only = {s for s in ids if act.is_nccl[rows[s]].all()}
        pairs += [
            p
            for a, b in combinations(ids, 2)
            if not {a, b} & comm_only and (p := _serial_pair(rank, device, a, b, sets)) is not None
        ]
    return tuple(streams), tuple(pairs)


def _serial_pair(rank: int, device: int, a: int, b: int, sets: dict) -> SerialPair | None:
    (sa, ea), (sb, eb) = sets[a], sets[b]
    if sa.size == 0 or sb.size == 0:
        return None
    busy_a, busy_b = intervals.total(sa, ea), intervals.total(sb, eb)
    span = min(ea[-1], eb[-1]) - max(sa[0], sb[0])
    shorter = min(ea[-1] - sa[0], eb[-1] - sb[0])
    overlap = intervals.intersection(sets[a], sets[b])
    if span < SERIAL_SPAN_MIN * shorter or overlap >= SERIAL_OVERLAP_MAX * min(busy_a, busy_b):
        return None
    return SerialPair(
        rank=rank, device=device, streams=(a, b), busy_ms=(busy_a / 1e6, busy_b / 1e6), overlap_ms=overlap / 1e6
    )


def comm_stats(act: GpuActivity) -> CommStats | None:
    """NCCL share and compute overlap over all devices; ``None`` when the trace has no NCCL kernel."""
    if not act.is_nccl.any():
        return None
    comm_ns = busy_ns = overlapped_ns = 0
    for key in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        dev = (act.rank == key[0]) & (act.device == key[1])
        comm = intervals.merge(act.start_ns[dev & act.is_nccl], act.end_ns[dev & act.is_nccl])
        compute = intervals.merge(act.start_ns[dev & ~act.is_nccl], act.end_ns[dev & ~act.is_nccl])
        comm_ns += intervals.total(*comm)
        busy_ns += intervals.total(*intervals.merge(act.start_ns[dev], act.end_ns[dev]))
        overlapped_ns += intervals.intersection(comm, compute)
    return CommStats(
        busy_ms=comm_ns / 1e6,
        share=comm_ns / busy_ns if busy_ns else 0.0,
        overlapped=overlapped_ns / comm_ns if comm_ns else 0.0,
    )


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


def trace_facts(tl: Timeline, report: TimelineReport) -> TraceFacts:
    """The per-step facts of ``tl``, whose :func:`~surrobench.analysis.timeline.analyze_timeline` is ``report``."""
    steps = max(len(tl.steps), 1)
    api, rows = tl.api_calls, np.flatnonzero(call_mask(tl, SYNC_CALLS))  # the model's syncs (module docstring)
    fwd = tl.ranges.take(tl.name_mask(tl.ranges.name_id, FORWARD_RANGES.__contains__))
    if len(fwd) == 0:
        syncs = rows[[bool(c) for c in host_op_chains(tl, rows)]] if rows.size else rows
    else:
        syncs = rows[enclosing_top_level(fwd, api.rank[rows], api.tid[rows], api.start_ns[rows]) >= 0]
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
