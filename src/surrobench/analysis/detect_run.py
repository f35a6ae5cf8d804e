"""Detectors across the configs of a run: memory_pressure (batch list), superlinear_scaling (shape
ladder), precision_mismatch (precisions). The course's section 4 rows "批量增大吞吐不升反降" and
"某算子耗时随形状超线性增长"; section 2's normalization example (0.3 -> 4 ms for 4x FLOPs).
"""

from __future__ import annotations

from collections import defaultdict

from surrobench.analysis.findings import Evidence, Finding
from surrobench.analysis.ops import OpTable
from surrobench.analysis.thresholds import Thresholds
from surrobench.results.schema import ConfigResult

_CUFFT_HALF = "powers of two"  # cuFFT's error for a half-precision FFT of another size


def _groups(results: list[ConfigResult], key) -> dict[tuple, list[ConfigResult]]:
    groups = defaultdict(list)
    for r in results:
        groups[key(r)].append(r)
    return groups


def memory_pressure(results: list[ConfigResult], th: Thresholds, device_memory_bytes: int | None) -> list[Finding]:
    """Per (model, shape, precision, mode): throughput falling from one batch to the next, an OOM at a
    larger batch, peak memory near the device's, or the allocator reserving far more than it allocated."""
    found = []
    for group in _groups(results, lambda r: (r.model, r.shape_label, r.precision, r.device, r.mode)).values():
        group.sort(key=lambda r: r.batch)
        for small, large in zip(group, group[1:]):
            if small.status != "ok":
                continue
            if large.status == "oom":
                found.append(Finding("memory_pressure", "high", f"out of memory at batch {large.batch}",
                                     (Evidence("run", f"batch {small.batch} ok, batch {large.batch} OOM: {large.error}"),),
                                     "serve at most batch {}; tile the domain (chunked inference) or lower the precision"
                                     .format(small.batch), None, large.label()))  # fmt: skip
            elif large.status == "ok" and small.samples_per_s and large.samples_per_s:
                drop = 1 - large.samples_per_s / small.samples_per_s
                if drop > th.throughput_drop_min:
                    ev = (Evidence("run", f"{small.samples_per_s:.0f} samples/s at batch {small.batch}, "
                                   f"{large.samples_per_s:.0f} at batch {large.batch}", drop, "fraction"),)
                    found.append(Finding("memory_pressure", th.severity(drop) or "low", f"throughput falls {drop:.0%} "
                                         f"from batch {small.batch} to {large.batch}", ev + _memory_evidence(large),
                                         "keep the smaller batch, or find the cause in the peak memory (allocator, "
                                         "workspace); tile large inputs", None, large.label()))  # fmt: skip
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
        return Finding("memory_pressure", "medium", f"peak memory at {share:.0%} of the device", _memory_evidence(r),
                       "a larger batch or grid will not fit: tile the domain or lower the precision", None, r.label())
    reserved = r.peak_reserved_bytes or 0
    if reserved >= th.reserved_min_bytes and reserved > th.reserved_over_allocated * r.peak_mem_bytes:
        return Finding("memory_pressure", "low", f"allocator reserves {reserved / r.peak_mem_bytes:.1f}x what it allocates",
                       _memory_evidence(r), "allocator churn or a large workspace: check cudnn.benchmark workspaces, "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", None, r.label())  # fmt: skip
    return None


def precision_mismatch(results: list[ConfigResult], th: Thresholds) -> list[Finding]:
    """fp16/bf16 configs slower than the fp32 config of the same model, shape, batch and mode (gain: the
    difference), and half-precision configs that failed on cuFFT's power-of-2 rule."""
    found = []
    for group in _groups(results, lambda r: (r.model, r.shape_label, r.batch, r.device, r.mode)).values():
        fp32 = next((r for r in group if r.precision == "fp32" and r.status == "ok"), None)
        for r in group:
            if r.precision not in ("fp16", "bf16"):
                continue
            if r.status == "error" and r.error and _CUFFT_HALF in r.error:
                found.append(Finding("precision_mismatch", "high", f"{r.precision} fails: FFT size not a power of 2",
                                     (Evidence("run", r.error),), "pad the grid to a power of 2 or keep the FFTs in "
                                     "fp32 (cast around them)", None, r.label()))  # fmt: skip
            elif fp32 is not None and r.status == "ok" and r.latency_ms and fp32.latency_ms:
                slower = r.latency_ms.median / fp32.latency_ms.median - 1
                if slower > th.precision_slower_min:
                    gain = r.latency_ms.median - fp32.latency_ms.median
                    ev = (Evidence("run", f"{r.precision} {r.latency_ms.median:.3f} ms vs fp32 {fp32.latency_ms.median:.3f} "
                                   "ms (median)", slower, "fraction"),)  # fmt: skip
                    found.append(Finding("precision_mismatch", th.severity(gain / r.latency_ms.median) or "low",
                                         f"{r.precision} is {slower:.0%} slower than fp32", ev, "stay in fp32 here (casts and "
                                         "launches outweigh the faster math), or remove the casts: cast weights once, "
                                         "feed half inputs", gain, r.label()))  # fmt: skip
    return found


def _points(r: ConfigResult) -> float:
    return r.points_per_sample() or 1.0


def superlinear_scaling(results: list[ConfigResult], tables: dict[tuple, OpTable], th: Thresholds,
                        flops: dict[tuple, dict[str, int]]) -> list[Finding]:  # fmt: skip
    """Across adjacent ladder rungs (same model, batch, precision, mode), ops whose time ratio exceeds
    ``superlinear_ratio`` times their FLOP ratio. FLOPs per op from the FLOP counter where it counted
    some at both rungs, else the ratio of the primary input's elements (linear work per element)."""
    found = []
    profiled = [r for r in results if r.status == "ok" and r.key() in tables]
    for group in _groups(profiled, lambda r: (r.model, r.batch, r.precision, r.device, r.mode)).values():
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
    ev = (Evidence("profiler", f"{name}: {t_small:.3f} ms at {small.label()}, {t_large:.3f} ms at {large.label()}",
                   t_large / t_small, "x"),
          Evidence("profiler", f"FLOPs (or elements) grow {ratio:.1f}x, time {t_large / t_small:.1f}x", ratio, "x"))
    return Finding("superlinear_scaling", th.severity(gain / step) or "low", f"{name} grows {t_large / t_small:.1f}x for "
                   f"{ratio:.1f}x the work", ev, "look for a slow path at the large shape (extra kernel launches, "
                   "non-coalesced access): try channels-last (NHWC), a fused implementation, or tiling", gain,
                   large.label())  # fmt: skip
