"""FLOPs of the operators surrogates run, counted by hand against count_op_costs (CPU)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from surrobench.analysis.op_flops import count_op_costs, fft_flops, flops_unknown_reason
from surrobench.analysis.roofline import roofline
from surrobench.records.ceilings import Ceilings
from surrobench.records.ops import OpStat, OpTable


def test_fft_flops_follow_the_5_n_log2_n_convention():
    assert fft_flops(1024, 1, real=False) == 5 * 1024 * 10
    assert fft_flops(1024, 3, real=True) == 3 * 2.5 * 1024 * 10
    assert fft_flops(1, 7, real=False) == 0


def test_rfft2_irfft2_and_c2c_count_their_transforms():
    x = torch.randn(2, 3, 16, 32)
    costs = count_op_costs(lambda: torch.fft.irfft2(torch.fft.rfft2(x), s=(16, 32)))
    n = 16 * 32
    assert costs["aten::_fft_r2c"].flops == pytest.approx(6 * 2.5 * n * math.log2(n))
    assert costs["aten::_fft_c2r"].flops == pytest.approx(6 * 2.5 * n * math.log2(n))
    z = torch.randn(4, 64, dtype=torch.complex64)
    assert count_op_costs(lambda: torch.fft.fft(z))["aten::_fft_c2c"].flops == pytest.approx(4 * 5 * 64 * 6)


def test_complex_einsum_counts_8_flops_per_multiply_add():
    b, i, o, m = 2, 3, 4, 10
    x = torch.randn(b, i, m, dtype=torch.complex64)
    w = torch.randn(i, o, m, dtype=torch.complex64)
    costs = count_op_costs(lambda: torch.einsum("bix,iox->box", x, w))
    assert costs["aten::bmm"].flops == 8 * b * i * o * m
    real = count_op_costs(lambda: torch.einsum("bix,iox->box", x.real, w.real))
    assert real["aten::bmm"].flops == 2 * b * i * o * m


def test_scatter_add_counts_one_add_per_source_element_and_gathers_read_only_their_rows():
    x = torch.randn(1000, 16)
    idx = torch.randint(0, 1000, (50,))
    src = torch.randn(50, 16)
    costs = count_op_costs(
        lambda: (
            torch.zeros(1000, 16).index_add_(0, idx, src),
            x.index_select(0, idx),
            torch.zeros(1000, 16).scatter_add_(0, idx[:, None].expand(50, 16), src),
        )
    )
    assert costs["aten::index_add_"].flops == 50 * 16
    assert costs["aten::scatter_add_"].flops == 50 * 16
    gather = costs["aten::index_select"]
    assert gather.flops == 0
    assert gather.bytes == 50 * 16 * 4 * 2 + 50 * 8  # rows read + rows written + int64 indices, not all of x


def test_distances_count_per_coordinate_of_each_pair_and_selections_zero():
    x, y = torch.randn(2, 16, 3), torch.randn(2, 64, 5)  # P = R = 16: the direct form; 64 > 25: the matmul form
    costs = count_op_costs(lambda: (torch.cdist(x, x).topk(4, dim=-1, largest=False), torch.cdist(y, y).sort(-1)))
    assert costs["aten::_cdist_forward"].flops == 3 * 2 * 16 * 16 * 3
    assert costs["aten::_euclidean_dist"].flops == 2 * 2 * 64 * 64 * 5
    assert costs["aten::topk"].flops == costs["aten::sort"].flops == 0


def test_normalizations_count_per_element():
    x = torch.randn(2, 8, 6, 6)
    costs = count_op_costs(
        lambda: (F.group_norm(x, 4), F.layer_norm(x, (6,)), F.batch_norm(x, torch.zeros(8), torch.ones(8)))
    )
    assert costs["aten::native_group_norm"].flops == 7 * x.numel()
    assert costs["aten::native_layer_norm"].flops == 7 * x.numel()
    assert costs["aten::_native_batch_norm_legit_no_training"].flops == 4 * x.numel()


def test_an_op_without_a_formula_has_unknown_flops_never_zero():
    costs = count_op_costs(lambda: F.gelu(torch.randn(64, 64)))
    assert costs["aten::gelu"].flops is None
    copy = count_op_costs(lambda: torch.randn(8, 8).t().contiguous())
    assert copy["aten::clone"].flops == 0  # data movement: known to be 0


def _table(*rows):
    total = sum(us for _, _, us in rows)
    ops = tuple(OpStat(n, c, 1, us, us, us / total, us) for n, c, us in rows)
    return OpTable(ops, "device", total, 1, "profiler")


def test_roofline_of_an_fno_layer_puts_ffts_below_the_ridge_with_their_flops():
    ceilings = Ceilings("dev", copy_gbps=1000.0, matmul_tflops={"fp32": 10.0})
    x = torch.randn(1, 32, 64, 64)
    costs = count_op_costs(lambda: F.gelu(torch.fft.irfft2(torch.fft.rfft2(x), s=(64, 64))))
    table = _table(
        ("aten::_fft_r2c", "fft", 50.0), ("aten::_fft_c2r", "fft", 50.0), ("aten::gelu", "elementwise/activation", 20.0)
    )
    report = {o.name: o for o in roofline(table, costs, ceilings, "fp32").ops}
    r2c = report["aten::_fft_r2c"]
    assert r2c.flops == pytest.approx(32 * 2.5 * 4096 * 12) and r2c.intensity > 0
    assert r2c.bound == "memory" and r2c.achieved_tflops == pytest.approx(r2c.flops / 50e-6 / 1e12)
    gelu = report["aten::gelu"]  # unknown FLOPs, but an elementwise op: against the bandwidth roof alone
    assert gelu.flops is None and gelu.intensity is None and gelu.achieved_tflops is None
    assert gelu.bound == "memory" and gelu.gain_ms == pytest.approx(0.020 - gelu.bytes / 1000e9 * 1e3)
    json = roofline(table, costs, ceilings, "fp32").to_json()
    assert {o["name"] for o in json["ops"]} == set(report) and json["ridge_flop_per_byte"] == pytest.approx(10.0)
    assert next(o for o in json["ops"] if o["name"] == "aten::gelu")["flops"] is None


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[2] / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_transformer_fast_path_counts_the_flops_of_its_matmuls():
    """The fused ``_transformer_encoder_layer_fwd`` and the same network written with SDPA and nn.Linear
    do the same matmuls: the composite's formula must count what torch's counter counts op by op."""
    pt = _example("patch_transformer")
    x = torch.randn(2, 3, 32, 32)
    costs = {}
    for build in (pt.build, pt.build_sdpa):
        torch.manual_seed(0)
        model = build().eval()
        with torch.inference_mode():
            costs[build.__name__] = count_op_costs(lambda: model(x))
    fused, written = costs["build"], costs["build_sdpa"]
    assert fused["aten::_transformer_encoder_layer_fwd"].flops > 0
    matmuls = ("aten::addmm", "aten::_scaled_dot_product_flash_attention_for_cpu")
    assert sum(c.flops for c in fused.values()) == sum(written[n].flops for n in matmuls)
    assert fused["aten::view"].bytes == 0 and fused["aten::view"].calls > 0  # a view moves no bytes


def test_the_fused_multi_head_attention_counts_its_projections_and_attention():
    b, n, d, heads = 2, 10, 64, 4
    mha = torch.nn.MultiheadAttention(d, heads, batch_first=True).eval()
    x = torch.randn(b, n, d)
    with torch.inference_mode():
        costs = count_op_costs(lambda: mha(x, x, x), mha)
    projections = 2 * b * n * d * 4 * d  # Q, K, V and output, each (B L, D) x (D, D)
    attention = 4 * b * heads * n * n * (d // heads)  # Q K^T and the weights times V
    assert costs["aten::_native_multi_head_attention"].flops == projections + attention


def test_unknown_flops_say_why():
    assert flops_unknown_reason("aten::_efficient_attention_forward") == "fused composite without a FLOP formula"
    assert "transcendental" in flops_unknown_reason("aten::gelu")
    assert "no FLOP formula" in flops_unknown_reason("aten::foo")
