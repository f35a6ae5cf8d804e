"""torch.compile is not advised for a step that runs torch.fft.

Between its forward and inverse transforms a spectral layer works on complex tensors, and Inductor generates no
code for complex operators: it leaves them to eager ATen and warns that "performance may be worse than eager"
(``torch/_inductor/lowering.py``, PyTorch 2.11). On the H200 (docs/benchmarks/h200-counters.md, "Why compile alone
was slower") the zoo FNO at 256² batch 8 ran 0.65x under torch.compile and 0.72x with TF32: the compiled step
copied 0.9 ms a step device to device (28 copies against eager's 4) around the complex operators, more than its
fused elementwise kernels saved, with Inductor's layout optimization on or off. neuraloperator's FNO, whose step
runs the same transforms, ran 1.49x with TF32 and compile at 512² batch 8 and 0.57x compiled alone at 256²
batch 1. What compile does to such a step depends on how much real-valued work it fuses against the copies it
adds, which no counter of the eager step shows; so a finding for a step that runs torch.fft names no compile
remedy, says why, and leaves the measurement to ``surrobench optimize``, whose compiled candidates run anyway.

A step runs torch.fft when one of its ops, or an op that launched one of its measured kernels, is a torch.fft ATen
op (:data:`FFT_OPS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.records.findings import Clause, Finding

#: Ops that run cuFFT or PocketFFT (torch.fft's ATen ops, ``aten::_fft_r2c``, ``aten::_fft_c2r``, ``aten::_fft_c2c``).
FFT_OPS = ("aten::_fft_",)
#: The remedies that compile the forward with Inductor (:data:`surrobench.records.vocab.REMEDIES`).
COMPILE_REMEDIES = ("compile", "compile-reduce-overhead", "compile-max-autotune-no-cudagraphs")
#: The clause that stands in for the compile clauses of a step that runs torch.fft (module docstring).
NOT_COMPILE = Clause(
    "torch.compile is not advised here: the step runs torch.fft, and Inductor generates no code for complex "
    "operators (it warns that performance may be worse than eager); surrobench optimize measures whether it pays"
)


def runs_fft(ops: Iterable[str | None]) -> bool:
    """Whether any of ``ops`` (ATen op names; None for a kernel no op launched) is a torch.fft op."""
    return any(op and op.startswith(FFT_OPS) for op in ops)


def step_runs_fft(ev: ConfigEvidence) -> bool:
    """Whether the step of ``ev`` runs torch.fft: one of its op table's ops, or of the ops that launched its
    measured kernels (Nsight Compute), is a torch.fft op."""
    ops = [o.name for o in ev.op_table.ops] if ev.op_table is not None else []
    ops += [k.op for k in ev.counters.kernels] if ev.counters is not None else []
    return runs_fft(ops)


def without_compile(findings: list[Finding]) -> list[Finding]:
    """The findings of a step that runs torch.fft with every clause that names a :data:`COMPILE_REMEDIES` remedy
    replaced by :data:`NOT_COMPILE` (once per finding); a finding naming none as it is. Order kept."""
    out = []
    for f in findings:
        if not set(f.remedies) & set(COMPILE_REMEDIES):
            out.append(f)
            continue
        clauses: list[Clause] = []
        for c in f.clauses:
            keep = NOT_COMPILE if set(c.remedies) & set(COMPILE_REMEDIES) else c
            if keep not in clauses:
                clauses.append(keep)
        out.append(replace(f, action=tuple(clauses)))
    return out
