"""Detectors of GPU-time kinds: launch_bound, host_sync, h2d_transfer, stream_serialization, cpu_preprocess; each
reads the timeline (:mod:`surrobench.analysis.gaps`) and quotes the profiler (docs/sources.md, method §4) and
returns one :class:`Finding` or None."""

from __future__ import annotations

import re

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.op_families import words
from surrobench.analysis.thresholds import Thresholds
from surrobench.records.findings import Clause, Evidence, Finding, clauses_of

#: Host functions of the framework, interpreter, driver or surrobench: the model's execution, not preprocessing.
_FRAMEWORK = re.compile(
    r"torch|libtorch|at::|c10::|aten|libcud|libcublas|libcudnn|libnccl|cuda|_PyEval|libpython|"
    r"\[kernel|<frozen|threading\.py|surrobench|^python|mkl|dnnl|gomp|omp_",
    re.IGNORECASE,
)


def _busy_evidence(ev: ConfigEvidence) -> list[Evidence]:
    f = ev.facts
    text = f"GPU busy {f.busy_share:.0%} of the profiled window, {f.gpu_busy_ms:.3f} ms per step"
    items = [Evidence("timeline", text, f.busy_share, "fraction")]
    if (timed := ev.timed_ms) is not None:
        items.append(Evidence("run", f"step latency {timed:.3f} ms (median, unprofiled)", timed, "ms"))
    return items


def launch_bound(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """GPU idle while the next launch call still ran. Gain: those gaps per step (capped), what a CUDA graph removes."""
    f, step = ev.facts, ev.step_ms()
    if f is None or not step or f.launch_gap_ms <= 0:
        return None
    gain = ev.idle_cap_ms(f.launch_gap_ms)
    severity = th.severity(gain / step)
    if severity is None:
        return None
    text = f"{f.launch_gap_ms:.3f} ms per step in launch-bound gaps"
    evidence = _busy_evidence(ev) + [Evidence("timeline", text, f.launch_gap_ms, "ms")]
    if ev.timeline is not None and ev.timeline.launches is not None:
        lc = ev.timeline.launches
        text = f"kernel median {lc.kernel_us_median:.1f} us vs launch call median {lc.launch_us_median:.1f} us; "
        text += f"{lc.shorter_than_launch:.0%} of kernels shorter than their launch"
        evidence.append(Evidence("timeline", text, lc.shorter_than_launch, "fraction"))
    t = ev.op_table
    if t is not None and t.kernel_count:
        text = f"{t.small_kernel_count} of {t.kernel_count} kernels shorter than {t.small_kernel_us:g} us"
        evidence.append(Evidence("profiler", text, t.small_kernel_count / t.kernel_count, "fraction"))
    action = clauses_of(
        Clause("replay the step as a CUDA graph (--mode cudagraph)", ("cudagraph",)),
        Clause("or torch.compile(mode='reduce-overhead')", ("compile-reduce-overhead",)),
        "fuse small ops",
        "give each launch more work (larger batch)",
    )
    summary = f"GPU idle {gain:.3f} ms per step waiting for kernel launches"
    return Finding("launch_bound", severity, summary, tuple(evidence), action, gain, ev.label)


def host_sync(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """The model's own syncs in the step, or (system view) under half a CPU busy while the GPU idles."""
    f, step, sys = ev.facts, ev.step_ms(), ev.system
    if f is None or not step:
        return None
    if f.model_syncs > 0:
        gain = ev.idle_cap_ms(f.model_sync_gap_ms)
        severity = th.severity(gain / step)
        if severity is None:
            return None
        where = f" in {f.sync_op}" if f.sync_op else ""
        text = f"{f.model_syncs:g} synchronizing calls per step inside forward{where}"
        evidence = _busy_evidence(ev) + [Evidence("timeline", text, f.model_syncs, "calls")]
        text = f"GPU idle {f.model_sync_gap_ms:.3f} ms per step after them"
        evidence.append(Evidence("timeline", text, f.model_sync_gap_ms, "ms"))
        summary = f"the model synchronizes {f.model_syncs:g}x per step{where}"
        action = (
            "keep values on the device (no .item()/.cpu()/print of tensors in forward); move checks out of "
            "the step or make them asynchronous"
        )
        return Finding("host_sync", severity, summary, tuple(evidence), action, gain, ev.label)
    if sys is None or sys.cpu_utilization is None or sys.cpu_utilization >= th.cpu_util_io_max:
        return None
    if f.busy_share >= th.gpu_idle_busy_max:
        return None
    severity = th.severity(1.0 - f.busy_share)
    if severity is None:
        return None
    text = f"{sys.cpu_utilization:.2f} CPUs in use on average"
    evidence = _busy_evidence(ev) + [Evidence("system", text, sys.cpu_utilization, "CPUs")]
    summary = "CPU under half busy while the GPU idles: the process waits (I/O or sync)"
    action = (
        "find the wait (perf record / py-spy of the blocked thread): file or network I/O, locks, or synchronizations"
    )
    return Finding("host_sync", severity, summary, tuple(evidence), action, None, ev.label)


def h2d_transfer(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """H2D copies in the step. Gain: copy time plus GPU idle waiting for it, per step."""
    f, step = ev.facts, ev.step_ms()
    if f is None or not step or f.h2d_bytes <= 0:
        return None
    gaps = ev.timeline.gaps
    wait = sum(c.total_ms for c in gaps.by_cause if c.cause == "h2d_copy") / f.steps if gaps else 0.0
    gain = min(f.h2d_ms + ev.idle_cap_ms(wait), step)
    severity = th.severity(gain / step)
    if severity is None:
        return None
    gbps = f.h2d_bytes / (f.h2d_ms * 1e6) if f.h2d_ms else 0.0
    pageable = f.h2d_pageable_share
    copied = f"{f.h2d_bytes / 2**20:.1f} MiB host-to-device per step in {f.h2d_ms:.3f} ms ({gbps:.1f} GB/s)"
    evidence = [
        Evidence("timeline", copied, f.h2d_ms, "ms"),
        Evidence("timeline", f"{pageable:.0%} of the bytes from pageable host memory", pageable, "fraction"),
        Evidence("timeline", f"GPU idle {wait:.3f} ms per step waiting for the copies", wait, "ms"),
    ]
    if ev.op_table is not None:
        shares = ev.op_table.category_shares
        share = shares.get("memcpy/memset", 0.0) + shares.get("copy/cast/contiguous", 0.0)
        evidence.append(Evidence("profiler", f"copy ops hold {share:.0%} of the op table's time", share, "fraction"))
    pin = "pin the host buffer (tensor.pin_memory()) and copy with non_blocking=True, "
    pinned = pin if f.h2d_pageable_share > 0.5 else ""
    summary = f"{f.h2d_ms:.3f} ms per step copying inputs from the host"
    action = (
        f"keep inputs resident on the device (build them there once); otherwise {pinned}overlap the copy with "
        "the previous step on a side stream"
    )
    return Finding("h2d_transfer", severity, summary, tuple(evidence), action, gain, ev.label)


def stream_serialization(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Two streams active together that never overlapped. Gain (upper bound): the smaller one's busy ms per step."""
    step = ev.step_ms()
    if ev.timeline is None or not ev.timeline.serialized_streams or not step:
        return None
    steps = ev.facts.steps if ev.facts else 1
    pair = max(ev.timeline.serialized_streams, key=lambda p: min(p.busy_ms))
    gain = min(pair.busy_ms) / steps
    severity = th.severity(gain / step)
    if severity is None:
        return None
    a, b = pair.streams
    busy = f"busy {pair.busy_ms[0]:.3f} and {pair.busy_ms[1]:.3f} ms"
    text = f"streams {a} and {b}: {busy}, overlapped {pair.overlap_ms:.3f} ms"
    evidence = [Evidence("timeline", text, pair.overlap_ms, "ms")]
    if ev.facts is not None:
        text = f"{ev.facts.stream_waits:g} cudaStreamWaitEvent calls per step"
        evidence.append(Evidence("timeline", text, ev.facts.stream_waits, "calls"))
    if ev.op_table is not None and ev.op_table.ops:
        top = ev.op_table.ops[0]
        text = f"op times look normal: top op {top.name} {top.share:.0%}"
        evidence.append(Evidence("profiler", text, top.share, "fraction"))
    summary = f"streams {a} and {b} run one after the other"
    action = "remove the event wait or default-stream use that orders them; wait only where data flows"
    return Finding("stream_serialization", severity, summary, tuple(evidence), action, gain, ev.label)


def cpu_preprocess(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """A non-framework host function with a large share of host samples (on a CPU, outside nn.Module calls)."""
    sys, step = ev.system, ev.step_ms()
    if sys is None or not step:
        return None
    cpu = ev.result.device == "cpu" if ev.result is not None else ev.on_cpu()
    hot = [(_host_share(h, cpu), h) for h in sys.hotspots if not _FRAMEWORK.search(h.function)]
    if not hot:
        return None
    share, spot = max(hot, key=lambda x: x[0])
    severity = th.severity(share) if share >= th.hotspot_share_min else None
    if severity is None:
        return None
    text = f"{spot.function} in {share:.0%} of host samples ({spot.source})"
    evidence = [Evidence("system", text, share, "fraction")]
    if ev.facts is not None:
        evidence += _busy_evidence(ev)[:1]
    summary = f"host function {spot.function} runs inside the step"
    action = f"move {spot.function} out of the step: {words('cpu' if cpu else 'cuda').offload}"
    return Finding("cpu_preprocess", severity, summary, tuple(evidence), action, share * step, ev.label)


def _host_share(h, cpu: bool) -> float:
    """Share of host samples in which ``h`` runs at the top of the stack (on the stack when unknown); on a ``cpu``
    device, only outside the model's forward (the whole share when that is unknown)."""
    share = h.self_share if h.self_share is not None else h.share
    if not cpu or h.model_share is None or h.share <= 0:
        return share
    return share * max(1.0 - h.model_share / h.share, 0.0)


DETECTORS = (launch_bound, host_sync, h2d_transfer, stream_serialization, cpu_preprocess)
