"""The ncu raw-page parser on the H200 capture (tests/fixtures/ncu/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from surrobench.collect.ncu_parse import error_line, ncu_problem, parse_raw_csv
from surrobench.records.counters import KernelCounters, function_name

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ncu"
PLANTED = ("elementwise", "add", "transpose_copy", "gemm_bf16", "gemm_tf32", "gemm_fp32", "tiny_grid")


@pytest.fixture(scope="module")
def planted() -> dict[str, KernelCounters]:
    launches = parse_raw_csv((FIXTURES / "planted_raw.csv").read_text())
    assert [k.launch for k in launches] == list(range(len(PLANTED)))
    return dict(zip(PLANTED, launches))


def test_numbers_lose_their_thousands_separators_and_percentages_become_fractions(planted):
    k = planted["elementwise"]
    assert k.duration_ns == 499_776
    assert k.dram_read_bytes == 1_073_748_224 and k.dram_write_bytes == 1_049_523_968
    assert k.dram_of_peak == pytest.approx(0.883)
    assert k.grid_size == 262_144 and k.block_size == 128 and k.sm_count == 132
    assert k.passes == 18


def test_sass_flops_count_a_fused_multiply_add_twice(planted):
    # 4096^3 fp32 GEMM on the FMA pipe: 2 * 4096^3 FLOPs, almost all of them FFMA
    assert planted["gemm_fp32"].fp32_flops == pytest.approx(2 * 4096**3, rel=0.01)
    assert planted["elementwise"].fp32_flops == 1 << 28  # x * 2 over 2^28 floats: one FMUL each
    assert planted["add"].fp32_flops == 2 << 28  # x + y is x + 1 * y in ATen: one FFMA each, counted twice


def test_tensor_ops_by_source_include_the_warp_group_path(planted):
    bf16, tf32 = planted["gemm_bf16"], planted["gemm_tf32"]
    assert bf16.tensor_source() == "bf16_dst_fp32" and bf16.gmma_inst > 0
    assert tf32.tensor_ops["tf32_dst_fp32"] == 2 * 8192**3
    assert bf16.flops() == pytest.approx(2 * 8192**3, rel=0.03)
    assert planted["gemm_fp32"].tensor_source() is None


def test_launch_statistics_and_occupancy_limiter(planted):
    tiny, gemm = planted["tiny_grid"], planted["gemm_bf16"]
    assert tiny.grid_size == 1 and tiny.waves_per_sm == 0
    assert gemm.theoretical_occupancy == pytest.approx(0.1875)
    assert gemm.occupancy_limiter in ("registers", "shared_mem")  # both allow one block per SM
    assert gemm.shared_mem_per_block_bytes == 188_636


def test_a_missing_metric_is_none_not_a_guess():
    text = (FIXTURES / "planted_raw.csv").read_text().replace("sm__pipe_fma_cycles_active", "renamed_metric")
    assert all(k.fma_pipe_active is None for k in parse_raw_csv(text))


def test_not_an_ncu_table_is_a_value_error():
    with pytest.raises(ValueError, match="not an ncu raw-page CSV"):
        parse_raw_csv("==PROF== Disconnected from process 1\n")


def test_function_name_is_the_same_for_both_demanglers():
    trace = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
    ncu = "void at::vectorized_elementwise_kernel<4, at::CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)"
    assert function_name(trace) == function_name(ncu) == "vectorized_elementwise_kernel"
    assert (
        function_name("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int)")
        == "vectorized_layer_norm_kernel"
    )
    assert (
        function_name("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopA_NNT")
        == "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopA_NNT"
    )


def test_refused_counters_are_named_with_their_fix():
    problem = ncu_problem((FIXTURES / "err_nvgpuctrperm.txt").read_text())
    assert problem.kind == "permission" and "NVreg_RestrictProfilingToAdminUsers=0" in problem.message
    assert ncu_problem("==WARNING== No kernels were profiled.").kind == "no_kernels"
    assert ncu_problem("==ERROR== Profiling is not supported on this device").kind == "unsupported"
    assert ncu_problem("==PROF== Disconnected from process 1") is None
    assert error_line("a\n==ERROR== first\nb\n==ERROR== second\nc") == "==ERROR== second"
