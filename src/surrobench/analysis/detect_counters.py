"""Bound findings from measured counters (:mod:`surrobench.analysis.counters`), ``evidence_source`` ``"measured (ncu)"``;
they replace a config's estimated bound findings (:func:`merge_measured`).

A verdict group holding at least :data:`MIN_SHARE` of the measured kernel time is a finding:

- ``memory`` -> ``memory_bound``; gain: half the DRAM-bound launches' time (time ~ bytes at the memory roof:
  Williams et al., CACM 52(4), 2009); actions only where the kernels admit them (fusion for fusible chains,
  channels_last for layout conversions, fused attention for attention kernels);
- ``compute`` on the FMA pipe (GEMM/attention/conv, tensor pipe idle) -> ``compute_bound``; gain: their time
  times ``1 - fp32 peak / tf32 peak``; ``compute`` near the tensor peak -> ``compute_bound``, ``info``;
- ``latency`` -> ``occupancy_bound``, action by the most frequent cause; gain: time above the memory roof.

Where fp32 convolutions hold :data:`MIN_SHARE`, torch.compile is named stacked on TF32 (:func:`_compile_clause`;
why: docs/benchmarks/h200-counters.md, "Why compile alone was slower"; ``benchmarks/compile_causes.py``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import LATENCY_CAUSES, ConfigCounters, MeasuredKernel
from surrobench.records.findings import Clause, Evidence, Finding, clauses_of
from surrobench.records.kernels import MATMUL_CLASSES
from surrobench.records.vocab import HALF_PRECISIONS as HALF

MEASURED = "measured (ncu)"
#: A group's least share of the measured kernel time to make a finding (ours: a tenth).
MIN_SHARE = 0.10
#: Below this tensor-pipe activity the tensor cores count as idle (a tenth of their cycles).
TENSOR_IDLE = 0.10
#: Kernel classes Inductor fuses with each other (Ansel et al., "PyTorch 2", ASPLOS 2024); GEMM, conv, attention and
#: FFT stay library calls (docs/benchmarks/h200-counters.md, "Why compile was slower").
FUSIBLE_CLASSES = ("elementwise", "copy", "reduction", "gather_scatter")
#: Latency causes whose action is fusion (torch.compile), where the cause's kernels are in fusible chains.
FUSION_CAUSES = ("grid_too_small", "low_occupancy", "stalls")
#: Layout-conversion kernels around a convolution (``nchwToNhwcKernel``...): what channels_last removes.
LAYOUT_KERNELS = ("nchwtonhwc", "nhwctonchw")
#: The estimated kinds a measured finding of the same config replaces.
REPLACED_KINDS = ("memory_bound", "compute_bound")
_CAUSE_ACTIONS = {
    "grid_too_small": Clause(
        "give each launch more blocks than the GPU has SMs: a larger batch, or fuse the small ops "
        "(torch.compile) so one kernel carries the work",
        ("compile",),
    ),
    "tail_wave": Clause("the last wave of blocks leaves SMs idle: a batch or tile size that fills whole waves"),
    "registers": Clause(
        "registers per thread cap the warps per SM: another kernel choice (torch.compile "
        "mode='max-autotune') or a lower precision",
        ("compile-max-autotune-no-cudagraphs",),
    ),
    "shared_memory": Clause(
        "shared memory per block caps the blocks per SM: another tile size (torch.compile mode='max-autotune')",
        ("compile-max-autotune-no-cudagraphs",),
    ),
    "low_occupancy": Clause(
        "few warps stay active though the launch allows more: fuse the short kernels into larger ones (torch.compile)",
        ("compile",),
    ),
    "stalls": Clause("warps stall on dependencies: fuse the chain of small kernels (torch.compile)", ("compile",)),
}
#: What :data:`_CAUSE_ACTIONS` adds for a cause, a clause of its own so that each clause names one kind of remedy.
_CAUSE_ALTERNATIVES = {"stalls": Clause("or capture the chain in a CUDA graph", ("cudagraph",))}
#: :data:`FUSION_CAUSES` where the cause's kernels are library kernels, which torch.compile does not fuse.
_LIBRARY_ACTIONS = {
    "grid_too_small": "give each launch more blocks than the GPU has SMs: a larger batch (library kernels, "
    "which torch.compile leaves unfused)",
    "low_occupancy": "few warps stay active though the launch allows more: a larger batch (library kernels, "
    "which torch.compile leaves unfused)",
    "stalls": "warps stall on dependencies inside library kernels: a larger batch gives each SM more independent work",
}


@dataclass(frozen=True)
class _Step:
    """What every finder of one config needs of its step (measured kernel ``total_ms``, ceilings, half, chains)."""

    total_ms: float
    ceilings: Ceilings | None
    half: tuple[str, ...]
    chains: frozenset[int]
    fp32_conv: bool


def _ms(kernels: list[MeasuredKernel]) -> float:
    return sum(k.counters.duration_ns for k in kernels) / 1e6


def _top(kernels: list[MeasuredKernel]) -> MeasuredKernel:
    return max(kernels, key=lambda k: k.counters.duration_ns)


def _where(k: MeasuredKernel) -> str:
    owner = k.op or "no op"
    return f"{k.counters.function} ({k.kernel_class or 'unjoined'}, {owner}{', ' + k.module if k.module else ''})"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _evidence(group: list[MeasuredKernel], total_ms: float, what: str) -> list[Evidence]:
    """The group's share and its longest launch's counters, each text with its number, value and unit."""
    top = _top(group)
    c = top.counters
    share = _ms(group) / total_ms
    occupancy = (
        f"its achieved occupancy {_pct(c.achieved_occupancy)} (theoretical {_pct(c.theoretical_occupancy)}, ncu)"
    )
    rows = [
        (f"{len(group)} measured launch(es) {what}: {share:.0%} of measured kernel time", share, "fraction"),
        (f"longest: {_where(top)}, {c.duration_ns / 1e3:.1f} us under ncu", c.duration_ns / 1e3, "us"),
        (f"its DRAM throughput {_pct(c.dram_of_peak)} of peak (ncu), {top.dram_gbps or 0:.0f} GB/s", c.dram_of_peak),
        (f"its SM throughput {_pct(c.sm_of_peak)} of peak (ncu)", c.sm_of_peak),
        (f"its tensor pipe {_pct(c.tensor_pipe_active)} active (ncu)", c.tensor_pipe_active),
        (f"its FMA pipe {_pct(c.fma_pipe_active)} active (ncu)", c.fma_pipe_active),
        (occupancy, c.achieved_occupancy),
    ]
    ev = [Evidence("profiler", *row) if len(row) == 3 else Evidence("profiler", *row, "fraction") for row in rows]
    if top.arithmetic_intensity is not None:
        text = f"its measured arithmetic intensity {top.arithmetic_intensity:.1f} FLOP/byte ({top.precision or 'no FLOPs'})"
        ev.append(Evidence("roofline", text, top.arithmetic_intensity, "FLOP/byte"))
    if top.achieved_tflops is not None and top.roof_tflops:
        text = f"its achieved rate {top.achieved_tflops:.2f} TFLOP/s, of a {top.roof_tflops:.1f} TFLOP/s roof"
        ev.append(Evidence("roofline", text, top.achieved_tflops, "TFLOP/s"))
    return ev


def _fma_matmul(k: MeasuredKernel) -> bool:
    return (
        k.bound == "compute"
        and k.kernel_class in MATMUL_CLASSES
        and k.precision == "fp32"
        and (k.counters.tensor_pipe_active or 0) < TENSOR_IDLE
    )


def fusible_chains(kernels: list[MeasuredKernel]) -> frozenset[int]:
    """Launch ids of :data:`FUSIBLE_CLASSES` kernels next to another fusible measured launch."""
    ordered = sorted(kernels, key=lambda k: k.counters.launch)
    fusible = [k.kernel_class in FUSIBLE_CLASSES for k in ordered]
    return frozenset(
        k.counters.launch
        for i, k in enumerate(ordered)
        if fusible[i] and ((i > 0 and fusible[i - 1]) or (i + 1 < len(ordered) and fusible[i + 1]))
    )


def _compile_clause(text: str, step: _Step) -> Clause:
    """Clause ``text`` naming torch.compile, stacked on TF32 where fp32 convolutions hold a share."""
    if not step.fp32_conv:
        return Clause(text, ("compile",))
    why = ", with TF32 on: in fp32, Inductor's layout optimization runs the convolutions channels_last, where cuDNN"
    return Clause(f"{text}{why} picks slower fp32 kernels", ("tf32", "compile"), stacked=True)


def counter_findings(label: str, counters: ConfigCounters, ceilings: Ceilings | None) -> list[Finding]:
    """The measured bound findings of one config's counters (module docstring); none without launches."""
    kernels = list(counters.kernels)
    total_ms = _ms(kernels)
    if total_ms <= 0:
        return []
    fp32_conv = _ms([k for k in kernels if k.kernel_class == "convolution" and k.precision == "fp32"])
    conv = fp32_conv >= MIN_SHARE * total_ms
    # the half precisions these kernels can run in: no bf16 with torch.fft (execution/failures.py ``fft_no_bf16``);
    # ``op`` None: a kernel no op launched
    fft = any(k.op and k.op.startswith(FFT_OPS) for k in kernels)
    half = tuple(p for p in HALF if p != "bf16") if fft else HALF
    step = _Step(total_ms, ceilings, half, fusible_chains(kernels), conv)
    groups = {
        "memory": [k for k in kernels if k.bound == "memory"],
        "fma": [k for k in kernels if _fma_matmul(k)],
        "compute": [k for k in kernels if k.bound == "compute" and not _fma_matmul(k)],
        "latency": [k for k in kernels if k.bound == "latency"],
    }
    findings = []
    for name, group in groups.items():
        share = _ms(group) / total_ms if group else 0.0
        if share >= MIN_SHARE:
            kind, severity, message, what, clauses, gain = _FINDERS[name](group, share, step)
            evidence = tuple(_evidence(group, total_ms, what))
            findings.append(Finding(kind, severity, message, evidence, clauses, gain, label, evidence_source=MEASURED))
    return findings


#: Ops that run cuFFT or PocketFFT (torch.fft's ATen ops, ``aten::_fft_r2c``, ``aten::_fft_c2r``, ``aten::_fft_c2c``).
FFT_OPS = ("aten::_fft_",)


def _half_text(half: tuple[str, ...]) -> str:
    return "/".join(half) + ("" if "bf16" in half else " (cuFFT has no bf16 transform)")


def _memory(group, share, step: _Step) -> tuple:
    half, total_ms = step.half, step.total_ms
    dram = [k for k in group if k.limiter == "DRAM"]
    units = Counter(k.limiter for k in group).most_common(1)[0][0]
    attention = any(k.kernel_class == "attention" for k in group)
    fusible = _ms([k for k in group if k.counters.launch in step.chains]) >= MIN_SHARE * total_ms
    layout = any(any(s in k.counters.function.lower() for s in LAYOUT_KERNELS) for k in group)
    return (
        "memory_bound",
        "medium" if share >= 0.3 else "low",
        f"{share:.0%} of the measured kernel time is memory-bound ({units} near peak), longest {_top(group).counters.function}",
        "memory-bound",
        clauses_of(
            Clause(f"move fewer bytes: keep activations in {_half_text(half)}", half),
            _compile_clause("fuse the elementwise, copy and reduction kernels (torch.compile)", step)
            if fusible
            else "",
            Clause("avoid the layout conversions around convolutions (channels_last)", ("channels_last",))
            if layout
            else "",
            Clause(f"for attention, {_half_text(half)} lets scaled_dot_product_attention run the flash kernel", half)
            if attention
            else "",
        ),
        _ms(dram) / 2 if dram else None,
    )


def _fma(group, share, step: _Step) -> tuple:
    ceilings, half = step.ceilings, step.half
    classes = {k.kernel_class for k in group}
    fused = " and fused attention (F.scaled_dot_product_attention, flash / memory-efficient kernels)"
    attention = fused if "attention" in classes else ""
    gain = None
    if ceilings is not None and ceilings.unusable("tf32") is None and ceilings.unusable("fp32") is None:
        gain = _ms(group) * (1 - ceilings.peak_tflops("fp32") / ceilings.peak_tflops("tf32"))
    return (
        "compute_bound",
        "high" if share >= 0.3 else "medium",
        f"{share:.0%} of the measured kernel time is {'/'.join(sorted(classes))} on the FMA pipe, tensor cores idle",
        "on the FMA pipe with the tensor pipe idle",
        (Clause(f"{_TENSOR_CORES}{_half_text(half)} autocast{attention}", ("tf32", *half)),),
        gain,
    )


_TENSOR_CORES = (
    "run the matmuls on the tensor cores: TF32 (torch.backends.cuda.matmul.allow_tf32 = True, precision tf32) or "
)


def _compute(group, share, step: _Step) -> tuple:
    half = step.half
    pipe = Counter(k.limiter for k in group).most_common(1)[0][0]
    return (
        "compute_bound",
        "info",
        f"{share:.0%} of the measured kernel time is compute-bound ({pipe} near peak): near the roof",
        "compute-bound",
        clauses_of(
            "nothing to fix in these kernels at this precision",
            Clause(f"a lower precision ({_half_text(half)}) raises the roof", half),
        ),
        None,
    )


def _above_roof_ms(kernels: list[MeasuredKernel], ceilings: Ceilings | None) -> float | None:
    """ms ``kernels`` spend above the memory roof (duration less DRAM bytes / bandwidth); None without ceilings."""
    if ceilings is None or ceilings.unusable("fp32") is not None:
        return None
    bytes_per_ms = ceilings.copy_gbps * 1e6
    return sum(max(0.0, k.counters.duration_ns / 1e6 - (k.counters.dram_bytes or 0) / bytes_per_ms) for k in kernels)


def _latency(group, share, step: _Step) -> tuple:
    cause = Counter(k.cause for k in group).most_common(1)[0][0]
    cause_kernels = [k for k in group if k.cause == cause]
    top = _top(cause_kernels)
    c = top.counters
    detail = {
        "grid_too_small": f"grid of {c.grid_size} block(s) for {c.sm_count} SMs",
        "tail_wave": f"{c.waves_per_sm} waves per SM",
        "registers": f"{c.registers_per_thread} registers per thread, theoretical occupancy {c.theoretical_occupancy}",
        "shared_memory": f"{c.shared_mem_per_block_bytes} bytes of shared memory per block",
    }.get(cause, LATENCY_CAUSES[cause])
    clause = _CAUSE_ACTIONS[cause]
    alternative = (_CAUSE_ALTERNATIVES[cause],) if cause in _CAUSE_ALTERNATIVES else ()
    if cause not in FUSION_CAUSES:
        action = (clause, *alternative)
    elif _ms([k for k in cause_kernels if k.counters.launch in step.chains]) < _ms(cause_kernels) / 2:
        action = (Clause(_LIBRARY_ACTIONS[cause]),)  # fusion only for mostly fusible kernels
    else:
        action = (_compile_clause(clause.text, step), *alternative)
    return (
        "occupancy_bound",
        "medium" if share >= 0.3 else "low",
        f"{share:.0%} of the measured kernel time is latency-bound, far from both roofs ({detail}, {top.counters.function})",
        "latency-bound",
        action,
        # a larger batch alone (no remedy) buys throughput, not a shorter step: no gain in step time
        _above_roof_ms(cause_kernels, step.ceilings) if any(a.remedies for a in action) else None,
    )


_FINDERS = {"memory": _memory, "fma": _fma, "compute": _compute, "latency": _latency}


#: ``launch_bound`` severities at which a measured half-precision clause is stacked on a CUDA graph.
LAUNCH_STACK_SEVERITIES = ("high", "medium")


def merge_measured(findings: list[Finding], measured: dict[str, list[Finding]]) -> list[Finding]:
    """``findings`` with each config's estimated :data:`REPLACED_KINDS` replaced by ``measured`` (``{label: findings}``);
    under a launch-bound step half precision is stacked on a CUDA graph (docs/benchmarks/h200-counters.md)."""
    kept = [
        f
        for f in findings
        if not (measured.get(f.config) and f.kind in REPLACED_KINDS and f.evidence_source == "estimated")
    ]
    launch_bound = {f.config for f in findings if f.kind == "launch_bound" and f.severity in LAUNCH_STACK_SEVERITIES}
    return kept + [
        replace(f, action=_half_in_graph(f.clauses)) if f.config in launch_bound else f
        for group in measured.values()
        for f in group
    ]


def _half_in_graph(clauses: tuple[Clause, ...]) -> tuple[Clause, ...]:
    """``clauses`` with each half-precision-only clause stacked on a CUDA graph, one per precision."""
    out: list[Clause] = []
    for clause in clauses:
        if clause.stacked or not clause.remedies or not set(clause.remedies) <= set(HALF):
            out.append(clause)
            continue
        lead = f"{clause.text}, inside a CUDA graph (the step is launch-bound and autocast adds cast kernels to every call): "
        out += [
            Clause(f"{lead if i == 0 else 'or '}{half} with cudagraph", ("cudagraph", half), stacked=True)
            for i, half in enumerate(clause.remedies)
        ]
    return tuple(out)
