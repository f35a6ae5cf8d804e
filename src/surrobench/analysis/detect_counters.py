"""Bound findings from measured counters (:mod:`surrobench.analysis.counters`), each ``evidence_source``
``"measured (ncu)"``; where a config has them they replace the roofline's estimated bound findings
(:func:`merge_measured`).

Per config, the measured launches are grouped by verdict; a group holding at least :data:`MIN_SHARE` of the
measured kernel time is a finding:

- ``memory``: ``memory_bound``; the gain assumes the remedy halves the bytes (bf16/fp16 activations or fusion)
  and so the time of the DRAM-bound launches (time ~ bytes at the memory roof: Williams et al., 2009). Its
  action names only what the group's kernels admit: fusion (torch.compile) where elementwise, copy and reduction
  kernels hold at least :data:`MIN_SHARE` of the measured time, channels_last where the group converts
  convolution layouts (NCHW <-> NHWC kernels), fused attention where it holds attention kernels;
- ``compute`` on the FMA pipe in GEMM / attention / convolution kernels with the tensor pipe idle:
  ``compute_bound`` whose action is tensor-core precision and fused attention; the gain is those launches'
  time times ``1 - fp32 peak / tf32 peak`` of the calibrated ceilings (the rate TF32 alone would give them);
- ``compute`` elsewhere (tensor pipe near peak): ``compute_bound``, severity ``info``: near the roof;
- ``latency``: ``occupancy_bound``, its action named by the most frequent cause (grid, tail, limits).
"""

from __future__ import annotations

from collections import Counter

from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import LATENCY_CAUSES, ConfigCounters, MeasuredKernel
from surrobench.records.findings import Clause, Evidence, Finding, clauses_of
from surrobench.records.vocab import HALF_PRECISIONS as HALF

MEASURED = "measured (ncu)"
#: A group of launches smaller than this share of the measured kernel time makes no finding (our choice: a
#: tenth of the step cannot pay for the remedy's risk).
MIN_SHARE = 0.10
#: Kernel classes whose work tensor cores can do: on the FMA pipe, they lose the tensor-core rate.
MATMUL_CLASSES = ("gemm", "attention", "convolution")
#: Below this tensor-pipe activity the tensor cores count as idle (a tenth of their cycles).
TENSOR_IDLE = 0.10
#: Kernel classes a compiler fuses into their neighbours (torch.compile / Inductor's pointwise and reduction
#: fusion: Ansel et al., "PyTorch 2", ASPLOS 2024).
FUSIBLE_CLASSES = ("elementwise", "copy", "reduction")
#: Substrings of the layout-conversion kernels cuDNN and ATen run around a convolution whose input is not in
#: the layout its kernel wants (``nchwToNhwcKernel``, ``nhwcToNchwKernel``): what channels_last removes.
LAYOUT_KERNELS = ("nchwtonhwc", "nhwctonchw")
#: Ops that run cuFFT (torch.fft's ATen ops): cuFFT has no bf16 transform (surrobench/execution/failures.py
#: ``fft_no_bf16``), so a step holding them is never told to run in bf16.
FFT_OPS = ("aten::_fft_",)
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
    "stalls": Clause(
        "warps stall on dependencies: fuse the chain of small kernels (torch.compile) or capture it in a CUDA graph",
        ("compile", "cudagraph"),
    ),
}


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
    """The group's share and its longest launch's counters; each text carries its number (as every detector's
    evidence does: the terminal and the reports print the text), the value and unit carry it structured."""
    top = _top(group)
    c = top.counters
    share = _ms(group) / total_ms
    ev = [
        Evidence(
            "profiler",
            f"{len(group)} measured launch(es) {what}: {share:.0%} of measured kernel time",
            share,
            "fraction",
        ),
        Evidence(
            "profiler", f"longest: {_where(top)}, {c.duration_ns / 1e3:.1f} us under ncu", c.duration_ns / 1e3, "us"
        ),
        Evidence(
            "profiler",
            f"its DRAM throughput {_pct(c.dram_of_peak)} of peak (ncu), {top.dram_gbps or 0:.0f} GB/s",
            c.dram_of_peak,
            "fraction",
        ),
        Evidence("profiler", f"its SM throughput {_pct(c.sm_of_peak)} of peak (ncu)", c.sm_of_peak, "fraction"),
        Evidence(
            "profiler", f"its tensor pipe {_pct(c.tensor_pipe_active)} active (ncu)", c.tensor_pipe_active, "fraction"
        ),
        Evidence("profiler", f"its FMA pipe {_pct(c.fma_pipe_active)} active (ncu)", c.fma_pipe_active, "fraction"),
        Evidence(
            "profiler",
            f"its achieved occupancy {_pct(c.achieved_occupancy)} (theoretical {_pct(c.theoretical_occupancy)}, ncu)",
            c.achieved_occupancy,
            "fraction",
        ),
    ]
    if top.arithmetic_intensity is not None:
        ev.append(
            Evidence(
                "roofline",
                f"its measured arithmetic intensity {top.arithmetic_intensity:.1f} FLOP/byte ({top.precision or 'no FLOPs'})",
                top.arithmetic_intensity,
                "FLOP/byte",
            )
        )
    if top.achieved_tflops is not None and top.roof_tflops:
        ev.append(
            Evidence(
                "roofline",
                f"its achieved rate {top.achieved_tflops:.2f} TFLOP/s, of a {top.roof_tflops:.1f} TFLOP/s roof",
                top.achieved_tflops,
                "TFLOP/s",
            )
        )
    return ev


def _fma_matmul(k: MeasuredKernel) -> bool:
    return (
        k.bound == "compute"
        and k.kernel_class in MATMUL_CLASSES
        and k.precision == "fp32"
        and (k.counters.tensor_pipe_active or 0) < TENSOR_IDLE
    )


def counter_findings(label: str, counters: ConfigCounters, ceilings: Ceilings | None) -> list[Finding]:
    """The measured bound findings of one config's counters (module docstring); none without launches."""
    kernels = list(counters.kernels)
    total_ms = _ms(kernels)
    if total_ms <= 0:
        return []
    groups = {
        "memory": [k for k in kernels if k.bound == "memory"],
        "fma": [k for k in kernels if _fma_matmul(k)],
        "compute": [k for k in kernels if k.bound == "compute" and not _fma_matmul(k)],
        "latency": [k for k in kernels if k.bound == "latency"],
    }
    half = _half_precisions(kernels)
    findings = []
    for name, group in groups.items():
        share = _ms(group) / total_ms if group else 0.0
        if share >= MIN_SHARE:
            findings.append(_FINDERS[name](label, group, share, total_ms, ceilings, half))
    return findings


def _half_precisions(kernels: list[MeasuredKernel]) -> tuple[str, ...]:
    """The half precisions a step of these kernels can run in: no bf16 where it runs cuFFT (:data:`FFT_OPS`)."""
    if any(k.op and k.op.startswith(FFT_OPS) for k in kernels):
        return tuple(p for p in HALF if p != "bf16")
    return HALF


def _half_text(half: tuple[str, ...]) -> str:
    return "/".join(half) + ("" if "bf16" in half else " (cuFFT has no bf16 transform)")


def _memory(label, group, share, total_ms, ceilings, half) -> Finding:
    dram = [k for k in group if k.limiter == "DRAM"]
    units = Counter(k.limiter for k in group).most_common(1)[0][0]
    attention = any(k.kernel_class == "attention" for k in group)
    fusible = _ms([k for k in group if k.kernel_class in FUSIBLE_CLASSES]) >= MIN_SHARE * total_ms
    layout = any(any(s in k.counters.function.lower() for s in LAYOUT_KERNELS) for k in group)
    return Finding(
        "memory_bound",
        "medium" if share >= 0.3 else "low",
        f"{share:.0%} of the measured kernel time is memory-bound ({units} near peak), longest {_top(group).counters.function}",
        tuple(_evidence(group, total_ms, "memory-bound")),
        clauses_of(
            Clause(f"move fewer bytes: keep activations in {_half_text(half)}", half),
            Clause("fuse the elementwise, copy and reduction kernels (torch.compile)", ("compile",)) if fusible else "",
            Clause("avoid the layout conversions around convolutions (channels_last)", ("channels_last",))
            if layout
            else "",
            Clause(f"for attention, {_half_text(half)} lets scaled_dot_product_attention run the flash kernel", half)
            if attention
            else "",
        ),
        estimated_gain_ms=_ms(dram) / 2 if dram else None,
        config=label,
        evidence_source=MEASURED,
    )


def _fma(label, group, share, total_ms, ceilings, half) -> Finding:
    classes = {k.kernel_class for k in group}
    attention = (
        " and fused attention (F.scaled_dot_product_attention, flash / memory-efficient kernels)"
        if "attention" in classes
        else ""
    )
    gain = None
    if ceilings is not None and ceilings.unusable("tf32") is None and ceilings.unusable("fp32") is None:
        gain = _ms(group) * (1 - ceilings.peak_tflops("fp32") / ceilings.peak_tflops("tf32"))
    return Finding(
        "compute_bound",
        "high" if share >= 0.3 else "medium",
        f"{share:.0%} of the measured kernel time is {'/'.join(sorted(classes))} on the FMA pipe, tensor cores idle",
        tuple(_evidence(group, total_ms, "on the FMA pipe with the tensor pipe idle")),
        (
            Clause(
                "run the matmuls on the tensor cores: TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
                f"precision tf32) or {_half_text(half)} autocast{attention}",
                ("tf32", *half),
            ),
        ),
        estimated_gain_ms=gain,
        config=label,
        evidence_source=MEASURED,
    )


def _compute(label, group, share, total_ms, ceilings, half) -> Finding:
    pipe = Counter(k.limiter for k in group).most_common(1)[0][0]
    return Finding(
        "compute_bound",
        "info",
        f"{share:.0%} of the measured kernel time is compute-bound ({pipe} near peak): near the roof",
        tuple(_evidence(group, total_ms, "compute-bound")),
        clauses_of(
            "nothing to fix in these kernels at this precision",
            Clause(f"a lower precision ({_half_text(half)}) raises the roof", half),
        ),
        config=label,
        evidence_source=MEASURED,
    )


def _latency(label, group, share, total_ms, ceilings, half) -> Finding:
    cause = Counter(k.cause for k in group).most_common(1)[0][0]
    top = _top([k for k in group if k.cause == cause])
    c = top.counters
    detail = {
        "grid_too_small": f"grid of {c.grid_size} block(s) for {c.sm_count} SMs",
        "tail_wave": f"{c.waves_per_sm} waves per SM",
        "registers": f"{c.registers_per_thread} registers per thread, theoretical occupancy {c.theoretical_occupancy}",
        "shared_memory": f"{c.shared_mem_per_block_bytes} bytes of shared memory per block",
    }.get(cause, LATENCY_CAUSES[cause])
    return Finding(
        "occupancy_bound",
        "medium" if share >= 0.3 else "low",
        f"{share:.0%} of the measured kernel time is latency-bound, far from both roofs ({detail}, {top.counters.function})",
        tuple(_evidence(group, total_ms, "latency-bound")),
        (_CAUSE_ACTIONS[cause],),
        config=label,
        evidence_source=MEASURED,
    )


_FINDERS = {"memory": _memory, "fma": _fma, "compute": _compute, "latency": _latency}


def merge_measured(findings: list[Finding], measured: dict[str, list[Finding]]) -> list[Finding]:
    """``findings`` with each config's estimated :data:`REPLACED_KINDS` findings replaced by its measured ones
    (``measured``: ``{config label: findings}``; a config absent or with none keeps its estimates)."""
    kept = [
        f
        for f in findings
        if not (measured.get(f.config) and f.kind in REPLACED_KINDS and f.evidence_source == "estimated")
    ]
    return kept + [f for group in measured.values() for f in group]
