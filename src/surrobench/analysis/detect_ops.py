"""Detectors of operator kinds: memory_bound, compute_bound, fragmented_ops, and the per-config
precision_mismatch (compute ops left in fp32 under autocast; FFTs half precision cannot take).

With a roofline (:mod:`surrobench.analysis.roofline`) an op is memory- or compute-bound by its arithmetic
intensity against the ridge point. Without one (a trace alone, a stored run), by its category: normalization,
elementwise, reduction, copy and gather ops do O(1) FLOPs per byte and are memory-bound on any GPU whose ridge
lies at tens of FLOP/byte (H200: 51e12 / 4184e9 = 12 FLOP/byte at fp32, 187 at bf16).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surrobench.analysis.findings import Evidence, Finding
from surrobench.analysis.op_readings import read_fragmentation, read_memory
from surrobench.analysis.thresholds import Thresholds

if TYPE_CHECKING:
    from surrobench.analysis.diagnose import ConfigEvidence

LOW_INTENSITY = ("normalization", "elementwise/activation", "reduction", "copy/cast/contiguous",
                 "concat/index/gather/scatter", "memcpy/memset")  # fmt: skip
COMPUTE = ("gemm/matmul/einsum", "convolution")
HALF = ("fp16", "bf16")


def _op_ms(ev: ConfigEvidence) -> dict[str, tuple[str, float, float]]:
    """``{name: (category, ms per step, share)}`` of the op table rows at or above no threshold."""
    t = ev.op_table
    per_step = t.active_steps * 1e3
    return {op.name: (op.category, (op.self_device_us if t.basis == "device" else op.self_cpu_us) / per_step, op.share)
            for op in t.ops}  # fmt: skip


def _bound_ops(ev: ConfigEvidence, th: Thresholds, bound: str):
    """Roofline ops with the given bound and at least ``bound_op_share_min`` of the time."""
    return [o for o in ev.roofline.ops if o.bound == bound and o.share >= th.bound_op_share_min]


def memory_bound(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Head ops below the ridge point. Stake: their time per step; gain: their time above the bandwidth
    roof (roofline), None without a roofline."""
    step = ev.step_ms()
    if not step or (ev.roofline is None and ev.op_table is None):
        return None
    if ev.roofline is not None:
        ops = _bound_ops(ev, th, "memory")
        rows = [(o.name, o.time_ms, o.share) for o in ops]
        gain = sum(o.gain_ms for o in ops)
        evidence = [Evidence("roofline", f"{o.name}: {o.intensity:.2f} FLOP/byte < ridge "
                             f"{ev.roofline.ridge_flop_per_byte:.1f}, {o.achieved_gbps:.0f} GB/s = {o.ceiling_fraction:.0%} "
                             f"of {ev.roofline.ceilings.copy_gbps:.0f} GB/s", o.ceiling_fraction, "fraction") for o in ops]
    else:
        rows = [(n, ms, s) for n, (c, ms, s) in _op_ms(ev).items() if c in LOW_INTENSITY and s >= th.bound_op_share_min]
        gain, evidence = None, []
    if not rows:
        return None
    time_ms = sum(ms for _, ms, _ in rows)
    severity = th.severity(time_ms / step)
    if severity is None:
        return None
    evidence = [Evidence("profiler", f"{n}: {s:.0%} of op time, {ms:.3f} ms per step", s, "fraction")
                for n, ms, s in rows] + evidence  # fmt: skip
    if ev.op_table is not None:
        evidence += [Evidence("profiler", f"{c['name']}: {c['mem_share']:.0%} of memory allocated for {c['time_share']:.0%} "
                              "of time", c["mem_share"], "fraction") for c in read_memory(ev.op_table).candidates]
    if ev.facts is not None:
        evidence.append(Evidence("timeline", f"GPU busy {ev.facts.busy_share:.0%} of the profiled window",
                                 ev.facts.busy_share, "fraction"))
    names = ", ".join(n for n, _, _ in rows[:3])
    action = ("move fewer bytes: fuse the op with its neighbours (torch.compile), use a fused/channels-last "
              "(NHWC) implementation, or lower the precision of activations")  # fmt: skip
    starved = [o.name for o in (ops if ev.roofline is not None else ()) if o.ceiling_fraction < th.parallelism_bound_fraction]
    if starved:
        action += (f"; {', '.join(starved[:3])} run far below the copy bandwidth: too little parallelism (too few "
                   "thread blocks for the SMs, e.g. a per-(batch x group) reduction at batch 1): raise the batch, "
                   "or use an implementation that splits the reduction across more blocks")  # fmt: skip
    return Finding("memory_bound", severity, f"{time_ms:.3f} ms per step in memory-bound ops ({names})", tuple(evidence),
                   action, gain, ev.label)  # fmt: skip


def compute_bound(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Head ops above the ridge point (roofline), or GEMM/convolution ops holding most of the time (no
    roofline). Near the matmul peak this is the healthy verdict (``info``); below ``compute_efficient_fraction``
    of it, ``low`` with the gap to the peak as the gain (an upper bound: see the comment below)."""
    step = ev.step_ms()
    if not step:
        return None
    if ev.roofline is None:
        if ev.op_table is None:
            return None
        rows = [(n, s) for n, (c, _, s) in _op_ms(ev).items() if c in COMPUTE and s >= th.bound_op_share_min]
        share = sum(s for _, s in rows)
        if share < 0.5:
            return None
        evidence = tuple(Evidence("profiler", f"{n}: {s:.0%} of op time", s, "fraction") for n, s in rows)
        return Finding("compute_bound", "info", f"GEMM/convolution ops hold {share:.0%} of the op time (no roofline "
                       "to compare with the peak)", evidence, "run surrobench calibrate and diagnose the workload to "
                       "see how close to the peak they run", None, ev.label)  # fmt: skip
    ops = _bound_ops(ev, th, "compute")
    if not ops:
        return None
    peak = ev.roofline.ceilings.peak_tflops(ev.roofline.precision)
    evidence = tuple(Evidence("roofline", f"{o.name}: {o.intensity:.0f} FLOP/byte >= ridge {ev.roofline.ridge_flop_per_byte:.1f}, "
                              f"{o.achieved_tflops:.1f} TFLOP/s = {o.ceiling_fraction:.0%} of {peak:.1f} TFLOP/s "
                              f"({ev.roofline.precision})", o.ceiling_fraction, "fraction") for o in ops)
    fraction = sum(o.time_ms * o.ceiling_fraction for o in ops) / sum(o.time_ms for o in ops)
    gain = sum(o.gain_ms for o in ops)
    # Below the peak is at most "low": the peak is a large square GEMM's, which a convolution with few
    # channels cannot reach whatever the user does; the structural bottlenecks rank above it.
    severity = "low" if fraction < th.compute_efficient_fraction and th.severity(gain / step) else "info"
    return Finding("compute_bound", severity, f"compute-bound ops at {fraction:.0%} of the {ev.roofline.precision} "
                   "matmul peak", evidence, "healthy near the peak; to go faster lower the precision (tf32, bf16) or "
                   "the FLOPs" if severity == "info" else "reach the peak: tf32/bf16 tensor cores, aligned shapes "
                   "(multiples of 8/16), larger batch", None if severity == "info" else gain, ev.label)  # fmt: skip


def fragmented_ops(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Elementwise + copy + concat ops at or above ``fragmented_share`` of the op time (reading 2). Stake:
    their time per step; no gain estimate (a fusion's saving depends on what it fuses)."""
    step = ev.step_ms()
    if ev.op_table is None or not step or not ev.op_table.total_us:
        return None
    reading = read_fragmentation(ev.op_table)
    if reading.share < th.fragmented_share:
        return None
    time_ms = reading.share * ev.op_table.total_us / ev.op_table.active_steps / 1e3
    severity = th.severity(time_ms / step)
    if severity is None:
        return None
    evidence = [Evidence("profiler", f"elementwise/copy/concat ops hold {reading.share:.0%} of op time", reading.share,
                         "fraction")]  # fmt: skip
    if reading.kernel_count:
        evidence.append(Evidence("profiler", f"{reading.small_kernel_count} of {reading.kernel_count} kernels shorter "
                                 f"than {reading.small_kernel_us:g} us", reading.small_kernel_count, "kernels"))
    if ev.timeline is not None and ev.timeline.launches is not None:
        evidence.append(Evidence("timeline", f"kernel median {ev.timeline.launches.kernel_us_median:.1f} us",
                                 ev.timeline.launches.kernel_us_median, "us"))
    return Finding("fragmented_ops", severity, f"{reading.share:.0%} of op time in small elementwise/copy/concat ops",
                   tuple(evidence), "fuse them: torch.compile, fused kernels (e.g. conv+bias+activation), fewer "
                   ".contiguous()/cat", None, ev.label)  # fmt: skip


def _is_power_of_2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def autocast_precision(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Under fp16/bf16 autocast: GEMM/conv FLOPs still computed in fp32 or complex64 (roofline dtypes), and
    FFTs on sizes cuFFT cannot compute in half precision (powers of 2 only, cuFFT docs). Stake: those ops' time."""
    r, step = ev.result, ev.step_ms()
    if r is None or r.precision not in HALF or not step:
        return None
    evidence, time_ms = [], 0.0
    if ev.roofline is not None:
        flops = sum(o.flops for o in ev.roofline.ops) or 1
        wide = [o for o in ev.roofline.ops if o.flops and not {"float16", "bfloat16"} & set(o.dtypes)]
        if sum(o.flops for o in wide) / flops >= th.fp32_under_autocast_share:
            time_ms += sum(o.time_ms for o in wide)
            evidence += [Evidence("roofline", f"{o.name} runs in {'/'.join(o.dtypes)}: {o.flops / flops:.0%} of FLOPs",
                                  o.flops / flops, "fraction") for o in wide]  # fmt: skip
    odd = [d for d in r.input_shape[2:] if not _is_power_of_2(d)]
    if ev.op_table is not None and ev.op_table.category_shares.get("fft", 0.0) > 0 and odd:
        fft = ev.op_table.category_shares["fft"]
        time_ms += fft * ev.op_table.total_us / ev.op_table.active_steps / 1e3
        evidence.append(Evidence("profiler", f"FFT ops hold {fft:.0%} of op time on sizes {odd}, not powers of 2: cuFFT "
                                 "cannot run them in half precision", fft, "fraction"))  # fmt: skip
    severity = th.severity(time_ms / step) if evidence else None
    if severity is None:
        return None
    return Finding("precision_mismatch", severity, f"{time_ms:.3f} ms per step of {r.precision} config still in full "
                   "precision", tuple(evidence), "cast those ops explicitly (or keep them fp32 knowingly); pad FFT sizes "
                   "to powers of 2; compare against the fp32 config before adopting half precision", None, ev.label)


DETECTORS = (memory_bound, compute_bound, fragmented_ops, autocast_precision)
