"""Kernel attribution from torch.profiler's op events: metadata ops, module paths, compiled regions."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from surrobench.collect.kineto_ops import ops_from_kineto
from surrobench.collect.child import module_ranges, modules_lost
from surrobench.analysis.op_readings import read_shapes
from surrobench.collect.op_events import tables_from_events
from surrobench.records.kernels import module_path
from surrobench.records.ops import MAX_SHAPES_PER_OP

GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, Epilogue>"


def _op(name, parent=None, kernels=(), annotation=False):
    """A CPU op event stand-in (:class:`surrobench.collect.kineto_ops.OpEvent`) linked to its ``cpu_parent``."""
    return SimpleNamespace(
        name=name,
        device_type="CPU",
        is_async=False,
        is_user_annotation=annotation,
        self_cpu_time_total=1.0,
        self_device_time_total=sum(us for _, us in kernels),
        device_time_total=sum(us for _, us in kernels),
        device_memory_usage=0,
        self_device_memory_usage=0,
        input_shapes=[],
        kernels=[SimpleNamespace(name=n, duration=us) for n, us in kernels],
        cpu_parent=parent,
        duration_us=1.0,
    )


def _device(name, us):
    return SimpleNamespace(
        name=name,
        device_type="CUDA",
        is_async=False,
        kernels=[],
        duration_us=us,
        is_user_annotation=False,
    )


def test_the_fast_path_metadata_ops_credit_their_kernels_to_the_fused_layer():
    module = _op("surrobench::module::encoder.layers.0", annotation=True)
    layer = _op("aten::_transformer_encoder_layer_fwd", module, kernels=[(SOFTMAX, 5.0)])
    view = _op("aten::view", layer, kernels=[(GEMM, 30.0)])
    transpose = _op("aten::transpose", layer, kernels=[(GEMM, 20.0)])
    events = [module, layer, view, transpose, _device(GEMM, 30.0), _device(GEMM, 20.0), _device(SOFTMAX, 5.0)]
    ops, kernels = tables_from_events(events, active_steps=1)
    rows = {op.name: op for op in ops.ops}
    assert rows["aten::view"].self_device_us == 0 and rows["aten::transpose"].self_device_us == 0
    assert rows["aten::_transformer_encoder_layer_fwd"].share == pytest.approx(1.0)
    assert {k.op for k in kernels.kernels} == {"aten::_transformer_encoder_layer_fwd"}
    assert {k.module for k in kernels.kernels} == {"encoder.layers.0"}
    assert kernels.op_classes()["aten::_transformer_encoder_layer_fwd"] == pytest.approx(
        {"gemm": 50 / 55, "reduction": 5 / 55}
    )
    recredited = {n.op: n for n in kernels.notes if n.kind == "metadata_op_recredited"}
    assert recredited["aten::view"].device_us == 30.0 and recredited["aten::transpose"].device_us == 20.0
    assert sum(k.share for k in kernels.kernels) == pytest.approx(1.0)


def test_compiled_region_and_graph_replay_kernels_are_classified_with_the_mapping_lost():
    region = _op("Torch-Compiled Region: 0/1", kernels=[("triton_poi_fused_add_mul_0", 8.0)])
    launch = _op("cudaGraphLaunch")
    events = [region, launch, _device("triton_poi_fused_add_mul_0", 8.0), _device(GEMM, 12.0)]
    _, kernels = tables_from_events(events, active_steps=1, modules_lost=modules_lost("compile"))
    rows = {k.name: k for k in kernels.kernels}
    assert rows["triton_poi_fused_add_mul_0"].origin == "compiled"
    assert rows["triton_poi_fused_add_mul_0"].fused_ops == "add_mul"
    assert rows[GEMM].origin == "graph_replay" and rows[GEMM].kernel_class == "gemm"
    kinds = {n.kind for n in kernels.notes}
    assert {"compiled_unmapped", "graph_replay_unmapped", "compiled_by_name", "module_path_lost"} <= kinds


def test_module_ranges_name_each_op_with_its_module_path():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.ReLU(), nn.Linear(8, 2)))
    x = torch.randn(2, 4)
    with module_ranges(model), profile(activities=[ProfilerActivity.CPU]) as prof, torch.inference_mode():
        model(x)
    assert not model._forward_hooks and not model[0]._forward_pre_hooks  # removed on exit
    paths = {}
    for e in ops_from_kineto(prof.profiler.kineto_results, use_device=False):
        if e.name == "aten::addmm":
            node = e.cpu_parent
            while node is not None and module_path(node.name) is None:
                node = node.cpu_parent
            paths.setdefault(module_path(node.name) if node else None, 0)
    assert set(paths) == {"0", "1.1"}
    assert modules_lost("eager") is None and "graph" in modules_lost("cudagraph")


def test_each_op_knows_the_outermost_op_it_ran_inside():
    """On the CPU: the copies an ``aten::einsum`` makes are listed as inside it (ranges and module paths are
    skipped on the way up); a copy the model makes at the top of its step is not, and the einsum is inside
    nothing. Shares are of the op's self CPU time."""
    step = _op("ProfilerStep*", annotation=True)
    module = _op("surrobench::module::spectral.0", step, annotation=True)
    einsum = _op("aten::einsum", module)
    copies = [_op("aten::copy_", _op("aten::clone", einsum)) for _ in range(3)] + [_op("aten::copy_", module)]
    events = [step, module, einsum, *copies]
    for e in events:
        e.cpu_memory_usage = e.self_cpu_memory_usage = 0
    ops, _ = tables_from_events(events, active_steps=1)
    rows = {op.name: op for op in ops.ops}
    assert rows["aten::copy_"].inside == (("aten::einsum", pytest.approx(0.75)),)
    assert rows["aten::einsum"].inside == ()
    assert ops.from_json(ops.to_json()) == ops  # kept through the stored JSON
    stored_before = ops.to_json()
    for row in stored_before["ops"]:
        del row["inside"]
    assert all(op.inside == () for op in ops.from_json(stored_before).ops)  # a table stored before it reads


def test_an_ops_first_call_keeps_its_shapes_however_rare_so_reading_4_finds_the_input():
    calls = [[[4, 64, 5], [128, 5], [128]]] + [[[4, 64, d], [d, d], [d]] for d in (128, 256, 32, 96, 64, 16)] * 2
    events = [_op("aten::linear") for _ in calls]
    for event, shapes in zip(events, calls, strict=True):
        event.input_shapes, event.cpu_memory_usage, event.self_cpu_memory_usage = shapes, 0, 0
    table, _ = tables_from_events(events, active_steps=1)
    kept = table.ops[0].input_shapes
    assert len(kept) == MAX_SHAPES_PER_OP + 1 and kept[-1] == "[[4, 64, 5], [128, 5], [128]]"
    assert read_shapes(table, (4, 64, 5)).consumers == ("aten::linear",)
