"""The measured findings of real H200 runs (tests/fixtures/h200: `diagnose --counters` of nine models, and
`optimize` of three of them), derived again by today's code from the stored counters: what each names, and
that the remedies it names for the optimized configs are ones optimize measured faster."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from surrobench.analysis.detect_counters import counter_findings
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters
from surrobench.records.findings import rank_findings

H200 = Path(__file__).parent.parent / "fixtures" / "h200"


def _load(name: str) -> dict:
    with gzip.open(H200 / name, "rt") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def ceilings() -> Ceilings:
    doc = json.loads((H200 / "calibrate.json").read_text())
    return Ceilings(doc["device_name"], doc["copy_gbps"], doc["matmul_tflops"])


def _findings(name: str, ceilings: Ceilings):
    ((label, stored),) = _load(f"diagnose_{name}.json.gz")["context"]["counters"].items()
    return label, rank_findings(counter_findings(label, ConfigCounters.from_json(stored), ceilings))


def test_the_transformer_step_is_fp32_gemm_on_the_fma_pipe_and_attention_not_a_fusion_problem(ceilings):
    _, findings = _findings("transformer", ceilings)
    top, memory = findings[0], next(f for f in findings if f.kind == "memory_bound")
    assert top.kind == "compute_bound" and set(top.remedies) == {"tf32", "fp16", "bf16"}
    assert top.estimated_gain_ms > 0
    # the memory-bound launches are the fused attention kernel: half precision, not compile or layouts
    assert "attention" in {e.text.split("(")[1].split(",")[0] for e in memory.evidence if e.text.startswith("longest")}
    assert set(memory.remedies) == {"fp16", "bf16"}


def test_a_step_that_runs_cufft_is_never_told_to_run_in_bf16(ceilings):
    for name in ("neuralop_fno", "fno2d"):
        _, findings = _findings(name, ceilings)
        assert findings and all("bf16" not in f.remedies for f in findings)
        assert any("fp16" in f.remedies for f in findings)
    _, unet = _findings("unet2d", ceilings)  # cuDNN's FFT convolution is not cuFFT through torch.fft
    assert any("bf16" in f.remedies for f in unet)


def test_short_gather_kernels_read_as_latency_bound_and_name_fusion(ceilings):
    # optimize measured torch.compile 5.12x on this config (docs/benchmarks/h200-optimize.md)
    _, findings = _findings("gat", ceilings)
    assert findings[0].kind == "occupancy_bound" and findings[0].remedies == ("compile",)


def test_an_activation_between_gemms_is_not_told_to_fuse(ceilings):
    # the PINN's tanh and DeepONet's ReLU sit between cuBLAS GEMMs: under torch.compile each stays one kernel
    # (PINN 0.90x, DeepONet 0.91x measured alone); DeepONet's small-grid GEMMs are told a larger batch
    _, pinn = _findings("pinn", ceilings)
    assert "compile" not in {r for f in pinn for r in f.remedies}
    _, deeponet = _findings("deeponet", ceilings)
    occupancy = next(f for f in deeponet if f.kind == "occupancy_bound")
    assert occupancy.remedies == () and "larger batch" in occupancy.action
    assert "compile" not in {r for f in deeponet for r in f.remedies}


def test_an_fp32_convolution_step_is_told_compile_stacked_on_tf32(ceilings):
    # the U-Net's group norms are fusible chains, its convolutions fp32: compile alone ran 0.54x, on TF32 3.50x
    label, findings = _findings("unet2d", ceilings)
    occupancy = next(f for f in findings if f.kind == "occupancy_bound")
    assert occupancy.remedy_stacks == (("tf32", "compile"),)
    assert occupancy.to_json()["remedy_stacks"] == [["tf32", "compile"]]
    assert all(c.remedies != ("compile",) for f in findings for c in f.clauses)
    # the GAT has no convolution: compile stands alone there
    _, gat = _findings("gat", ceilings)
    assert gat[0].remedy_stacks == () and gat[0].remedies == ("compile",)


#: Named remedies optimize measured slower, by config, each explained in docs/benchmarks/h200-counters.md
#: ("The check against optimize"): the zoo FNO's spectral layers stay uncompiled (Inductor generates no code
#: for complex operators) and compile's copies around them cost more than its fusion saves; DeepONet's step at
#: 16,384 points batch 64 is launch-bound (cudagraph 3.25x), and autocast adds cast kernels to every call, so
#: half precision alone ran 0.72x (fp16) and 0.71x (bf16), and 5.10x and 5.17x in a CUDA graph.
KNOWN_SLOWER = {
    "fno2d": {("memory_bound", "tf32+compile")},
    "deeponet": {("memory_bound", "fp16"), ("memory_bound", "bf16")},
}
#: Top findings whose gain estimate missed the measured gain by more than 2x: the PINN's GEMMs on TF32 save the
#: kernel time the estimate says, but the step is then bound by the host's launches (tf32 alone 1.35x on
#: 2026-12-02 13:35, 1.64x the day before; tf32+cudagraph 2.17x).
KNOWN_GAIN_MISSES = {"pinn"}


@pytest.mark.parametrize(
    "name", ["transformer", "transformer_sdpa", "unet2d", "neuralop_fno", "fno2d", "deeponet", "pinn"]
)
def test_the_named_remedies_are_ones_optimize_measured_faster_and_the_top_gain_within_2x(name, ceilings):
    from surrobench.results.measured_remedies import stack_candidate, stack_faster

    label, findings = _findings(name, ceilings)
    (opt,) = [c for path in H200.glob("opt-*.json.gz") for c in _load(path.name)["configs"] if c["label"] == label]
    singles = {c["name"]: c for c in opt["candidates"] if c.get("stacked_on") is None}
    base_ms = opt["baseline"]["median_ms"]
    slower, saved = set(), {}
    for f in findings:
        for clause in f.clauses:
            if clause.stacked:
                c = stack_candidate(opt, clause.remedies)
                name_, faster = "+".join(clause.remedies), c is not None and stack_faster(c)
            else:
                for r in clause.remedies:
                    c = singles.get(r)
                    if c is not None and c["verdict"] == "rejected_slower":
                        slower.add((f.kind, r))
                    if c is not None and c["verdict"] == "accepted" and f is findings[0]:
                        saved[r] = base_ms - c["median_ms"]
                continue
            if c is not None and not faster:
                slower.add((f.kind, name_))
    assert slower == KNOWN_SLOWER.get(name, set())
    top = findings[0]
    if top.estimated_gain_ms is None:  # DeepONet: its top finding (grid too small) estimates no gain
        assert name == "deeponet"
        return
    ratio = top.estimated_gain_ms / max(saved.values())
    assert (0.5 <= ratio <= 2.0) != (name in KNOWN_GAIN_MISSES)
