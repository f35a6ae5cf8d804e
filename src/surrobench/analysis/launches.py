"""Kernel launches: launch time, launch-to-start delay, which ops launch the GPU time (graph nodes apart)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from surrobench.analysis.activity import GRAPH_LAUNCH_CALLS, KERNEL, GpuActivity, call_mask, launching_op, take
from surrobench.trace.model import Timeline

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
