"""Diagnoses of optimized steps: replayed kernels credited to the eager step's ops (coverage), and the step against
the roofline bound of its measured counters (headroom)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic import config, latency_samples

from surrobench.analysis.evidence import ConfigEvidence, attribute_by_eager, match_eager
from surrobench.analysis.evidence_checks import COVERAGE_MIN, check_evidence, kernel_coverage
from surrobench.analysis.roofline import launch_bound_ms, roofline_headroom
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters, KernelCounters, MeasuredKernel
from surrobench.records.kernels import KernelStat, KernelTable


def _eager() -> KernelTable:
    rows = (
        KernelStat("gemm", "gemm", 2, 20.0, 0.5, "aten::mm", "blocks.0"),
        KernelStat("add", "elementwise", 1, 5.0, 0.125, "aten::add", "blocks.0"),
        KernelStat("add", "elementwise", 3, 15.0, 0.375, "aten::add", "blocks.1"),
    )
    return KernelTable(rows, 40.0, 1, "profiler")


def _replayed() -> KernelTable:
    rows = (
        KernelStat("gemm", "gemm", 2, 10.0, 10 / 16, None, None, origin="graph_replay"),
        KernelStat("add", "elementwise", 4, 4.0, 4 / 16, None, None, origin="graph_replay"),
        KernelStat("triton_poi_fused_add_0", "elementwise", 1, 2.0, 2 / 16, None, None, origin="compiled"),
    )
    return KernelTable(rows, 16.0, 1, "profiler")


def test_replayed_kernels_are_credited_to_the_eager_ops_by_name_and_calls():
    matched = match_eager(_replayed(), _eager())
    adds = {k.module: k.device_us for k in matched.kernels if k.name == "add"}
    assert adds == {"blocks.0": pytest.approx(1.0), "blocks.1": pytest.approx(3.0)}  # 1 and 3 eager calls
    assert sum(k.device_us for k in matched.kernels) == pytest.approx(16.0)
    (fused,) = [k for k in matched.kernels if k.name.startswith("triton")]
    assert fused.op is None and fused.origin == "compiled"  # no eager kernel of that name
    assert {k.origin for k in matched.kernels if k.op} == {"matched_eager"}


def test_coverage_of_a_graph_step_before_and_after_matching():
    result = replace(config(latency_samples(0.1, 0.0), mode="cudagraph"), device="cuda")
    eager = ConfigEvidence(label="e", result=replace(result, mode="eager"), kernel_table=_eager())
    graph = ConfigEvidence(label="g", result=result, kernel_table=_replayed())
    assert kernel_coverage(graph) == (0.0, 0.0, 0.0)
    _, matched = attribute_by_eager([eager, graph])
    coverage, modules, _ = kernel_coverage(matched)
    assert coverage == pytest.approx(14 / 16) == modules
    assert check_evidence(matched).verdict == "partial" and coverage < COVERAGE_MIN
    assert check_evidence(matched).matched_coverage == pytest.approx(14 / 16)
    assert check_evidence(eager).matched_coverage is None  # an eager step has nothing matched
    assert attribute_by_eager([graph]) == [graph]  # no eager step profiled: nothing to match


H200 = Ceilings("NVIDIA H200", 4000.0, {"fp32": 50.0, "bf16": 800.0})


def _measured(flops: float, dram_bytes: float, duration_ns: float, precision: str | None) -> MeasuredKernel:
    k = KernelCounters(0, "k", duration_ns, dram_read_bytes=dram_bytes, fp32_flops=flops)
    return MeasuredKernel(k, "memory", "DRAM", precision=precision)


def test_the_roofline_bound_is_the_sum_of_each_launchs_slower_roof():
    memory = _measured(1e6, 4e6, 5_000, "fp32")  # 4 MB at 4000 GB/s: 1 us; 1 MFLOP at 50 TFLOP/s: 0.02 us
    compute = _measured(1e9, 1e6, 40_000, "fp32")  # 1 GFLOP at 50 TFLOP/s: 20 us
    integer = _measured(0.0, 8e6, 3_000, None)  # bytes only: 2 us
    assert launch_bound_ms(memory.counters, "fp32", H200) == pytest.approx(1e-3)
    counters = ConfigCounters(kernels=(memory, compute, integer), covered_share=0.95)
    head = roofline_headroom(counters, 0.092, H200)
    assert head.roofline_bound_ms == pytest.approx(0.023) and head.headroom == pytest.approx(4.0)
    assert head.to_json()["kernel_ms"] == pytest.approx(0.048)
    assert head.past_ceiling == 0
    beat = _measured(1e10, 0.0, 100_000, "fp32")  # 200 us at the calibrated 50 TFLOP/s, measured in 100 us
    past = roofline_headroom(replace(counters, kernels=(beat,)), 0.2, H200)
    assert past.roofline_bound_ms == pytest.approx(0.1) and past.past_ceiling == 1
    assert roofline_headroom(counters, 0.092, None) is None
    assert roofline_headroom(replace(counters, kernels=()), 0.092, H200) is None
