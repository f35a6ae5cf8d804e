"""The kernel classifier on real kernel names captured on an H200, and the kernel table's attribution rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from surrobench.records.kernels import (
    KERNEL_CLASS_TABLE,
    KERNEL_CLASSES,
    OTHER,
    KernelRows,
    KernelTable,
    classify_kernel,
    inductor_fused_ops,
)
from surrobench.records.ops import VIEWS, categorize

FIXTURES = Path(__file__).parent.parent / "fixtures"
REAL = [
    json.loads((FIXTURES / f).read_text())["names"]
    for f in sorted(p.name for p in FIXTURES.glob("kernel_names_*.json"))
]
REAL_NAMES = [row for rows in REAL for row in rows]


@pytest.mark.parametrize("row", REAL_NAMES, ids=lambda row: row["name"][:60])
def test_real_kernel_names_get_their_class(row):
    assert classify_kernel(row["name"]) == row["kernel_class"]


def test_the_real_names_cover_most_classes():
    seen = {row["kernel_class"] for row in REAL_NAMES}
    assert {"gemm", "convolution", "fft", "elementwise", "reduction", "copy", "gather_scatter"} <= seen


@pytest.mark.parametrize(("cls", "pattern", "examples"), KERNEL_CLASS_TABLE, ids=lambda v: str(v)[:30])
def test_each_table_row_matches_its_own_examples(cls, pattern, examples):
    for example in examples:
        assert re.search(pattern, example.lower()), example
        assert classify_kernel(example) == cls, example


def test_the_vocabulary_is_closed():
    assert KERNEL_CLASSES[-1] == OTHER and len(set(KERNEL_CLASSES)) == len(KERNEL_CLASSES)
    assert classify_kernel("at::cuda::(anonymous namespace)::spin_kernel(long)") == OTHER


def test_inductor_names_carry_their_fused_ops():
    assert inductor_fused_ops("triton_poi_fused_add_mul_0") == "add_mul"
    assert inductor_fused_ops("triton_per_fused_clone_convolution_native_group_norm_12") == (
        "clone_convolution_native_group_norm"
    )
    assert inductor_fused_ops("void at::native::vectorized_elementwise_kernel<4>") is None


def test_metadata_ops_never_own_kernels_the_enclosing_op_does():
    rows = KernelRows()
    gemm = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>"
    # the transformer fast path: the kernel lands on a view nested in a transpose nested in the fused layer
    owner = rows.add(gemm, 30.0, ["aten::view", "aten::transpose", "aten::_transformer_encoder_layer_fwd"], "enc.0")
    rows.add(gemm, 10.0, ["aten::addmm", "aten::linear"], "head")
    table = rows.finish(active_steps=2, source="profiler")
    assert owner == "aten::_transformer_encoder_layer_fwd"
    assert not any(categorize(k.op) == VIEWS for k in table.kernels)
    fused = next(k for k in table.kernels if k.op == owner)
    assert fused.origin == "recredited" and fused.kernel_class == "gemm" and fused.module == "enc.0"
    note = next(n for n in table.notes if n.kind == "metadata_op_recredited")
    assert (note.op, note.into, note.kernels, note.device_us) == ("aten::view", owner, 1, 30.0)
    assert table.op_classes()[owner] == {"gemm": 1.0}
    assert sum(k.share for k in table.kernels) == pytest.approx(1.0)


def test_a_metadata_op_with_no_enclosing_op_loses_the_op_and_says_so():
    rows = KernelRows()
    assert rows.add("void at::native::vectorized_elementwise_kernel<4>", 5.0, ["aten::view"], None) is None
    table = rows.finish(active_steps=1, source="trace")
    assert table.kernels[0].op is None and table.kernels[0].origin == "no_op"
    assert [n.kind for n in table.notes] == ["metadata_op_no_parent"]


def test_graph_replay_kernels_are_classified_and_their_mapping_is_lost():
    rows = KernelRows()
    rows.add("triton_poi_fused_add_mul_0", 4.0, [], None, lost="graph_replay")
    rows.add("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc", 12.0, [], None, lost="graph_replay")
    rows.lost_modules("CUDA-graph replay")
    table = rows.finish(active_steps=1, source="trace")
    assert {k.kernel_class for k in table.kernels} == {"elementwise", "convolution"}
    assert all(k.origin == "graph_replay" and k.op is None for k in table.kernels)
    kinds = {n.kind: n for n in table.notes}
    assert kinds["graph_replay_unmapped"].kernels == 2 and kinds["graph_replay_unmapped"].device_us == 16.0
    assert kinds["compiled_by_name"].kernels == 1 and kinds["module_path_lost"].into == "CUDA-graph replay"
    assert next(k for k in table.kernels if k.fused_ops).fused_ops == "add_mul"
    assert table.class_shares() == {"convolution": 0.75, "elementwise": 0.25}


def test_kernels_of_a_compiled_region_say_so_and_keep_their_fused_ops():
    rows = KernelRows()
    rows.add("triton_per_fused_native_group_norm_0", 6.0, [], None, lost="compiled", calls=3)
    table = rows.finish(active_steps=3, source="profiler")
    row = table.kernels[0]
    assert (row.origin, row.calls, row.kernel_class, row.fused_ops) == ("compiled", 3, "reduction", "native_group_norm")
    assert {n.kind for n in table.notes} == {"compiled_unmapped", "compiled_by_name"}


def test_the_kernel_table_round_trips_through_json():
    rows = KernelRows()
    rows.add("regular_fft<128u>", 3.0, ["aten::_fft_r2c", "aten::fft_rfft2"], "spectral.0")
    table = rows.finish(active_steps=3, source="profiler")
    assert KernelTable.from_json(json.loads(json.dumps(table.to_json()))) == table


def test_each_op_category_row_matches_its_own_examples():
    """The op table's examples name their own row, first match winning: a matrix exponential is matmul work,
    not the elementwise ``exp`` its name holds."""
    from surrobench.records.ops import CATEGORY_TABLE

    for category, _, examples in CATEGORY_TABLE:
        for example in examples.split(", "):
            if example.startswith("aten::"):
                assert categorize(example) == category, example
    assert categorize("aten::linalg_matrix_exp") == categorize("aten::matrix_power") == "gemm/matmul/einsum"
    assert categorize("aten::exp") == "elementwise/activation"
