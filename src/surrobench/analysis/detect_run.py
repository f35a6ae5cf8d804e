"""Detectors across the configs of a run: memory_pressure (batch list), superlinear_scaling (shape
ladder), precision_mismatch (precisions). the method's §4 (docs/sources.md) rows "批量增大吞吐不升反降" and
"某算子耗时随形状超线性增长"; section 2's normalization example (0.3 -> 4 ms for 4x FLOPs).
"""

from __future__ import annotations

from surrobench.analysis.op_families import family_actions, words
from surrobench.analysis.thresholds import Thresholds
from surrobench.execution.failures import recorded_cause
from surrobench.records.findings import Evidence, Finding, clauses_of
from surrobench.records.ops import OpTable
from surrobench.records.paired import PairedSamples, Speedup
from surrobench.records.run import ConfigResult, grouped
from surrobench.records.vocab import HALF_PRECISIONS


def _per_sample_speedup(small: ConfigResult, large: ConfigResult) -> Speedup | None:
    """The paired rule's :class:`~surrobench.records.paired.Speedup` of ``large``'s per-sample latency (ms / B)
    over ``small``'s, the two runs drawn as separate sides (> 1: the larger batch costs less per sample); None
    without positive samples on both sides."""
    if not (small.samples_ms and large.samples_ms) or min(*small.samples_ms, *large.samples_ms) <= 0:
        return None
    per = lambda r: [[s / r.batch for s in r.samples_ms]]  # noqa: E731
    return PairedSamples.separate(per(small), per(large)).speedup()


def _throughput_fall(
    small: ConfigResult, large: ConfigResult, th: Thresholds, memory_bytes: int | None
) -> Finding | None:
    """Throughput falling by more than ``throughput_drop_min`` from ``small`` to ``large`` batch and beyond the noise
    (:meth:`~surrobench.records.paired.Speedup.slower` of the per-sample latency), with the larger batch's peak at
    ``pressure_mem_share`` of the device's ``memory_bytes`` or more (unknown: no finding)."""
    if not (small.samples_per_s and large.samples_per_s):
        return None
    drop = 1 - large.samples_per_s / small.samples_per_s
    if drop <= th.throughput_drop_min or (speedup := _per_sample_speedup(small, large)) is None or not speedup.slower():
        return None
    if not memory_bytes or (large.peak_mem_bytes or 0) < th.pressure_mem_share * memory_bytes:
        return None  # a fall with the memory far from its limit is not memory pressure (a busy host, a cache)
    lo, hi = speedup.ci95
    text = f"{small.samples_per_s:.0f} samples/s at batch {small.batch}, {large.samples_per_s:.0f} at batch "
    text += (
        f"{large.batch}: per-sample speedup {speedup.median:.2f}x (95% CI {lo:.2f}-{hi:.2f}, {speedup.margin_text()})"
    )
    evidence = (Evidence("run", text, drop, "fraction"), *_memory_evidence(large))
    summary = f"throughput falls {drop:.0%} from batch {small.batch} to {large.batch}, beyond the noise"
    action = "keep the smaller batch, or find the cause in the peak memory (allocator, workspace); tile large inputs"
    return Finding("memory_pressure", th.severity(drop) or "low", summary, evidence, action, None, large.label())


def memory_pressure(results: list[ConfigResult], th: Thresholds, device_memory_bytes: int | None) -> list[Finding]:
    """Per (model, shape, precision, mode), each needing a memory signal, never a dip alone: an OOM at a larger
    batch; a throughput fall (:func:`_throughput_fall`); peak memory near the device's; allocator retries (a failed
    cudaMalloc that flushed the cache); the allocator reserving far more than it allocated."""
    found = []
    for group in grouped(results, lambda r: (r.model, r.shape_label, r.precision, r.device, r.mode)).values():
        group.sort(key=lambda r: r.batch)
        for small, large in zip(group, group[1:]):
            if small.status != "ok":
                continue
            if large.status == "oom":
                evidence = (Evidence("run", f"batch {small.batch} ok, batch {large.batch} OOM: {large.error}"),)
                action = (
                    f"serve at most batch {small.batch}; tile the domain (chunked inference) or lower the precision"
                )
                summary = f"out of memory at batch {large.batch}"
                found.append(Finding("memory_pressure", "high", summary, evidence, action, None, large.label()))
            elif large.status == "ok" and (fall := _throughput_fall(small, large, th, device_memory_bytes)) is not None:
                found.append(fall)
        found += [f for r in group if (f := _near_limit_or_churn(r, th, device_memory_bytes)) is not None]
    return found


def _memory_evidence(r: ConfigResult) -> tuple[Evidence, ...]:
    if not r.peak_mem_bytes:
        return ()
    reserved = f", reserved {r.peak_reserved_bytes / 2**20:.0f} MiB" if r.peak_reserved_bytes else ""
    return (Evidence("run", f"peak allocated {r.peak_mem_bytes / 2**20:.0f} MiB{reserved}", r.peak_mem_bytes, "bytes"),)


def _near_limit_or_churn(r: ConfigResult, th: Thresholds, device_memory_bytes: int | None) -> Finding | None:
    if r.status != "ok" or not r.peak_mem_bytes:
        return None
    if device_memory_bytes and r.peak_mem_bytes >= th.peak_mem_near_limit * device_memory_bytes:
        share = r.peak_mem_bytes / device_memory_bytes
        action = "a larger batch or grid will not fit: tile the domain or lower the precision"
        summary = f"peak memory at {share:.0%} of the device"
        return Finding("memory_pressure", "medium", summary, _memory_evidence(r), action, None, r.label())
    if retries := r.extra.get("alloc_retries") or 0:
        stats = Evidence("run", f"num_alloc_retries {retries} (torch.cuda.memory_stats)", retries, "retries")
        action = (
            "memory is nearly full: each retry frees cached blocks and synchronizes; lower the batch or precision, or "
        )
        summary = f"the allocator retried {retries} allocation(s) after freeing its cache"
        evidence = (*_memory_evidence(r), stats)
        return Finding(
            "memory_pressure", "medium", summary, evidence, action + words(r.device).allocator, None, r.label()
        )
    reserved = r.peak_reserved_bytes or 0
    if reserved >= th.reserved_min_bytes and reserved > th.reserved_over_allocated * r.peak_mem_bytes:
        cudnn = "" if r.device == "cpu" else "check cudnn.benchmark workspaces, "
        action = f"allocator churn or a large workspace: {cudnn}{words(r.device).allocator}"
        summary = f"allocator reserves {reserved / r.peak_mem_bytes:.1f}x what it allocates"
        return Finding("memory_pressure", "low", summary, _memory_evidence(r), action, None, r.label())
    return None


#: Failure causes (:data:`surrobench.execution.failures.FAILURE_CAUSES`) that say a half precision is not
#: available for the model's FFTs, and the clause each adds to the finding's summary.
_FFT_PRECISION_CAUSES = {
    "fft_no_bf16": "bf16 is not available for this model's FFTs",
    "fft_no_half": "fp16 is not available for this model's FFTs on this device",
    "fft_half_size": "fp16 FFTs need power-of-2 sizes",
}


def precision_mismatch(results: list[ConfigResult], th: Thresholds) -> list[Finding]:
    """fp16/bf16 configs slower than the fp32 config of the same model, shape, batch and mode (gain: the
    difference), and one finding per such group for the half precisions its FFTs cannot run
    (:data:`_FFT_PRECISION_CAUSES`; no gain: the config did not run)."""
    found = []
    for group in grouped(results, lambda r: (r.model, r.shape_label, r.batch, r.device, r.mode)).values():
        fp32 = next((r for r in group if r.precision == "fp32" and r.status == "ok"), None)
        found += _fft_precision_failures(group)
        for r in group:
            if r.precision not in HALF_PRECISIONS or fp32 is None or r.status != "ok":
                continue
            if not (r.latency_ms and fp32.latency_ms):
                continue
            half, full = r.latency_ms.median, fp32.latency_ms.median
            slower = half / full - 1
            if slower > th.precision_slower_min:
                text = f"{r.precision} {half:.3f} ms vs fp32 {full:.3f} ms (median)"
                evidence = (Evidence("run", text, slower, "fraction"),)
                action = f"stay in fp32 here (casts and extra {words(r.device).unit}s outweigh the faster math), "
                action += "or remove the casts: cast weights once, feed half inputs"
                severity = th.severity((half - full) / half) or "low"
                summary = f"{r.precision} is {slower:.0%} slower than fp32"
                found.append(Finding("precision_mismatch", severity, summary, evidence, action, half - full, r.label()))
    return found


def _fft_precision_failures(group: list[ConfigResult]) -> list[Finding]:
    """One ``low`` finding for the half-precision configs of ``group`` that failed in the FFT library; the
    evidence keeps each original error, the action is each cause's explained line."""
    failed = [
        (r, cause)
        for r in group
        if r.status == "error"
        and r.precision in HALF_PRECISIONS
        and (cause := recorded_cause(r.error, r.extra)).cause_id in _FFT_PRECISION_CAUSES
    ]
    if not failed:
        return []
    causes = dict.fromkeys(cause for _, cause in failed)  # each cause once, in order
    summary = "; ".join(_FFT_PRECISION_CAUSES[c.cause_id] for c in causes)
    evidence = tuple(Evidence("run", f"{r.precision} failed: {r.error}") for r, _ in failed)
    action = "; ".join(c.line for c in causes)
    return [Finding("precision_mismatch", "low", summary, evidence, action, None, failed[0][0].label())]


def capture_failures(results: list[ConfigResult]) -> list[Finding]:
    """A ``host_sync`` finding for each CUDA-graph config whose capture failed on a host synchronization
    (cause ``graph_capture_sync``): the forward synchronizes, which also blocks the launch-bound cure."""
    found = []
    for r in results:
        if r.status != "error" or r.mode != "cudagraph":
            continue
        cause = recorded_cause(r.error, r.extra)
        if cause.cause_id == "graph_capture_sync":
            evidence = (Evidence("run", f"cudagraph failed: {r.error}"),)
            summary = "CUDA graph capture fails: the forward synchronizes the host"
            found.append(Finding("host_sync", "low", summary, evidence, cause.line, None, r.label()))
    return found


def _points(r: ConfigResult) -> float:
    return r.points_per_sample() or 1.0


def superlinear_scaling(
    results: list[ConfigResult], tables: dict[tuple, OpTable], th: Thresholds, flops: dict[tuple, dict[str, int]]
) -> list[Finding]:
    """Across adjacent ladder rungs (same model, batch, precision, mode), ops whose time ratio exceeds
    ``superlinear_ratio`` times their FLOP ratio. FLOPs per op from the FLOP counter where it counted
    some at both rungs, else the ratio of the primary input's elements (linear work per element)."""
    found = []
    profiled = [r for r in results if r.status == "ok" and r.key() in tables]
    for group in grouped(profiled, lambda r: (r.model, r.batch, r.precision, r.device, r.mode)).values():
        group.sort(key=_points)
        for small, large in zip(group, group[1:]):
            a, b = tables[small.key()].ms_per_step(), tables[large.key()].ms_per_step()
            fa, fb = flops.get(small.key(), {}), flops.get(large.key(), {})
            worst = None
            for name in a.keys() & b.keys():
                ratio = fb[name] / fa[name] if fa.get(name) and fb.get(name) else _points(large) / _points(small)
                if a[name] <= 0 or b[name] < th.superlinear_min_ms or ratio <= 1:
                    continue
                excess = (b[name] / a[name]) / ratio
                if excess >= th.superlinear_ratio and (worst is None or b[name] - a[name] * ratio > worst[1]):
                    worst = (name, b[name] - a[name] * ratio, ratio, a[name], b[name])
            if worst is not None:
                found.append(_superlinear_finding(worst, small, large, th))
    return found


def _superlinear_finding(worst: tuple, small: ConfigResult, large: ConfigResult, th: Thresholds) -> Finding:
    name, gain, ratio, t_small, t_large = worst
    step = large.latency_ms.median if large.latency_ms else t_large
    times = f"{name}: {t_small:.3f} ms at {small.label()}, {t_large:.3f} ms at {large.label()}"
    grow = t_large / t_small
    evidence = (
        Evidence("profiler", times, grow, "x"),
        Evidence("profiler", f"FLOPs (or elements) grow {ratio:.1f}x, time {grow:.1f}x", ratio, "x"),
    )
    slow_path = f"look for a slow path at the large shape ({words(large.device).slow_path}): tile the domain"
    action = clauses_of(slow_path, family_actions([name], cpu=large.device == "cpu"))
    summary = f"{name} grows {grow:.1f}x for {ratio:.1f}x the work"
    return Finding(
        "superlinear_scaling", th.severity(gain / step) or "low", summary, evidence, action, gain, large.label()
    )
