"""Roofline arithmetic on ops whose FLOPs and bytes are known by hand."""

from __future__ import annotations

import json

import pytest
import torch

from surrobench.analysis.op_flops import count_op_costs
from surrobench.analysis.roofline import H200_FALLBACK, OpCost, RooflineReport, format_tflops, roofline
from surrobench.records.ceilings import Ceilings
from surrobench.records.ops import OpStat, OpTable


def test_matmul_flops_are_2mnk_and_bytes_are_inputs_plus_output():
    m, k, n = 8, 16, 32
    a, b = torch.randn(m, k), torch.randn(k, n)
    costs = count_op_costs(lambda: a @ b)
    mm = costs["aten::mm"]
    assert mm.flops == 2 * m * n * k
    assert mm.bytes == (m * k + k * n + m * n) * 4
    assert mm.calls == 1 and mm.dtypes == {"float32"}


def test_roofline_verdicts_against_the_ridge():
    ceilings = Ceilings("dev", copy_gbps=1000.0, matmul_tflops={"fp32": 10.0})  # ridge 10 FLOP/byte
    costs = count_op_costs(lambda: (torch.randn(256, 256) @ torch.randn(256, 256)).relu())
    table = OpTable(
        (
            OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 0.5, 1.0),
            OpStat("aten::relu", "elementwise/activation", 1, 10.0, 10.0, 0.5, 1.0),
        ),
        "device",
        20.0,
        1,
        "profiler",
    )
    report = roofline(table, costs, ceilings, "fp32")
    assert report.ridge_flop_per_byte == pytest.approx(10.0)
    ops = {o.name: o for o in report.ops}
    mm = ops["aten::mm"]
    assert mm.intensity == pytest.approx(2 * 256**3 / (3 * 256 * 256 * 4))  # 42.7 FLOP/byte
    assert mm.bound == "compute" and mm.achieved_tflops == pytest.approx(2 * 256**3 / 10e-6 / 1e12)
    assert mm.ceiling_fraction == pytest.approx(mm.achieved_tflops / 10.0)
    relu = ops["aten::relu"]
    assert relu.bound == "memory" and relu.flops == 256 * 256  # one max per element
    assert relu.achieved_gbps == pytest.approx(2 * 256 * 256 * 4 / 10e-6 / 1e9)
    assert relu.gain_ms == pytest.approx(0.010 - 2 * 256 * 256 * 4 / 1000e9 * 1e3)


def test_unmeasured_precision_uses_its_stand_in():
    ceilings = Ceilings("dev", 1000.0, {"fp32": 50.0, "bf16": 780.0})
    assert ceilings.peak_tflops("fp16") == ceilings.peak_tflops("bf16") == 780.0
    assert ceilings.ridge_flop_per_byte("fp32") == pytest.approx(50e12 / 1000e9)


def test_the_built_in_ceilings_judge_tf32_against_the_tensor_cores_not_the_fma_pipe():
    # tf32 with no rate of its own stood in with fp32's (TF32 off): a tf32 GEMM then read 1.5x "its" peak on an H100
    assert H200_FALLBACK.peak_tflops("tf32") > 4 * H200_FALLBACK.peak_tflops("fp32")
    assert set(H200_FALLBACK.matmul_tflops) == {"fp32", "tf32", "fp16", "bf16"}


@pytest.mark.parametrize(
    "copy, rates, precision, why",
    [
        (1000.0, {"fp32": 0.0}, "fp32", "fp32 matmul rate 0.0"),
        (1000.0, {"fp32": float("inf")}, "fp32", "not a ceiling"),
        (1000.0, {"fp16": float("nan")}, "fp16", "not a ceiling"),
        (0.0, {"fp32": 10.0}, "fp32", "copy bandwidth 0.0"),
        (1000.0, {"fp32": 10.0}, "fp16", "no fp16 matmul rate"),
    ],
)
def test_zero_or_non_finite_ceilings_draw_no_roofline(copy, rates, precision, why):
    ceilings = Ceilings("dev", copy, rates)
    assert why in ceilings.unusable(precision)
    table = OpTable(
        (OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 1.0, 10.0),), "device", 10.0, 1, "profiler"
    )
    costs = count_op_costs(lambda: torch.randn(64, 64) @ torch.randn(64, 64))
    with pytest.raises(ValueError, match="no roofline"):
        roofline(table, costs, ceilings, precision)
    assert Ceilings("dev", 1000.0, {"fp32": 10.0}).unusable("tf32") is None  # the stand-in is usable


def test_a_cpu_roofline_reads_the_op_times_less_the_profilers_cost():
    from surrobench.analysis.evidence import deflate

    ceilings = Ceilings("cpu", copy_gbps=20.0, matmul_tflops={"fp32": 0.1})
    costs = count_op_costs(lambda: torch.randn(256, 256).relu())
    table = OpTable(
        (OpStat("aten::relu", "elementwise/activation", 1, 0.0, 0.0, 1.0, 100.0),), "cpu", 100.0, 1, "profiler"
    )
    plain = roofline(table, costs, ceilings, "fp32")
    less = roofline(deflate(table, 0.1, 0.04), costs, ceilings, "fp32")  # 60 us of the profiler's on its one call
    assert less.ops[0].time_ms == pytest.approx(0.4 * plain.ops[0].time_ms) == pytest.approx(0.04)
    assert less.ops[0].achieved_gbps == pytest.approx(plain.ops[0].achieved_gbps / 0.4)


def test_small_rates_keep_their_digits():
    assert format_tflops(0.0010037) == "0.001" and format_tflops(0.134) == "0.13" and format_tflops(793.87) == "793.87"


def test_the_roofline_reads_back_from_its_json_with_unknown_flops_and_the_whole_calibration():
    ceilings = Ceilings("dev", 1000.0, {"fp32": 10.0, "bf16": 80.0}, "2026-12-01T00:00:00+00:00", "n=256")
    costs = {
        "aten::mm": OpCost("aten::mm", 1, 2 * 256**3, 3 * 256 * 256 * 4, {"float32"}),
        "aten::copy_": OpCost("aten::copy_", 2, None, 2 * 256 * 256 * 4, {"float32"}, "no FLOP formula"),
        "aten::mystery": OpCost("aten::mystery", 1, None, 1024, set()),
    }
    table = OpTable(
        (
            OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 0.5, 1.0),
            OpStat("aten::copy_", "copy/cast", 2, 6.0, 6.0, 0.3, 1.0),
            OpStat("aten::mystery", "other", 1, 4.0, 4.0, 0.2, 1.0),
        ),
        "device",
        20.0,
        1,
        "profiler",
    )
    report = roofline(table, costs, ceilings, "fp32")
    doc = json.loads(json.dumps(report.to_json()))  # through text, as the results store keeps it
    assert RooflineReport.from_json(doc) == report
    assert doc["ceilings"] == ceilings.to_json() and doc["peak_tflops"] == 10.0  # reader's keys stay
    ops = {o["name"]: o for o in doc["ops"]}
    assert ops["aten::copy_"]["bound"] == "memory" and ops["aten::copy_"]["intensity"] is None
    assert ops["aten::mystery"]["bound"] == "unknown" and ops["aten::mystery"]["ceiling_fraction"] is None
    assert ops["aten::mm"]["dtypes"] == ["float32"] and ops["aten::mm"]["bound"] == "compute"
    assert Ceilings.from_json(ceilings.to_json()) == ceilings


def test_unseen_bookkeeping_ops_lend_no_time_to_a_seen_op_of_their_category():
    # a CPU FNO step: thousands of select/empty calls inside the complex bmm, and one aten::zeros the FLOP
    # counter saw; the allocations' and views' time is not aten::zeros' work
    from surrobench.analysis.roofline import OpCost, _op_times_ms
    from surrobench.records.ops import OpStat, OpTable

    def op(name, us):
        return OpStat(name, "x", 1, 0.0, 0.0, 0.0, us, None, None)

    table = OpTable(
        ops=(op("aten::select", 7000.0), op("aten::empty", 4000.0), op("aten::zeros", 100.0), op("aten::bmm", 9000.0)),
        basis="cpu", source="profiler", total_us=20100.0, active_steps=1, kernel_count=0, small_kernel_count=0,
        small_kernel_us=0.0, has_shapes=False, has_memory=False,
    )  # fmt: skip
    costs = {"aten::zeros": OpCost("aten::zeros", 1, 0, 139264), "aten::bmm": OpCost("aten::bmm", 1, 10**6, 10**5)}
    times = _op_times_ms(table, costs)
    assert times["aten::zeros"] == pytest.approx(0.1) and times["aten::bmm"] == pytest.approx(9.0)


def _table(*ops: OpStat, steps: int = 2) -> OpTable:
    return OpTable(ops, "device", sum(o.self_device_us for o in ops), steps, "profiler")


def test_an_op_the_counter_saw_more_often_than_the_profile_is_left_out_and_lends_no_time():
    # upsample_trilinear3d's Python decomposition under the counter's dispatch modes: 13 adds a forward on full-size
    # tensors, while the profiled step ran 2 small adds and one upsample (elementwise, unseen by the counter)
    ceilings = Ceilings("dev", copy_gbps=1000.0, matmul_tflops={"fp32": 10.0})
    costs = {
        "aten::add": OpCost("aten::add", 13, 13 * 2**20, 13 * 3 * 2**22),
        "aten::mul": OpCost("aten::mul", 1, 2**20, 3 * 2**22),
        "aten::convolution": OpCost("aten::convolution", 2, 10**9, 10**7),
    }
    table = _table(
        OpStat("aten::add", "elementwise/activation", 4, 20.0, 20.0, 0.1, 1.0),
        OpStat("aten::upsample_trilinear3d", "elementwise/activation", 2, 100.0, 100.0, 0.4, 1.0),
        OpStat("aten::mul", "elementwise/activation", 2, 30.0, 30.0, 0.1, 1.0),
        OpStat("aten::convolution", "convolution", 4, 200.0, 200.0, 0.4, 1.0),
    )
    report = roofline(table, costs, ceilings, "fp32")
    assert [(u.name, u.counted_calls, u.profiled_calls) for u in report.uncosted] == [("aten::add", 13, 2.0)]
    ops = {o.name: o for o in report.ops}
    assert set(ops) == {"aten::mul", "aten::convolution"}  # counts agree (1 and 2 a step): kept
    assert ops["aten::mul"].time_ms == pytest.approx((30.0 + 100.0) / 2 / 1e3)  # the upsample's time, none to add
    doc = json.loads(json.dumps(report.to_json()))
    assert RooflineReport.from_json(doc) == report
    del doc["uncosted"]  # a roofline stored before uncosted ops reads, with none
    assert RooflineReport.from_json(doc).uncosted == ()


def test_an_op_the_profile_ran_more_often_nested_in_others_stays_costed():
    # the profile counts calls nested in ops the counter saw whole (a copy_ inside a clone): time of more calls
    ceilings = Ceilings("dev", copy_gbps=1000.0, matmul_tflops={"fp32": 10.0})
    costs = {"aten::copy_": OpCost("aten::copy_", 8, 0, 2**20), "aten::clone": OpCost("aten::clone", 8, 0, 2**20)}
    table = _table(
        OpStat("aten::copy_", "copy/cast", 4158, 500.0, 500.0, 0.9, 1.0),
        OpStat("aten::clone", "copy/cast", 16, 50.0, 50.0, 0.1, 1.0),
    )
    report = roofline(table, costs, ceilings, "fp32")
    assert report.uncosted == () and {o.name for o in report.ops} == {"aten::copy_", "aten::clone"}
