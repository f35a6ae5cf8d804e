"""The tensor-core detector: GEMM/conv/attention kernels of a GPU config in fp32 with TF32 off."""

from __future__ import annotations

from surrobench.analysis.detect_ops import COMPUTE
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.thresholds import Thresholds
from surrobench.records.findings import Clause, Evidence, Finding
from surrobench.records.kernel_classes import MATMUL_CLASSES
from surrobench.records.ops import categorize
from surrobench.records.vocab import HALF_PRECISIONS as HALF

#: Op names of attention written out as matmuls and a softmax (not fused): ``bmm``/``matmul`` beside a softmax.
_UNFUSED_ATTENTION = ("aten::softmax", "aten::_softmax")


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
    action = (
        Clause(
            "run the matmuls on the tensor cores: --precision tf32 keeps fp32 storage "
            "(torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)",
            ("tf32",),
        ),
        Clause("bf16 or fp16 autocast (--precision bf16) runs GEMMs and convolutions at the tensor-core rate", HALF),
    )
    ops = {op.name for op in ev.op_table.ops if op.share > 0}
    if "attention" in shares:
        fused = sorted(op for op in ops if categorize(op) == "attention")
        names = ", ".join(fused[:2]) or "attention kernels"
        action += (Clause(f"attention runs fused ({names}): in bf16/fp16 SDPA can take FlashAttention", HALF),)
    elif ops & set(_UNFUSED_ATTENTION):
        action += (
            Clause("attention written as matmul + softmax: use F.scaled_dot_product_attention (fused attention)"),
        )
    summary = f"{share:.0%} of device time in fp32 GEMM/convolution/attention kernels with TF32 off"
    return Finding("matmul_precision", severity, summary, tuple(evidence), action, None, ev.label)


DETECTORS = (matmul_precision,)
