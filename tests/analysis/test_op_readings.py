"""The four readings on the real H200 traces and on tables built to cross each threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kineto_synth import op_table_from_trace

from surrobench.analysis.op_readings import (
    FRAGMENTED_SHARE,
    MEMORY_SHARE_MIN,
    read_fragmentation,
    read_memory,
    read_shapes,
    read_structure,
    read_table,
)
from surrobench.records.ops import OpStat, OpTable

TRACES = Path(__file__).parent.parent / "fixtures" / "traces"


def _op(name, category, share, *, mem=0, self_mem=0, self_us=None, shapes=()):
    us = 100.0 * share if self_us is None else self_us
    return OpStat(name, category, 1, us, us, share, 1.0, mem, self_mem, tuple(shapes))


def _table(*ops, basis="device", has_shapes=True):
    return OpTable(
        ops=tuple(ops),
        basis=basis,
        total_us=100.0,
        active_steps=1,
        source="profiler",
        has_shapes=has_shapes,
        has_memory=True,
    )


def test_fno_fixture_readings_flag_fragmentation_and_structure_mismatch():
    table = op_table_from_trace(TRACES / "fno2d_128_b1_fp32_h200.json.gz")
    readings = read_table(table, "fno2d", (1, 3, 128, 128))
    assert readings.structure.matches is False  # copies and elementwise lead, not FFT/einsum
    assert readings.structure.top_category == "copy/cast/contiguous"
    assert readings.fragmentation.flagged and readings.fragmentation.share > FRAGMENTED_SHARE
    assert readings.fragmentation.small_kernel_count > 200
    assert readings.memory.available is False and readings.shapes.matches is None  # not in a trace file


def test_unet_fixture_structure_matches():
    table = op_table_from_trace(TRACES / "unet_256_b1_fp32_h200.json.gz")
    structure = read_structure(table, "unet2d")
    assert structure.matches and structure.top_category == "normalization"
    assert structure.expected_share > 0.85 and structure.head[0][0] == "aten::native_group_norm"
    assert not read_fragmentation(table).flagged


def test_structure_unknown_model_has_no_verdict():
    assert read_structure(_table(_op("aten::mm", "gemm/matmul/einsum", 1.0)), "my.module:build").matches is None


def test_memory_candidates_need_own_kernels_and_high_memory_low_time():
    table = _table(
        _op("aten::native_group_norm", "normalization", 0.05, mem=600, self_mem=100),  # 60% memory, 5% time
        _op("aten::cudnn_convolution", "convolution", 0.90, mem=300, self_mem=300),  # time-heavy
        _op("aten::empty", "other", 0.0, mem=600, self_mem=600, self_us=0.0),  # allocator: no kernel of its own
        _op("aten::add", "elementwise/activation", 0.05, mem=50, self_mem=0),  # 5% memory: under the minimum
    )
    reading = read_memory(table)
    assert reading.available and [c["name"] for c in reading.candidates] == ["aten::native_group_norm"]
    assert reading.candidates[0]["mem_share"] == pytest.approx(0.6) and 0.05 < MEMORY_SHARE_MIN
    assert read_memory(_table(*table.ops, basis="cpu")).available is False


def test_a_cpu_tables_readings_say_the_small_call_bound_and_why_memory_is_not_read():
    """A fresh-user trial's CPU profile printed "fragmented small ops: ... = 0.0%" beside 65% of elementwise, copy and
    concat time (calls over 20 us each) and "a CPU profile records no memory per op" under its mem MiB columns."""
    from surrobench.report.op_tables import reading_lines

    cat = OpStat("aten::cat", "concat/index/gather/scatter", 1, 0.0, 0.0, 0.6, 60.0, 45, 45)  # 60 us a call
    table = _table(cat, OpStat("aten::addmm", "gemm/matmul/einsum", 1, 0.0, 0.0, 0.4, 40.0, 80, 40), basis="cpu")
    readings = read_table(table, "m", (1, 8)).to_json()
    assert readings["fragmentation"]["share"] == 0.0  # 60 us a call: over the bound
    lines = reading_lines(readings, "cpu")
    assert lines[1] == "2. fragmented small ops: calls under 20 us: elementwise 0.0% + copy 0.0% + concat 0.0% = 0.0%"
    assert lines[2].startswith("3. memory-bound candidates: per-op memory not read: on a CPU, memory-bound by op")
    gpu = read_table(_table(*table.ops), "m", (1, 8)).to_json()
    assert (
        reading_lines(gpu)[1]
        == "2. fragmented small ops: elementwise 0.0% + copy 0.0% + concat 60.0% = 60.0% -- fusion targets"
    )


def test_shapes_requested_vs_executed():
    table = _table(
        _op("aten::conv2d", "convolution", 0.6, shapes=["[[2, 3, 64, 64], [16, 3, 3, 3], [16]]"]),
        _op("aten::add", "elementwise/activation", 0.4, shapes=["[[2, 16, 64, 64], []]"]),
    )
    assert read_shapes(table, (2, 3, 64, 64)).consumers == ("aten::conv2d",)
    missed = read_shapes(table, (2, 3, 128, 128))
    assert missed.matches is False and missed.head_shapes["aten::conv2d"] == ("[[2, 3, 64, 64], [16, 3, 3, 3], [16]]",)
    assert read_shapes(_table(*table.ops, has_shapes=False), (2, 3, 64, 64)).matches is None
    # compiled, a miss is no evidence of reshaping: the ops see the compiled graph's buffers
    compiled = read_shapes(table, (2, 3, 128, 128), compiled=True)
    assert compiled.matches is None and "ran compiled" in compiled.unknown_why
    assert read_shapes(table, (2, 3, 64, 64), compiled=True).matches is True


def test_every_input_of_a_two_input_model_is_checked_and_named():
    from surrobench.report.op_tables import reading_lines

    table = _table(
        _op("aten::addmm", "gemm/matmul/einsum", 0.6, shapes=["[[64], [1, 100], [100, 64]]"]),
        _op("aten::mul", "elementwise/activation", 0.4, shapes=["[[64, 2], [64, 2]]"]),
    )
    both = read_shapes(table, (64, 2), (1, 100))
    assert (both.requested, both.inputs, both.matches) == ((64, 2), ((64, 2), (1, 100)), True)
    assert both.consumers == ("aten::mul", "aten::addmm")  # the primary input's consumers first
    one = read_shapes(table, (64, 2), (1, 16, 8))
    assert one.matches is False and one.missing == ((1, 16, 8),) and one.consumers == ("aten::mul",)
    readings = json.loads(json.dumps(read_table(table, "m", (64, 2), (1, 16, 8)).to_json()))
    assert reading_lines(readings)[3] == (
        "4. shapes: requested 64x2,1x16x8: 1x16x8 NOT among any op's inputs (reshaped or padded before the model?)"
    )
    readings["shapes"] = {"requested": [64, 2], "consumers": [], "matches": False}  # profile-v3: the primary alone
    assert reading_lines(readings)[3].startswith("4. shapes: requested 64x2 is NOT among")


def test_fragments_of_the_index_category_are_its_concatenations_only():
    """A graph U-Net's gathers by index hold the time, not its concatenations: reading 2 counts aten::cat under
    concat and leaves aten::index and aten::index_add_ (irregular access, memory_bound's) out."""
    cat, conv = _op("aten::cat", "concat/index/gather/scatter", 0.1), _op("aten::conv2d", "convolution", 0.2)
    index = _op("aten::index", "concat/index/gather/scatter", 0.4)
    add = _op("aten::index_add_", "concat/index/gather/scatter", 0.3)
    reading = read_fragmentation(_table(cat, index, add, conv))
    assert reading.by_category["concat/index/gather/scatter"] == pytest.approx(0.1)
    assert reading.share == pytest.approx(0.1) and not reading.flagged


def test_structure_reading_fields_and_a_table_without_ops():
    table = _table(_op("aten::mm", "gemm/matmul/einsum", 0.7), _op("aten::add", "elementwise/activation", 0.3))
    reading = read_structure(table, "pinn-mlp")
    assert (reading.model, reading.expected, reading.matches) == ("pinn-mlp", ("gemm/matmul/einsum",), True)
    assert (reading.top_category, reading.top_category_share) == ("gemm/matmul/einsum", pytest.approx(0.7))
    assert reading.expected_share == pytest.approx(0.7) and [h[0] for h in reading.head] == ["aten::mm", "aten::add"]
    empty = read_structure(_table(), "pinn-mlp")
    assert (empty.top_category, empty.top_category_share, empty.matches) == (None, 0.0, False)
    assert empty.expected_share == 0.0 and empty.head == ()
