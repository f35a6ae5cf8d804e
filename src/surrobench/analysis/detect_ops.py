"""Detectors of operator kinds: memory_bound, compute_bound, fragmented_ops, the per-config precision_mismatch,
matmul_precision (GEMM/conv/attention kernels of a GPU config in fp32 with TF32 off) and ceiling_suspect.

With a roofline (:mod:`surrobench.analysis.roofline`) an op is bound by its intensity against the ridge; without
one, by its family (normalization, elementwise, reduction, copy, gather: O(1) FLOP/byte, memory-bound below any
GPU ridge of tens of FLOP/byte). On a CPU basis op times are less the profiler's cost
(:func:`surrobench.analysis.evidence.deflate`), tiny low-intensity calls (< ``cpu_small_call_us``) are fragmented,
not memory-bound, and actions are CPU remedies. Ops past a ceiling beyond ``calibration_stale_ratio``
are left to :func:`ceiling_suspect`: such an op means the ceiling is too low (a machine cannot beat its roofline:
Williams et al., CACM 52(4), 2009), or for the copy bandwidth that its data stays in cache."""

from __future__ import annotations

from surrobench.analysis.evidence import ConfigEvidence, per_call_us
from surrobench.analysis.evidence_checks import PROFILE_RATIO_MAX, check_step
from surrobench.analysis.detect_host import free_cores
from surrobench.analysis.op_families import THREADS, enclosing_op, family_actions, family_of, is_copy, low_intensity
from surrobench.analysis.op_families import pairwise, words
from surrobench.analysis.op_readings import TINY_CALLS, fragments, read_fragmentation, read_memory, small_calls
from surrobench.analysis.roofline import SuspectCeiling, ceiling_share, format_gbps, format_ridge, format_tflops
from surrobench.analysis.thresholds import Thresholds
from surrobench.records.findings import GAIN_UNKNOWN, OP_SHARE, Clause, Evidence, Finding, clauses_of
from surrobench.records.ceilings import calibrate_command
from surrobench.records.kernels import MATMUL_CLASSES
from surrobench.records.ops import VIEWS, categorize
from surrobench.records.vocab import HALF_PRECISIONS

COMPUTE = ("gemm/matmul/einsum", "convolution", "attention")
#: Whether a CPU run judges memory-boundness: the one rule profile's reading 3 and :func:`memory_bound` both state.
CPU_MEMORY = "on a CPU, memory-bound by op family (O(1) FLOP/byte), gain unknown until its copy bandwidth is calibrated"


def _op_ms(ev: ConfigEvidence) -> dict[str, tuple[str, float, float]]:
    """``{name: (category, ms per step, share)}`` of every op row, CPU times less the profiler's (``ev.ops``)."""
    ms = ev.ops.ms_per_step()
    return {op.name: (op.category, ms[op.name], op.share) for op in ev.ops.ops}


def _time_note(ev: ConfigEvidence) -> list[Evidence]:
    """On a CPU basis, what the op times are (less the profiler's cost, scaled, or as profiled) as evidence: the ratio
    of the op time kept to the op time profiled (1: nothing scaled, the profiled step no slower than the timed one)."""
    if not ev.on_cpu() or not ev.op_table.total_us:  # no op time: nothing to say of it
        return []
    profiled, timed = ev.profiled_step_ms, ev.timed_ms
    kept = ev.ops.total_us / ev.op_table.total_us
    text = "op times are self CPU times under the profiler (no unprofiled step to remove its overhead)"
    if timed and profiled:
        gap = f"profiler overhead {profiled / timed - 1:+.0%}" if profiled > timed else f"{profiled / timed:.2f}x timed"
        scaled = f"scaled by {kept:.2f} to the unprofiled step" if kept < 1 else "not scaled"
        if each := per_call_us(ev.op_table, profiled, timed):  # else no slower, or beyond the bound: one factor
            scaled = f"less the profiler's {each:.2f} us a recorded call"
        text = f"op times {scaled}: profiled step {profiled:.3f} ms vs timed {timed:.3f} ms ({gap})"
    return [Evidence("profiler", text, kept, "ratio")]


def _share_min(ev: ConfigEvidence, th: Thresholds) -> float:
    """An op's least share of op time to be named bound: ``bound_op_share_min``, over the step ratio of a CPU profile
    slower than :func:`~surrobench.analysis.evidence_checks.check_step` allows (an op may show a ratio-th of its share)."""
    ratio = check_step(ev.label, ev.profiled_step_ms, ev.timed_ms).step_ratio or 1.0
    return th.bound_op_share_min / ratio if ratio > PROFILE_RATIO_MAX and ev.on_cpu() else th.bound_op_share_min


def _bound_ops(ev: ConfigEvidence, th: Thresholds, bound: str):
    """Roofline ops with the given bound and at least :func:`_share_min` of the time."""
    return [o for o in ev.roofline.ops if o.bound == bound and o.share >= _share_min(ev, th)]


def _intensity_text(o, ridge: float, knn: bool = False) -> str:
    """``"0.42 FLOP/byte < ridge 12.3"``, or ``"FLOPs unknown (a <family> op)"`` when no formula counts them."""
    if o.intensity is None:
        family = family_of(o.name, knn)  # knn: :func:`~surrobench.analysis.op_families.pairwise`
        return f"FLOPs unknown ({family.name if family else 'no'} op, O(1) FLOP/byte)"
    return f"{o.intensity:.2f} FLOP/byte < ridge {format_ridge(ridge)}"


def memory_bound(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Head ops below the ridge (or low-intensity); gain: time above the bandwidth roof; families' action. Where
    every one reaches under ``parallelism_bound_fraction`` of the roof, the summary says bandwidth is not the limit
    (the kind stays, for the readers that key on it)."""
    step = ev.step_ms()
    if not step or (ev.roofline is None and ev.op_table is None):
        return None
    ops = []
    # CPU basis: many tiny calls are fragmented ops (fragmented_ops), not bandwidth-bound ones
    if ev.roofline is not None:  # per call from the roofline's time, which holds unseen ops of its category
        ops = [
            o
            for o in _bound_ops(ev, th, "memory")
            if not (ev.on_cpu() and o.calls and o.time_ms * 1e3 / o.calls < th.cpu_small_call_us)
            and categorize(o.name) != VIEWS
        ]
        h2d = ev.facts.h2d_ms if ev.facts is not None else 0.0  # copy ops whose time is mostly (>= half)
        ops = [o for o in ops if not (is_copy(o.name) and h2d > 0 and h2d >= 0.5 * o.time_ms)]  # host-to-device: H2D's
        rows = [(o.name, o.time_ms, o.share) for o in ops]
        gain = sum(o.gain_ms for o in ops if o.gain_ms is not None)
        copy = f"{ev.roofline.ceilings.copy_gbps:.0f} GB/s"
        ridge, stale, knn = ev.roofline.ridge_flop_per_byte, th.calibration_stale_ratio, pairwise(ev.op_table)
        texts = [f"{o.name}: {_intensity_text(o, ridge, knn)}, {format_gbps(o.achieved_gbps)} GB/s = " for o in ops]
        evidence = [
            Evidence("roofline", t + ceiling_share(o.ceiling_fraction, copy, stale), o.ceiling_fraction, "fraction")
            for t, o in zip(texts, ops)
        ]
    else:
        small = small_calls(ev.ops, th.cpu_small_call_us)
        rows = [
            (n, ms, s)
            for n, (c, ms, s) in _op_ms(ev).items()
            if low_intensity(n) and s >= _share_min(ev, th) and n not in small and categorize(n) != VIEWS
        ]
        command = calibrate_command("cpu", ev.result.extra.get("threads") if ev.result is not None else None)
        why = f"{CPU_MEMORY} ({command})" if ev.on_cpu() else "gain unknown: no roofline (no FLOP count or ceilings)"
        gain, evidence = None, [Evidence("roofline", why, None, GAIN_UNKNOWN)]
    if not rows:
        return None
    time_ms = sum(ms for _, ms, _ in rows)
    severity = th.severity((time_ms if gain is None else gain) / step)
    if severity is None:
        return None
    evidence = [
        Evidence("profiler", f"{n}: {s:.0%} of op time, {ms:.3f} ms per step", s, OP_SHARE) for n, ms, s in rows
    ] + evidence
    if ev.op_table is not None:
        for c in read_memory(ev.op_table).candidates:
            text = f"{c['name']}: {c['mem_share']:.0%} of memory allocated for {c['time_share']:.0%} of time"
            evidence.append(Evidence("profiler", text, c["mem_share"], "fraction"))
    if ev.facts is not None:
        text = f"GPU busy {ev.facts.busy_share:.0%} of the profiled window"
        evidence.append(Evidence("timeline", text, ev.facts.busy_share, "fraction"))
    evidence += _time_note(ev)
    names = [n for n, _, _ in rows]
    fewer_bytes = (
        "move fewer bytes: fuse the ops with their neighbours (torch.compile), or lower activations' precision"
    )
    action = family_actions(names, cpu=ev.on_cpu(), table=ev.op_table) or (Clause(fewer_bytes, ("compile",)),)
    under = th.parallelism_bound_fraction
    starved = [o.name for o in ops if o.ceiling_fraction is not None and o.ceiling_fraction < under]
    if starved:
        roof = "memory-copy bandwidth" if ev.on_cpu() else "copy bandwidth"
        text = f"{', '.join(starved[:3])} reach under {under:.0%} of the {roof}: more bandwidth would not help"
        action = clauses_of(text, action)
    summary = f"{time_ms:.3f} ms per step in memory-bound ops ({', '.join(names[:3])})"
    if starved and len(starved) == len(ops):  # below the ridge, yet far under the roof: bandwidth is not the limit
        summary = f"{time_ms:.3f} ms per step in low-intensity ops ({', '.join(names[:3])}) far under the bandwidth "
        summary += "roof (latency or dispatch, not bandwidth)"
    return Finding(
        "memory_bound", severity, summary, tuple(evidence), action, gain, ev.label, evidence_source="estimated"
    )


def compute_bound(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Head ops above the ridge (or a GEMM/conv majority: every such op summed, however small); ``info`` near the
    peak, else the gap to it as gain."""
    step = ev.step_ms()
    if not step:
        return None
    r = ev.result  # a reduced precision's action names fp32 (docs/design.md, where the remedies are listed: why)
    back = Clause(f"try fp32 instead of {r.precision}", ("fp32",)) if r is not None and r.precision != "fp32" else ""
    if ev.roofline is None:
        if ev.op_table is None:
            return None
        rows = [(n, s) for n, (c, _, s) in _op_ms(ev).items() if c in COMPUTE]  # the family's total: every op's
        share = sum(s for _, s in rows)
        if share < th.compute_share_min:
            return None
        floor = _share_min(ev, th)
        head = [(n, s) for n, s in rows if s >= floor] or rows  # named one by one, the others in one line
        evidence = tuple(Evidence("profiler", f"{n}: {s:.0%} of op time", s, OP_SHARE) for n, s in head)
        if rest := share - sum(s for _, s in head):
            text = f"other GEMM/convolution ops, each under {floor:.0%}: {rest:.0%} of op time"
            evidence += (Evidence("profiler", text, rest, OP_SHARE),)
        summary = f"GEMM/convolution ops hold {share:.0%} of the op time (no roofline to compare with the peak)"
        action = family_actions([n for n, _ in head], cpu=ev.on_cpu(), table=ev.op_table)  # measured: none calibrated
        half = "" if back or any("bf16" in c.remedies for c in action) else Clause("bf16 autocast", ("bf16",))
        action = clauses_of(action, half, "run surrobench calibrate, then diagnose: how near the peak they run", back)
        return Finding("compute_bound", "info", summary, evidence, action, None, ev.label, evidence_source="estimated")
    # past the peak by more than the calibration's spread: the ceiling is wrong (ceiling_suspect), no verdict
    ops = [o for o in _bound_ops(ev, th, "compute") if o.ceiling_fraction <= th.calibration_stale_ratio]
    if not ops:
        return None
    roof, cpu = ev.roofline, ev.on_cpu()
    peak = f"{format_tflops(roof.ceilings.peak_tflops(roof.precision))} TFLOP/s ({roof.precision})"
    evidence = []
    for o in ops:
        text = f"{o.name}: {o.intensity:.0f} FLOP/byte >= ridge {format_ridge(roof.ridge_flop_per_byte)}, "
        text += f"{format_tflops(o.achieved_tflops)} TFLOP/s = "
        text += ceiling_share(o.ceiling_fraction, peak, th.calibration_stale_ratio)
        evidence.append(Evidence("roofline", text, o.ceiling_fraction, "fraction"))
    evidence += _time_note(ev)
    fraction = sum(o.time_ms * o.ceiling_fraction for o in ops) / sum(o.time_ms for o in ops)
    # The target is compute_efficient_fraction of the peak, not the peak: the peak is a large square GEMM's,
    # which a convolution with few channels cannot reach whatever the user does. Severity follows that gain.
    gain = sum(max(o.time_ms * (1 - o.ceiling_fraction / th.compute_efficient_fraction), 0.0) for o in ops)
    severity = th.severity(gain / step) if fraction < th.compute_efficient_fraction else None
    at = ceiling_share(fraction, f"the {roof.precision} matmul peak", th.calibration_stale_ratio)
    summary = f"compute-bound ops at {at}"
    if cpu:
        room = (got := free_cores(ev)) is not None and got[0] < got[2]  # the peak is that thread count's
        action = _cpu_compute_action(roof, severity or "info", [o.name for o in ops], room)
    elif severity is None:
        faster = Clause("to go faster lower the precision (tf32, bf16) or the FLOPs", ("tf32", "bf16"))
        action = clauses_of("healthy near the peak", faster)
    else:
        action = family_actions([o.name for o in ops])
    gain, severity = (None, "info") if severity is None else (gain, severity)
    action = clauses_of(action, back)
    return Finding(
        "compute_bound", severity, summary, tuple(evidence), action, gain, ev.label, evidence_source="estimated"
    )


def _cpu_compute_action(roof, severity: str, names: list[str], room: bool = False) -> tuple[Clause, ...]:
    """The CPU compute-bound action: the families' CPU actions, and bf16 autocast only where calibrated bf16 beats fp32;
    near the peak, "use every core" while torch's threads are fewer than the free cores (``room``): the calibrated
    peak is its thread count's."""
    rates = roof.ceilings.matmul_tflops
    bf16, fp32 = rates.get("bf16", 0.0), rates.get("fp32", 0.0)
    faster = roof.precision in ("fp32", "tf32") and bf16 > fp32 > 0
    text = f"bf16 autocast (this CPU's calibrated bf16 matmul: {format_tflops(bf16)} vs fp32 {format_tflops(fp32)}"
    half = Clause(text + " TFLOP/s)", ("bf16",)) if faster else ""
    if severity == "info":
        return clauses_of("healthy near the peak", THREADS if room else "", "to go faster cut the FLOPs", half)
    action = family_actions(names, cpu=True)  # bf16 once: an im2col convolution's family names it
    return clauses_of(action, "" if any("bf16" in c.remedies for c in action) else half)


def fragmented_ops(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Elementwise + copy + concat at ``fragmented_share``, and tiny CPU calls; stake: their ms, no gain."""
    step = ev.step_ms()
    if ev.op_table is None or not step or not ev.op_table.total_us:
        return None
    t = ev.ops
    reading = read_fragmentation(t, th.cpu_small_call_us)
    share = reading.share
    if share < th.fragmented_share:
        return None
    time_ms = share * t.total_us / t.active_steps / 1e3
    severity = th.severity(time_ms / step)
    if severity is None:
        return None
    extra, cpu = reading.by_category.get(TINY_CALLS, 0.0), ev.on_cpu()
    text = f"elementwise/copy/concat ops hold {share - extra:.0%} of op time"
    text += f" in calls under {th.cpu_small_call_us:g} us" if cpu else ""
    text += f" and tiny calls of other low-intensity ops {extra:.0%}: {share:.0%} in all" if extra else ""
    evidence = [Evidence("profiler", text, share, OP_SHARE)]
    if k := reading.kernel_count:
        n, us = reading.small_kernel_count, reading.small_kernel_us
        evidence.append(Evidence("profiler", f"{n} of {k} kernels shorter than {us:g} us", n, "kernels"))
    small = small_calls(t, th.cpu_small_call_us)
    for name, (calls, us) in list(small.items())[:3]:  # in the table's order: by share; never read as the bound
        each = f"{us:.1f}" if round(us, 1) < th.cpu_small_call_us else f"{int(us * 100) / 100:.2f}"
        text = f"{name}: {calls:.0f} calls per step, {each} us each (a small call, under {th.cpu_small_call_us:g} us)"
        evidence.append(Evidence("profiler", text, calls, "calls"))
    if ev.timeline is not None and ev.timeline.launches is not None:
        median = ev.timeline.launches.kernel_us_median
        evidence.append(Evidence("timeline", f"kernel median {median:.1f} us", median, "us"))
    names = list(fragments(t, th.cpu_small_call_us))
    if enclosing := enclosing_op(t, names):
        text = f"{enclosing[1]:.0%} of their self CPU time is copies inside {enclosing[0]}"
        evidence.append(Evidence("profiler", text, enclosing[1], "fraction"))
    # copies inside one op: change how it is called; the families' remedies stay, measured: channels_last ran that
    # FNO 1.96x (docs/benchmarks/cpu-fragments.md)
    action = family_actions(names[:5], cpu=cpu, table=t)
    if small and enclosing is None:
        action += (Clause("fewer, larger calls (a larger batch; no per-call casts or copies in the step)"),)
    evidence += _time_note(ev)
    what = "small ops (many calls, little time each)" if cpu else "small elementwise/copy/concat ops"
    return Finding(
        "fragmented_ops", severity, f"{share:.0%} of op time in {what}", tuple(evidence), action, None, ev.label
    )


def hot_op(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """The op holding the most op time (self time, as :func:`_op_ms`), at least ``severity_high_fraction`` of it (the
    smallest loss to act on first), of no op family (:func:`family_of`: category other; a collective is left to the
    cross-rank findings): where the step's time is though no family's remedies read it (a trial's
    ``linalg_lu_factor_ex`` at 45%). Its action reads its calls per step and ms per call: a call under
    ``cpu_small_call_us`` (device basis: the table's ``small_kernel_us``) costs mostly its dispatch, so fewer calls;
    a longer one, its work on its input shapes (where recorded). Stake: its time; gain unknown, at most its time."""
    top = ev.ops.top_op() if ev.op_table is not None else None
    if not ev.step_ms() or top is None or top.share < th.severity_high_fraction or not top.calls:
        return None
    if family_of(top.name) is not None or top.category == "communication":
        return None
    ms = _op_ms(ev)[top.name][1]
    if (severity := th.severity(ms / ev.step_ms())) is None:
        return None
    calls = top.calls / ev.ops.active_steps
    each = ms / calls
    shapes = f" on inputs {', '.join(top.input_shapes[:2])}" if top.input_shapes else ""
    summary = f"the step's time is in {top.name}: {top.share:.0%} of op time over {calls:.3g} calls a step"
    if each * 1e3 < (short_us := ev.ops.small_kernel_us or th.cpu_small_call_us):
        action = f"call {top.name} fewer times (one call on the operands stacked): {calls:.3g} calls a step, "
        action += f"{each * 1e3:.1f} us each (< {short_us:g} us), are mostly {'dispatch' if ev.on_cpu() else 'launch'}"
    else:
        action = f"compute {top.name} a cheaper way: its {each:.3f} ms a call{shapes} is its work, not its call "
        action += "(a method for this structure or size, smaller operands, its result reused where they repeat)"
    action += f"; at most its own {ms:.3f} ms a step to save (an estimate: its time; no op family's remedies read it)"
    evidence = (
        Evidence("profiler", f"{top.name}: {top.share:.0%} of op time, {ms:.3f} ms per step", top.share, OP_SHARE),
        Evidence("profiler", f"{top.name}: {calls:.3g} calls per step", calls, "calls per step"),
        Evidence("profiler", f"{top.name}: {each:.3f} ms per call{shapes}", each, "ms per call"),
    )
    return Finding("hot_op", severity, summary, evidence + tuple(_time_note(ev)), action, None, ev.label)


def autocast_precision(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Under autocast: GEMM/conv FLOPs left fp32/complex64, FFTs cuFFT cannot halve. Stake: their time."""
    r, step = ev.result, ev.step_ms()
    if r is None or r.precision not in HALF_PRECISIONS or not step:
        return None
    evidence, time_ms = [], 0.0
    if ev.roofline is not None:
        flops = sum(o.flops or 0 for o in ev.roofline.ops) or 1
        wide = [o for o in ev.roofline.ops if o.flops and not {"float16", "bfloat16"} & set(o.dtypes)]
        if sum(o.flops for o in wide) / flops >= th.fp32_under_autocast_share:
            time_ms += sum(o.time_ms for o in wide)
            for o in wide:
                text = f"{o.name} runs in {'/'.join(o.dtypes)}: {o.flops / flops:.0%} of FLOPs"
                evidence.append(Evidence("roofline", text, o.flops / flops, "fraction"))
    odd = [d for d in r.input_shape[2:] if not (d > 0 and d & (d - 1) == 0)]
    if ev.ops is not None and ev.ops.category_shares.get("fft", 0.0) > 0 and odd:
        fft = ev.ops.category_shares["fft"]
        time_ms += fft * ev.ops.total_us / ev.ops.active_steps / 1e3
        text = f"FFT ops hold {fft:.0%} of op time on sizes {odd}, not powers of 2: {words(r.device).half_fft}"
        evidence.append(Evidence("profiler", text, fft, "fraction"))
    severity = th.severity(time_ms / step) if evidence else None
    if severity is None:
        return None
    summary = f"{time_ms:.3f} ms per step of {r.precision} config still in full precision"
    action = "cast those ops explicitly (or keep them fp32 knowingly); pad FFT sizes to powers of 2; compare against "
    action += "the fp32 config before adopting half precision"
    return Finding(
        "precision_mismatch", severity, summary, tuple(evidence), action, None, ev.label, evidence_source="estimated"
    )


def _matmul_shares(ev: ConfigEvidence) -> tuple[dict[str, float], str]:
    """``({class: share of device time}, source)`` of GEMM/conv/attention: kernel classes, else op categories."""
    if ev.kernel_table is not None and ev.kernel_table.total_us > 0:
        shares = ev.kernel_table.class_shares()
        return {c: shares[c] for c in MATMUL_CLASSES if shares.get(c)}, "kernel classes"
    names, shares = dict(zip(COMPUTE, MATMUL_CLASSES)), dict.fromkeys(MATMUL_CLASSES, 0.0)
    for op in ev.op_table.ops:  # categorized again: a table stored before the attention category has "other"
        category = categorize(op.name)
        if category in names:
            shares[names[category]] += op.share
    return {c: s for c, s in shares.items() if s}, "op categories"


def matmul_precision(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """fp32 GEMM/conv/attention at ``compute_share_min`` of device time, tensor cores idle. Stake: their ms."""
    r, step = ev.result, ev.step_ms()
    if r is None or r.precision != "fp32" or ev.on_cpu() or ev.op_table is None or ev.op_table.basis != "device":
        return None
    shares, source = _matmul_shares(ev)
    share = sum(shares.values())
    if share < th.compute_share_min or not step:
        return None
    time_ms = share * ev.op_table.total_us / ev.op_table.active_steps / 1e3
    severity = th.severity(time_ms / step)
    if severity is None:
        return None
    evidence = [
        Evidence("profiler", f"{c} kernels: {s:.0%} of device time ({source})", s, "fraction")
        for c, s in shares.items()
    ]
    tf32 = "run the matmuls on the tensor cores: --precision tf32 keeps fp32 storage (torch.backends.cuda.matmul"
    half = "bf16 or fp16 autocast (--precision bf16) runs GEMMs and convolutions at the tensor-core rate"
    action = (Clause(tf32 + ".allow_tf32, torch.backends.cudnn.allow_tf32)", ("tf32",)), Clause(half, HALF_PRECISIONS))
    ops = {op.name for op in ev.op_table.ops if op.share > 0}
    if "attention" in shares:
        fused = sorted(op for op in ops if categorize(op) == "attention")
        names = ", ".join(fused[:2]) or "attention kernels"
        text = f"attention runs fused ({names}): in bf16/fp16 SDPA can take FlashAttention"
        action += (Clause(text, HALF_PRECISIONS),)
    elif ops & {"aten::softmax", "aten::_softmax"}:  # attention written out: matmuls beside a softmax, not fused
        action += (Clause("attention written as matmul + softmax: use F.scaled_dot_product_attention (fused)"),)
    summary = f"{share:.0%} of device time in fp32 GEMM/convolution/attention kernels with TF32 off"
    return Finding("matmul_precision", severity, summary, tuple(evidence), action, None, ev.label)


DETECTORS = (memory_bound, compute_bound, fragmented_ops, autocast_precision, matmul_precision, hot_op)


def _rate(suspect: SuspectCeiling, value: float) -> str:
    return f"{value:.0f} GB/s" if suspect.ceiling == "copy" else f"{format_tflops(value)} TFLOP/s"


def _name(suspect: SuspectCeiling) -> str:
    return "copy bandwidth" if suspect.ceiling == "copy" else f"{suspect.precision} matmul peak"


def ceiling_suspect(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Ceilings ``ev``'s ops exceed (``suspect_ceilings``); None if none. Severity ``low``, no gain."""
    roof = ev.roofline
    if roof is None:
        return None
    suspects = roof.suspect_ceilings(th.calibration_stale_ratio, th.bound_op_share_min)
    if not suspects:
        return None
    c = roof.ceilings
    when = f"calibrated {c.measured}" if c.measured else c.note
    texts = [f"{', '.join(s.ops[:3])}: {_rate(s, s.achieved)} = {s.ratio:.1f}x the {_name(s)}" for s in suspects]
    evidence = tuple(
        Evidence("roofline", f"{t} {_rate(s, s.calibrated)} ({when})", s.ratio, "ratio")
        for t, s in zip(texts, suspects)
    )
    names = " and the ".join(_name(s) for s in suspects)
    top = max(suspects, key=lambda s: s.ratio)
    threads = ev.result.extra.get("threads") if ev.result is not None else None  # a config's --threads
    command = calibrate_command("cpu", threads) if ev.on_cpu() else "surrobench calibrate"
    action = f"re-run {command} on an idle machine, then diagnose again"
    if any(s.ceiling == "copy" for s in suspects):
        action += "; if the new copy bandwidth holds, those ops' bytes stay in cache (counted here from memory)"
    summary = f"the calibrated {names} is suspect: {', '.join(top.ops[:3])} measured {top.ratio:.1f}x it; no roofline "
    summary += "verdict against it"
    return Finding("ceiling_suspect", "low", summary, evidence, action, None, ev.label)
