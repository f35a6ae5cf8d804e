"""The kernel table of a trace file alone, on real H200 traces (eager, CUDA-graph replay, torch.compile) and on
tiny traces built to hold a metadata op's launch and module ranges."""

from __future__ import annotations

from pathlib import Path

import pytest
from kineto_synth import annotation, cpu_op, kernel, runtime, write

from surrobench.analysis.diagnose import trace_evidence
from surrobench.analysis.ops import kernel_table_from_timeline, op_table_from_timeline
from surrobench.records.kernels import MODULE_RANGE_PREFIX
from surrobench.records.ops import VIEWS, categorize
from surrobench.trace import load_trace

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8"


def _table(name: str):
    tl = load_trace(TRACES / name)
    return kernel_table_from_timeline(tl), op_table_from_timeline(tl)


def test_an_eager_fno_trace_has_its_fft_kernels_on_the_fft_ops_and_the_op_tables_basis():
    kernels, ops = _table("fno2d_128_b1_fp32_h200.json.gz")
    assert kernels.source == "trace" and kernels.total_us == pytest.approx(ops.total_us)
    assert sum(k.share for k in kernels.kernels) == pytest.approx(1.0)
    fft_ops = {k.op for k in kernels.kernels if k.kernel_class == "fft"}
    assert fft_ops and all("fft" in op for op in fft_ops)
    assert all(k.origin == "launch" for k in kernels.kernels)
    assert [n.kind for n in kernels.notes] == ["module_path_lost"]  # captured before the module ranges


def test_an_eager_unet_trace_credits_its_convolution_kernels_to_cudnn_convolution():
    kernels, _ = _table("unet_256_b1_fp32_h200.json.gz")
    shares = kernels.class_shares()
    assert max(shares, key=shares.get) == "reduction"  # group norm's RowwiseMoments kernels
    assert {k.op for k in kernels.kernels if k.kernel_class == "convolution"} == {"aten::cudnn_convolution"}
    assert kernels.op_classes()["aten::native_group_norm"]["reduction"] > 0.9


def test_a_cuda_graph_replay_keeps_every_class_and_says_the_ops_are_lost():
    kernels, _ = _table("unet_512_b1_tf32_reduce_overhead_h200.json.gz")
    replayed = [k for k in kernels.kernels if k.origin == "graph_replay"]
    assert sum(k.share for k in replayed) > 0.95 and all(k.op is None for k in replayed)
    assert {"convolution", "reduction", "elementwise"} <= {k.kernel_class for k in replayed}
    notes = {n.kind: n for n in kernels.notes}
    assert notes["graph_replay_unmapped"].kernels == sum(k.calls for k in replayed)
    assert notes["compiled_by_name"].kernels > 0
    assert any(k.fused_ops and "group_norm" in k.fused_ops for k in replayed)


def test_inductor_launch_ranges_are_no_ops_their_kernels_are_the_compiled_regions():
    kernels, _ = _table("unet2d_128_b1_fp32_compile_h200.json.gz")
    triton = [k for k in kernels.kernels if k.name.startswith("triton_")]
    assert triton and all(k.op is None and k.origin == "compiled" and k.fused_ops for k in triton)
    assert {k.kernel_class for k in triton} <= {"elementwise", "reduction"}
    extern = [k for k in kernels.kernels if k.kernel_class == "convolution"]
    assert extern and {k.op for k in extern} == {"aten::cudnn_convolution", "aten::cudnn_convolution_transpose"}
    assert {"compiled_unmapped", "compiled_by_name"} <= {n.kind for n in kernels.notes}


def _fast_path(tmp_path) -> Path:
    """The transformer fast path's pattern: a GEMM launched under aten::view inside the fused layer, modules."""
    events = [
        annotation("ProfilerStep#1", 0, 300),
        annotation(f"{MODULE_RANGE_PREFIX}", 5, 290),
        annotation(f"{MODULE_RANGE_PREFIX}encoder.layers.0", 8, 160),
        cpu_op("aten::_transformer_encoder_layer_fwd", 10, 150, ext=1),
        cpu_op("aten::view", 20, 30, ext=2),
        runtime("cudaLaunchKernel", 25, 5, corr=100, ext=2),
        kernel(60, 40, corr=100, name=GEMM),
        annotation(f"{MODULE_RANGE_PREFIX}head", 200, 60),
        cpu_op("aten::addmm", 210, 30, ext=3),
        runtime("cudaLaunchKernel", 215, 5, corr=101, ext=3),
        kernel(230, 10, corr=101, name=GEMM),
        runtime("cudaLaunchKernel", 280, 5, corr=102),  # outside any op, in the root module only
        kernel(290, 5, corr=102, name="void at::native::vectorized_elementwise_kernel<4>"),
    ]
    return write(tmp_path / "fast_path.json", events)


def test_a_metadata_ops_kernels_go_to_the_enclosing_op_with_their_module_paths(tmp_path):
    table = kernel_table_from_timeline(load_trace(_fast_path(tmp_path)))
    rows = {k.op: k for k in table.kernels}
    assert not any(op and categorize(op) == VIEWS for op in rows)
    fused = rows["aten::_transformer_encoder_layer_fwd"]
    assert (fused.origin, fused.module, fused.kernel_class) == ("recredited", "encoder.layers.0", "gemm")
    assert rows["aten::addmm"].module == "head"
    assert rows[None].origin == "no_op" and rows[None].module == ""  # the root module's path is ""
    (note,) = [n for n in table.notes if n.kind == "metadata_op_recredited"]
    assert (note.op, note.into, note.device_us) == ("aten::view", "aten::_transformer_encoder_layer_fwd", 40.0)
    assert "module_path_lost" not in {n.kind for n in table.notes}


def test_a_trace_alone_gives_the_diagnosis_its_kernel_table_and_a_cpu_trace_none(tmp_path):
    ev = trace_evidence(load_trace(_fast_path(tmp_path)), label="trace")
    assert ev.kernel_table is not None and ev.kernel_table.class_shares()["gemm"] == pytest.approx(50 / 55)
    cpu_only = write(tmp_path / "cpu.json", [annotation("ProfilerStep#1", 0, 100), cpu_op("aten::mm", 10, 50, ext=1)])
    assert trace_evidence(load_trace(cpu_only), label="cpu").kernel_table is None
