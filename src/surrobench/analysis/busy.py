"""Busy and idle time per device, per profiled step and per range. Busy is the union of kernel, copy and memset
intervals (docs/design.md, "Timeline model"): ``gpu_busy_ms`` inside the range's window, ``gpu_time_ms`` of the
GPU ops launched inside it (charged to the range that issued them)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import GpuActivity
from surrobench.records import intervals
from surrobench.trace.model import Timeline


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
    busy, launched = _range_gpu(tl, act, st.start_ns, st.end_ns, st.rank)
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
    busy, launched = _range_gpu(tl, act, rg.start_ns, rg.end_ns, rg.rank)
    window_ns = sum(t1 - t0 for t0, t1 in windows.values())
    acc = defaultdict(lambda: [0, 0, 0, 0])
    for name_id, d, b, g in zip(rg.name_id.tolist(), rg.dur_ns.tolist(), busy.tolist(), launched.tolist()):
        a = acc[name_id]
        a[0] += 1
        a[1] += d
        a[2] += b
        a[3] += g
    return tuple(
        sorted(
            (
                RangeShare(
                    name=tl.name(k),
                    count=c,
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


def _range_gpu(
    tl: Timeline, act: GpuActivity, start: np.ndarray, end: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
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
