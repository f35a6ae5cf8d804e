"""The op table: categorizer, share arithmetic, both builders (real H200 traces, synthetic traces, events)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kineto_synth import annotation, cpu_op, kernel, op_table_from_trace, runtime, write
from surrobench.collect.op_events import tables_from_events
from surrobench.records.ops import CATEGORIES, SMALL_KERNEL_US, OpTable, categorize

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"
FNO = TRACES / "fno2d_128_b1_fp32_h200.json.gz"
UNET = TRACES / "unet_256_b1_fp32_h200.json.gz"


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("aten::_fft_r2c", "fft"),
        ("void regular_fft<128u, EPT<16u>, 32u, 4u, (padding_t)6>(...)", "fft"),
        ("aten::cudnn_convolution", "convolution"),
        ("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw", "convolution"),
        ("aten::native_group_norm", "normalization"),
        ("void at::native::(anonymous namespace)::RowwiseMomentsCUDAKernel<float>(long, float)", "normalization"),
        ("aten::bmm", "gemm/matmul/einsum"),
        ("aten::addmm", "gemm/matmul/einsum"),
        ("aten::einsum", "gemm/matmul/einsum"),
        ("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>", "gemm/matmul/einsum"),
        ("aten::add_", "elementwise/activation"),
        ("aten::gelu", "elementwise/activation"),
        ("aten::fill_", "elementwise/activation"),
        ("aten::sum", "reduction"),
        ("aten::avg_pool2d", "reduction"),
        ("aten::copy_", "copy/cast/contiguous"),
        ("aten::_to_copy", "copy/cast/contiguous"),
        ("aten::cat", "concat/index/gather/scatter"),
        ("void at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized<int>", "concat/index/gather/scatter"),
        ("aten::index_select", "concat/index/gather/scatter"),
        ("aten::scatter_add_", "concat/index/gather/scatter"),
        ("aten::_cdist_forward", "distance/selection"),
        ("aten::topk", "distance/selection"),
        ("aten::argsort", "distance/selection"),
        ("void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(...)", "distance/selection"),
        ("aten::searchsorted", "distance/selection"),
        ("aten::bucketize", "distance/selection"),
        *((f"aten::{op}", "elementwise/activation") for op in ("clamp_min", "clamp_max", "clamp_min_", "where")),
        *((f"aten::{op}", "elementwise/activation") for op in ("ge", "lt", "eq", "ne", "gt", "le", "ge_")),
        *((f"aten::{op}", "elementwise/activation") for op in ("bitwise_and", "bitwise_or", "logical_not")),
        *((f"aten::{op}", "elementwise/activation") for op in ("logical_and", "logical_or", "masked_fill")),
        ("aten::roll", "copy/cast/contiguous"),
        ("aten::flip", "copy/cast/contiguous"),
        *((f"aten::{op}", "reduction") for op in ("max", "amax", "min", "max_pool2d", "_softmax")),
        ("Memcpy DtoD (Device -> Device)", "memcpy/memset"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"),
        ("aten::empty", "other"),
        ("aten::view", "view/metadata"),
    ],
)
def test_categorize(name, category):
    assert categorize(name) == category
    assert category in CATEGORIES


def test_fno_fixture_shows_fft_einsum_and_fragmented_elementwise_copy():
    table = op_table_from_trace(FNO)
    assert table.basis == "device" and table.source == "trace" and table.active_steps == 3
    assert sum(op.share for op in table.ops) == pytest.approx(1.0)
    shares = table.category_shares
    assert shares["fft"] > 0.2 and shares["gemm/matmul/einsum"] > 0.05
    assert shares["copy/cast/contiguous"] + shares["elementwise/activation"] > 0.5
    # The fixture: ~0.21 ms of kernel time per step; nearly all kernels shorter than the launch cost.
    assert table.total_us / table.active_steps == pytest.approx(209, rel=0.02)
    assert table.kernel_count == 237 and table.small_kernel_count > 0.9 * table.kernel_count
    assert table.top_op().name == "aten::copy_"
    # einsum launches nothing itself: its kernels belong to the bmm/copy it calls (self 0, total > 0).
    einsum = next(op for op in table.ops if op.name == "aten::einsum")
    assert einsum.self_device_us == 0 and einsum.total_device_us > 100


def test_unet_fixture_group_norm_is_two_thirds():
    table = op_table_from_trace(UNET)
    top = table.top_op()
    assert top.name == "aten::native_group_norm" and top.category == "normalization"
    assert top.share == pytest.approx(2 / 3, abs=0.05)
    wrapper = next(op for op in table.ops if op.name == "aten::group_norm")
    assert wrapper.share == 0 and wrapper.total_device_us == pytest.approx(top.self_device_us)
    assert not table.has_shapes and not table.has_memory  # a Timeline keeps neither


def _nested_trace(tmp_path) -> Path:
    """ProfilerStep > forward annotation > aten::linear > aten::addmm (kernel 30 µs), aten::relu (10 µs),
    plus a 5 µs kernel launched in the annotation but outside any op, and a GPU-side annotation copy that
    spans all kernels (must not count)."""
    events = [
        annotation("ProfilerStep#3", 0, 200),
        annotation("surrobench::forward", 1, 190),
        cpu_op("aten::linear", 10, 60, ext=1),
        cpu_op("aten::addmm", 20, 40, ext=2),
        runtime("cudaLaunchKernel", 30, 5, corr=100, ext=2),
        kernel(50, 30, corr=100, name="gemm_kernel"),
        cpu_op("aten::relu", 80, 20, ext=3),
        runtime("cudaLaunchKernel", 85, 5, corr=101, ext=3),
        kernel(90, 10, corr=101, name="relu_kernel"),
        runtime("cudaGraphLaunch", 120, 5, corr=102, ext=-1),
        kernel(130, 5, corr=102, name="graph_node"),
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "surrobench::forward",
            "pid": 0,
            "tid": 7,
            "ts": 5_000_000_050.0,
            "dur": 85,
            "args": {"device": 0, "stream": 7},
        },
    ]
    return write(tmp_path / "nested.json", events)


def test_nested_trace_no_double_counting(tmp_path):
    table = op_table_from_trace(_nested_trace(tmp_path))
    rows = {op.name: op for op in table.ops}
    assert table.total_us == pytest.approx(45)  # kernels only: 30 + 10 + 5, no annotation span
    assert rows["aten::addmm"].share == pytest.approx(30 / 45)
    assert rows["aten::linear"].self_device_us == 0 and rows["aten::linear"].total_device_us == pytest.approx(30)
    assert rows["graph_node"].share == pytest.approx(5 / 45)  # unattributed kernel keeps its own row
    assert "surrobench::forward" not in rows and "ProfilerStep#3" not in rows
    assert sum(op.share for op in table.ops) == pytest.approx(1.0)
    assert rows["aten::linear"].self_cpu_us == pytest.approx(60 - 40)
    assert table.small_kernel_count == 0 and table.kernel_count == 3


def _event(
    name,
    *,
    cpu_us=0.0,
    self_cpu_us=0.0,
    kernels=(),
    children=(),
    device=False,
    annotation=False,
    mem=0,
    self_mem=0,
    shapes=(),
):
    """An op event stand-in (:class:`surrobench.collect.kineto_ops.OpEvent`'s attributes)."""
    self_dev = sum(k.duration for k in kernels)
    total_dev = self_dev + sum(c.device_time_total for c in children)
    return SimpleNamespace(
        name=name,
        device_type="CUDA" if device else "CPU",
        is_async=False,
        is_user_annotation=annotation,
        self_cpu_time_total=self_cpu_us,
        self_device_time_total=self_dev,
        device_time_total=total_dev,
        device_memory_usage=mem,
        self_device_memory_usage=self_mem,
        cpu_memory_usage=0,
        self_cpu_memory_usage=0,
        input_shapes=list(shapes),
        kernels=list(kernels),
        duration_us=cpu_us,
    )


def test_events_builder_with_device_times_and_annotations():
    k = lambda name, us: SimpleNamespace(name=name, duration=us)  # noqa: E731
    addmm = _event(
        "aten::addmm", self_cpu_us=8, kernels=[k("gemm", 30.0)], mem=1024, self_mem=1024, shapes=[[4, 8], [8, 8]]
    )
    linear = _event("aten::linear", self_cpu_us=2, children=[addmm], mem=1024, shapes=[[4, 8], [8, 8]])
    # The forward range carries its GPU-side copy as a "kernel": never a row, never kernel time.
    forward = _event("surrobench::forward", self_cpu_us=1, kernels=[k("surrobench::forward", 40.0)], annotation=True)
    events = [
        forward,
        linear,
        addmm,
        _event("gemm", cpu_us=30.0, device=True),
        _event("graph_node", cpu_us=10.0, device=True),
        _event("surrobench::forward", cpu_us=40.0, device=True, annotation=True),
    ]
    table = tables_from_events(events, active_steps=2)[0]
    rows = {op.name: op for op in table.ops}
    assert table.basis == "device" and table.total_us == pytest.approx(40)
    assert set(rows) == {"aten::addmm", "aten::linear", "graph_node"}
    assert rows["aten::addmm"].share == pytest.approx(0.75) and rows["graph_node"].share == pytest.approx(0.25)
    assert rows["aten::linear"].total_device_us == pytest.approx(30) and rows["aten::linear"].share == 0
    assert rows["aten::addmm"].device_mem_bytes == 1024 and rows["aten::addmm"].input_shapes == ("[[4, 8], [8, 8]]",)
    assert table.kernel_count == 2 and table.small_kernel_count == 0 and SMALL_KERNEL_US < 10


def test_compiled_region_is_a_range_not_the_top_op_in_memory():
    """Under torch.compile(mode="reduce-overhead") the graph replay is launched inside Dynamo's
    ``Torch-Compiled Region`` range: its kernels get their own rows, the range none."""
    k = lambda name, us: SimpleNamespace(name=name, duration=us)  # noqa: E731
    region = _event("Torch-Compiled Region: 0/2", self_cpu_us=5, kernels=[k("triton_poi_fused_0", 30.0)])
    mm = _event("aten::mm", self_cpu_us=3, kernels=[k("gemm", 10.0)])
    events = [
        region,
        mm,
        _event("triton_poi_fused_0", cpu_us=30.0, device=True),
        _event("gemm", cpu_us=10.0, device=True),
    ]
    rows = {op.name: op for op in tables_from_events(events, active_steps=1)[0].ops}
    assert set(rows) == {"triton_poi_fused_0", "aten::mm"} and rows["triton_poi_fused_0"].share == pytest.approx(0.75)


def test_compiled_region_is_a_range_not_the_top_op_in_a_trace(tmp_path):
    events = [
        cpu_op("Torch-Compiled Region: 0/1", 0, 100, ext=1),
        runtime("cudaGraphLaunch", 10, 5, corr=100, ext=1),
        kernel(20, 30, corr=100, name="triton_per_fused_1"),
        cpu_op("aten::convolution", 40, 20, ext=2),
        runtime("cudaLaunchKernel", 45, 5, corr=101, ext=2),
        kernel(60, 10, corr=101, name="conv_kernel"),
    ]
    rows = {op.name: op for op in op_table_from_trace(write(tmp_path / "region.json", events)).ops}
    assert "Torch-Compiled Region: 0/1" not in rows
    assert rows["triton_per_fused_1"].share == pytest.approx(0.75) and rows["aten::convolution"].share == pytest.approx(
        0.25
    )


def test_events_builder_cpu_basis_and_json_round_trip():
    events = [
        _event("aten::mm", self_cpu_us=30),
        _event("aten::add", self_cpu_us=10),
        _event("aten::mm", self_cpu_us=20),
    ]
    table = tables_from_events(events, active_steps=1)[0]
    assert table.basis == "cpu" and table.kernel_count is None
    assert [(op.name, op.calls, op.share) for op in table.ops] == [("aten::mm", 2, 50 / 60), ("aten::add", 1, 10 / 60)]
    assert OpTable.from_json(table.to_json()) == table


def test_a_launch_without_external_id_belongs_to_the_op_around_it_in_both_tables(tmp_path):
    from surrobench.analysis.activity import gpu_activity
    from surrobench.analysis.timeline import launch_stats
    from surrobench.trace import load_trace

    events = [
        cpu_op("aten::linear", 10, 60, ext=1),
        runtime("cudaLaunchKernel", 30, 5, corr=100),
        kernel(50, 30, corr=100, name="gemm_kernel"),
    ]
    tl = load_trace(write(tmp_path / "t.json", events))
    rows = {op.name: op for op in op_table_from_trace(tmp_path / "t.json").ops}
    assert "gemm_kernel" not in rows and rows["aten::linear"].self_device_us == pytest.approx(30)
    assert [op.op for op in launch_stats(tl, gpu_activity(tl)).top_ops] == ["aten::linear"]


def test_trace_metadata_op_kernels_go_to_the_enclosing_op(tmp_path):
    events = [
        annotation("ProfilerStep#1", 0, 200),
        cpu_op("aten::_transformer_encoder_layer_fwd", 10, 150, ext=1),
        cpu_op("aten::view", 20, 30, ext=2),
        runtime("cudaLaunchKernel", 25, 5, corr=100, ext=2),
        kernel(60, 40, corr=100, name="sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x64x8"),
        cpu_op("aten::addmm", 80, 30, ext=3),
        runtime("cudaLaunchKernel", 85, 5, corr=101, ext=3),
        kernel(110, 10, corr=101, name="sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8"),
    ]
    rows = {op.name: op for op in op_table_from_trace(write(tmp_path / "fast_path.json", events)).ops}
    assert rows["aten::view"].self_device_us == 0 and rows["aten::view"].total_device_us == 0
    assert rows["aten::_transformer_encoder_layer_fwd"].self_device_us == pytest.approx(40)
    assert rows["aten::addmm"].share == pytest.approx(10 / 50)
