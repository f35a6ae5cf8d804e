"""Speed-of-light verdicts, roofline points, the join to Kineto's kernels and the measured findings, on the
H200 capture (tests/fixtures/ncu/README.md): each planted kernel's truth is known."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from surrobench.analysis.counters import measure, measure_all
from surrobench.analysis.detect_counters import MEASURED, counter_findings, merge_measured
from surrobench.collect.ncu_parse import parse_raw_csv
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters, MeasuredKernel
from surrobench.records.findings import Finding
from surrobench.records.kernels import KernelRows, KernelTable

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ncu"
PLANTED = ("elementwise", "add", "transpose_copy", "gemm_bf16", "gemm_tf32", "gemm_fp32", "tiny_grid")
#: `surrobench calibrate` on the same H200 (docs/benchmarks/h200-counters.md)
H200 = Ceilings("NVIDIA H200", 4102.0, {"fp32": 51.0, "tf32": 407.6, "fp16": 754.3, "bf16": 784.3})


@pytest.fixture(scope="module")
def planted() -> dict[str, MeasuredKernel]:
    launches = parse_raw_csv((FIXTURES / "planted_raw.csv").read_text())
    return {name: measure(k, H200) for name, k in zip(PLANTED, launches)}


@pytest.fixture(scope="module")
def transformer_table() -> KernelTable:
    """The Kineto trace's kernels (names as Kineto spells them), op unknown."""
    trace = json.loads(gzip.open(FIXTURES / "transformer_256_b8_fp32_h200_trace.json.gz").read())
    rows = KernelRows()
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel":
            rows.add(event["name"], event["dur"], [], None, lost="no_op")
    return rows.finish(active_steps=2, source="trace")


@pytest.mark.parametrize("name", ["elementwise", "add"])
def test_large_elementwise_kernels_are_memory_bound_near_the_copy_ceiling(planted, name):
    k = planted[name]
    assert (k.bound, k.limiter) == ("memory", "DRAM")
    assert k.dram_gbps == pytest.approx(H200.copy_gbps, rel=0.10)
    assert k.arithmetic_intensity < H200.ridge_flop_per_byte("fp32")


def test_the_transpose_copy_is_memory_bound_on_l2(planted):
    assert (planted["transpose_copy"].bound, planted["transpose_copy"].limiter) == ("memory", "L2")


@pytest.mark.parametrize("name, precision", [("gemm_bf16", "bf16"), ("gemm_tf32", "tf32")])
def test_tensor_core_gemms_are_compute_bound_on_the_tensor_pipe_near_their_roof(planted, name, precision):
    k = planted[name]
    assert (k.bound, k.limiter, k.precision) == ("compute", "tensor pipe", precision)
    assert k.roof_tflops == H200.peak_tflops(precision)  # above the ridge: the flat roof
    assert k.achieved_tflops == pytest.approx(k.roof_tflops, rel=0.10)


def test_the_fp32_gemm_is_compute_bound_on_the_fma_pipe(planted):
    k = planted["gemm_fp32"]
    assert (k.bound, k.limiter, k.precision) == ("compute", "FMA pipe", "fp32")
    assert k.achieved_tflops == pytest.approx(H200.peak_tflops("fp32"), rel=0.10)


def test_the_one_block_softmax_is_latency_bound_by_its_grid(planted):
    k = planted["tiny_grid"]
    assert (k.bound, k.cause) == ("latency", "grid_too_small")


def test_no_ceilings_no_roof_but_the_verdict_holds(planted):
    k = measure(planted["gemm_bf16"].counters, None)
    assert k.roof_tflops is None and k.bound == "compute"


def test_every_launch_of_the_transformer_step_joins_its_kineto_kernel(transformer_table):
    launches = parse_raw_csv((FIXTURES / "transformer_step_raw.csv").read_text())
    measured = measure_all(launches, transformer_table, H200)
    assert all(m.trace_name is not None for m in measured)
    by_function = {m.counters.function: m.kernel_class for m in measured}
    assert by_function["fmha_cutlassF_f32_aligned_64x64_rf_sm80"] == "attention"
    assert by_function["vectorized_layer_norm_kernel"] == "reduction"
    # two `elementwise_kernel`s in the trace (a copy, and others): the copy launch joins the copy
    copies = [m for m in measured if m.counters.function == "elementwise_kernel"]
    assert copies and all("direct_copy" in m.trace_name for m in copies)


def test_measured_kernels_round_trip_through_json(planted):
    doc = ConfigCounters(tuple(planted.values()), selected=("a",), passes=126).to_json()
    assert ConfigCounters.from_json(json.loads(json.dumps(doc))) == ConfigCounters(
        tuple(planted.values()), selected=("a",), passes=126
    )


def test_fp32_transformer_gets_tensor_core_precision_from_the_counters(transformer_table):
    launches = parse_raw_csv((FIXTURES / "transformer_step_raw.csv").read_text())
    counters = ConfigCounters(measure_all(launches, transformer_table, H200))
    findings = counter_findings("tf", counters, H200)
    fma = [f for f in findings if f.kind == "compute_bound" and f.severity != "info"]
    assert len(fma) == 1 and "TF32" in fma[0].action and fma[0].evidence_source == MEASURED
    assert 0 < fma[0].estimated_gain_ms < sum(k.counters.duration_ns for k in counters.kernels) / 1e6


def test_planted_findings_name_each_bound(planted):
    # the planted cases as one "step": three memory-bound, three compute-bound, one latency-bound launch
    findings = {f.kind: f for f in counter_findings("planted", ConfigCounters(tuple(planted.values())), H200)}
    assert {"memory_bound", "compute_bound", "occupancy_bound"} <= set(findings)
    summary = findings["occupancy_bound"].summary
    assert "1 block(s)" in summary and "132 SMs" in summary  # the planted grid, the H200's SMs


def test_measured_findings_replace_the_estimated_bound_of_their_config_only():
    def finding(kind, config, source):
        return Finding(kind, "medium", "s", (), "a", config=config, evidence_source=source)

    estimated = [finding("memory_bound", "a", "estimated"), finding("memory_bound", "b", "estimated")]
    kept = [finding("host_sync", "a", "measured")]
    measured = {"a": [finding("compute_bound", "a", MEASURED)]}
    merged = merge_measured(estimated + kept, measured)
    assert [(f.kind, f.config, f.evidence_source) for f in merged] == [
        ("memory_bound", "b", "estimated"),
        ("host_sync", "a", "measured"),
        ("compute_bound", "a", MEASURED),
    ]


def test_fusible_chains_are_fusible_kernels_next_to_another_in_launch_order(planted):
    """gemm, elementwise, gemm: the elementwise stands alone; elementwise, reduction, copy in a row all chain;
    the order is the launches', not the list's."""
    from dataclasses import replace

    from surrobench.analysis.detect_counters import fusible_chains

    def at(launch: int, kernel_class: str) -> MeasuredKernel:
        k = planted["add"]
        return replace(k, kernel_class=kernel_class, counters=replace(k.counters, launch=launch))

    step = [at(0, "gemm"), at(1, "elementwise"), at(2, "gemm"), at(5, "copy"), at(3, "elementwise")]
    step += [at(4, "reduction"), at(6, "convolution"), at(7, "gather_scatter")]
    assert fusible_chains(step) == {3, 4, 5}


def test_a_stacked_clause_names_two_remedies_or_more():
    from surrobench.records.findings import Clause

    with pytest.raises(ValueError, match="at least two"):
        Clause("compile on tf32", ("compile",), stacked=True)


def test_stalls_in_a_chain_of_small_kernels_name_fusion_or_a_cuda_graph_and_in_library_kernels_a_batch(planted):
    from dataclasses import replace

    def stalled(launch: int, kernel_class: str) -> MeasuredKernel:
        k = planted["add"]
        return replace(
            k, bound="latency", cause="stalls", kernel_class=kernel_class, counters=replace(k.counters, launch=launch)
        )

    chain = [stalled(i, c) for i, c in enumerate(("elementwise", "reduction", "elementwise"))]
    (finding,) = counter_findings("c", ConfigCounters(kernels=tuple(chain)), H200)
    assert finding.kind == "occupancy_bound" and finding.remedies == ("compile", "cudagraph")
    library = [stalled(i, c) for i, c in enumerate(("gemm", "elementwise", "gemm"))]
    (finding,) = counter_findings("c", ConfigCounters(kernels=tuple(library)), H200)
    assert finding.remedies == () and "larger batch" in finding.action
    assert finding.estimated_gain_ms is None  # a larger batch buys throughput, not a shorter step


def test_a_latency_finding_gains_the_time_its_kernels_spend_above_the_memory_roof(planted):
    from dataclasses import replace

    k = planted["add"]
    slow = [
        replace(
            k,
            bound="latency",
            cause="stalls",
            kernel_class=c,
            counters=replace(
                k.counters, launch=i, duration_ns=100_000, dram_read_bytes=int(4102e9 * 20e-6), dram_write_bytes=0
            ),
        )
        for i, c in enumerate(("elementwise", "reduction"))
    ]
    (finding,) = counter_findings("c", ConfigCounters(kernels=tuple(slow)), H200)
    # each 0.1 ms, of which 0.02 ms would move its bytes at the copy ceiling
    assert finding.estimated_gain_ms == pytest.approx(2 * (0.1 - 0.02))
    (no_ceilings,) = counter_findings("c", ConfigCounters(kernels=tuple(slow)), None)
    assert no_ceilings.estimated_gain_ms is None
