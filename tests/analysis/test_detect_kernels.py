"""The tensor-core finding and the metadata-op rule of the estimated path, on the H200 transformer op table."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from synthetic import config

from surrobench.analysis.detect_ops import matmul_precision
from surrobench.analysis.detect_ops import memory_bound
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.records.kernels import KernelRows
from surrobench.records.ops import VIEWS, categorize
from surrobench.records.ops import OpStat, OpTable

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "op_table_transformer_fp32_h200.json").read_text())


def _evidence(precision="fp32", table=None, kernels=None) -> ConfigEvidence:
    result = dataclasses.replace(config([FIXTURE["unprofiled_ms"]] * 5, precision=precision), device="cuda")
    return ConfigEvidence(
        label="transformer",
        result=result,
        op_table=table or OpTable.from_json(FIXTURE["op_table"]),
        kernel_table=kernels,
    )


def test_the_fp32_transformer_gets_tensor_core_precision_and_fused_attention():
    finding = matmul_precision(_evidence(), DEFAULT_THRESHOLDS)
    assert finding is not None and finding.kind == "matmul_precision" and finding.severity == "high"
    assert {e.text.split(" ")[0] for e in finding.evidence} >= {"gemm", "attention"}
    assert "tf32" in finding.action and "bf16" in finding.action
    assert "aten::_efficient_attention_forward" in finding.action  # the fused attention it already runs
    assert finding.evidence_source == "measured"


def test_no_tensor_core_finding_once_the_precision_uses_them():
    assert matmul_precision(_evidence("tf32"), DEFAULT_THRESHOLDS) is None
    assert matmul_precision(_evidence("bf16"), DEFAULT_THRESHOLDS) is None


def test_the_kernel_classes_decide_where_recorded():
    rows = KernelRows()
    rows.add(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        90.0,
        ["aten::add"],
        None,
    )
    rows.add("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8", 10.0, ["aten::addmm"], None)
    ev = _evidence(kernels=rows.finish(active_steps=1, source="profiler"))
    assert matmul_precision(ev, DEFAULT_THRESHOLDS) is None  # 10% GEMM kernels: not a GEMM-heavy config


def test_memory_bound_never_names_a_metadata_op():
    ops = (
        OpStat("aten::view", "other", 10, 600.0, 600.0, 0.6, 1.0),
        OpStat("aten::native_layer_norm", "normalization", 10, 400.0, 400.0, 0.4, 1.0),
    )
    table = OpTable(ops=ops, basis="device", total_us=1000.0, active_steps=1, source="profiler")
    finding = memory_bound(_evidence(table=table), DEFAULT_THRESHOLDS)
    assert any("aten::native_layer_norm" in e.text for e in finding.evidence)
    assert not any("aten::view" in e.text for e in finding.evidence) and categorize("aten::view") == VIEWS
    assert finding.evidence_source == "estimated"
