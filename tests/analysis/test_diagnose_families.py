"""Diagnoses on synthetic op tables of models surrobench did not write (an FNO's FFTs, a GNN's scatter and
gather, a U-Net's GroupNorm): each action fits its operator's family, severity follows the gain, one number
per fact, failures turned into findings, memory pressure only with a memory signal."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic import config, latency_samples

from surrobench.analysis.detect_ops import compute_bound, fragmented_ops, memory_bound
from surrobench.analysis.detect_run import memory_pressure
from surrobench.analysis.diagnose import ConfigEvidence, diagnose_config, diagnose_run
from surrobench.analysis.op_families import OP_FAMILIES, family_actions, family_of, is_copy
from surrobench.analysis.roofline import RooflineOp, RooflineReport
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS as TH
from surrobench.execution.failures import recorded_cause
from surrobench.records.ceilings import Ceilings
from surrobench.records.findings import SEVERITIES
from surrobench.records.ops import OpStat, OpTable, categorize

CEILINGS = Ceilings("NVIDIA H200", 4000.0, {"fp32": 50.0}, "2026-12-01T00:00:00+00:00")
RIDGE = CEILINGS.ridge_flop_per_byte("fp32")

_FAMILIES = {f.name: f for f in OP_FAMILIES}


def _op(name, category, ms, share, *, gbps, flops=None, peak_fraction=None):
    """A roofline op of ``ms`` per step moving ``gbps``; compute-bound at ``peak_fraction`` when given."""
    nbytes = int(gbps * 1e9 * ms / 1e3)
    if peak_fraction is not None:
        flops = int(peak_fraction * 50e12 * ms / 1e3)
        return RooflineOp(
            name,
            category,
            ms,
            share,
            flops,
            nbytes,
            flops / nbytes,
            peak_fraction * 50,
            gbps,
            "compute",
            peak_fraction,
            ms * (1 - peak_fraction),
            ("float32",),
        )
    fraction = gbps / CEILINGS.copy_gbps
    return RooflineOp(
        name,
        category,
        ms,
        share,
        flops,
        nbytes,
        None if flops is None else flops / nbytes,
        None if flops is None else flops / (ms / 1e3) / 1e12,
        gbps,
        "memory",
        fraction,
        ms * (1 - fraction),
        ("float32",),
    )


def _evidence(step_ms, *ops, table=None):
    roof = RooflineReport(CEILINGS, "fp32", RIDGE, tuple(ops))
    return ConfigEvidence(
        label="m", result=config(latency_samples(step_ms, 0.001, seed=7)), roofline=roof, op_table=table
    )


def test_every_family_has_a_gpu_and_a_cpu_action_and_no_category_twice():
    categories = [c for f in OP_FAMILIES for c in f.categories]
    assert len(categories) == len(set(categories))
    assert all(f.action and f.cpu_action and f.cause for f in OP_FAMILIES)
    assert family_of("aten::_fft_r2c").name == "fft" and family_of("regular_fft<...>").name == "fft"
    assert family_of("aten::scatter_add_").name == family_of("aten::index_add_").name == "index reduction"
    assert family_of("aten::index_select").name == family_of("aten::scatter_").name == "scatter/gather/index"
    assert family_of("aten::cat").name == family_of("CatArrayBatchedCopy").name == "copy/cast/cat"
    assert is_copy("aten::cat") and is_copy("aten::copy_") and not is_copy("aten::add") and not is_copy("ncclKernel")
    assert family_of("aten::native_group_norm").name == "normalization"
    assert family_of("ncclDevKernel_AllReduce_Sum_f32") is None
    # a lookup by index (a spline's knot table, a dense basis written by scatter_) holds no graph: no node reordering
    graph = {c.text for f in ("index reduction",) for c in next(x for x in OP_FAMILIES if x.name == f).action}
    lookup = {c.text for c in family_of("aten::scatter_").action + family_of("aten::scatter_").cpu_action}
    assert any("Cuthill" in t for t in graph) and not any("nodes" in t or "Cuthill" in t for t in lookup)


def test_fno_ffts_get_fft_advice_not_group_norm_advice():
    r2c = _op("aten::_fft_r2c", "fft", 2.0, 0.4, gbps=600.0, flops=10**9)
    c2r = _op("aten::_fft_c2r", "fft", 2.0, 0.4, gbps=600.0, flops=10**9)
    f = memory_bound(_evidence(5.0, r2c, c2r), TH)
    assert f.kind == "memory_bound"
    (fft,) = [c for c in f.clauses if c.text.startswith(f"{family_of('aten::_fft_r2c').name} (")]  # family, ops
    assert all(name in fft.text for name in ("aten::_fft_r2c", "aten::_fft_c2r"))
    for advice in ("power-of-2", "batch the transforms", "cufft_plan_cache", "half precision only at power-of-2"):
        assert advice in f.action
    assert "group" not in f.action.lower() and "NHWC" not in f.action
    assert any("aten::_fft_r2c: 0.83 FLOP/byte < ridge 12.5" in e.text for e in f.evidence)


def test_gnn_scatter_and_gather_get_irregular_access_advice():
    scatter = _op("aten::scatter_add_", "concat/index/gather/scatter", 3.0, 0.45, gbps=350.0, flops=10**6)
    gather = _op("aten::index_select", "concat/index/gather/scatter", 2.0, 0.3, gbps=330.0, flops=0)
    f = memory_bound(_evidence(6.0, scatter, gather), TH)
    for advice in (
        "by destination",
        "segment/CSR reduction",
        "renumber the destinations",
        "int32 indices",
        "non-coalesced",
        "atomic",
    ):
        assert advice in f.action
    assert "more bandwidth would not help" in f.action  # 9% and 8% of the copy bandwidth
    assert "group" not in f.action.lower() and "channels" not in f.action.lower()


def test_group_norm_advice_neither_recommends_nor_warns_against_channels_last():
    # channels_last slowed one U-Net on the H200; whether it pays is measured (tune/advice.py), not a prior
    gn = _op("aten::native_group_norm", "normalization", 3.7, 0.6, gbps=130.0)  # FLOPs unknown: by its family
    f = memory_bound(_evidence(6.0, gn), TH)
    assert "NCHW" not in f.action and "NHWC" not in f.action
    assert any("FLOPs unknown (normalization op" in e.text for e in f.evidence)


def _joined(clauses) -> str:
    return "; ".join(c.text for c in clauses)


def test_two_families_give_two_actions_each_once():
    text = _joined(family_actions(["aten::_fft_r2c", "aten::gelu", "aten::_fft_c2r", "aten::add"]))
    fft, elementwise = (_joined(_FAMILIES[name].action) for name in ("fft", "elementwise"))
    assert text.count(fft) == 1 and text.count(elementwise) == 1
    assert text.index("fft (") < text.index("elementwise (") and family_actions(["nccl:all_reduce"]) == ()


def test_each_family_names_the_remedies_its_clauses_suggest():
    """The remedy ids are the detectors' words for what optimize measures; a caveat or a warning names none."""
    remedies = {f.name: [c.remedies for c in f.action] for f in OP_FAMILIES}
    assert remedies["normalization"] == [(), ("compile",)]
    assert remedies["convolution"] == [("tf32", "bf16"), ("cudnn_benchmark",), ()]
    assert remedies["fft"] == [(), (), (), ()]  # "half precision only at power-of-2 sizes" is a caveat
    assert [c.remedies for c in _FAMILIES["convolution"].cpu_action] == [("threads",), (), ("channels_last",)]
    clauses = family_actions(["aten::convolution", "aten::gelu"])
    assert clauses[0].text.startswith("convolution (aten::convolution): ") and clauses[0].remedies == ("tf32", "bf16")
    assert clauses[-1].remedies == ("compile",)


def test_severity_follows_the_estimated_gain():
    """The FNO 512x512 b8 case: a compute-bound op with the larger gain must not rank below a memory-bound one."""
    conv = _op("aten::convolution", "convolution", 8.0, 0.5, gbps=100.0, peak_fraction=0.1)
    fft = _op("aten::_fft_r2c", "fft", 5.0, 0.3, gbps=1500.0, flops=10**9)
    ev = _evidence(16.0, conv, fft)
    comp, mem = compute_bound(ev, TH), memory_bound(ev, TH)
    assert comp.estimated_gain_ms == pytest.approx(8.0 * (1 - 0.1 / TH.compute_efficient_fraction))
    assert mem.estimated_gain_ms == pytest.approx(5.0 * (1 - 1500 / 4000))
    assert comp.estimated_gain_ms > mem.estimated_gain_ms
    assert SEVERITIES.index(comp.severity) <= SEVERITIES.index(mem.severity)
    ranked = diagnose_config(ev)
    gains = [f.estimated_gain_ms for f in ranked if f.estimated_gain_ms is not None]
    assert gains == sorted(gains, reverse=True)
    assert "tf32" in comp.action and "cudnn.benchmark" in comp.action


def test_fragmented_ops_say_one_number_per_fact():
    ops = (
        OpStat("aten::add", "elementwise/activation", 2000, 380.0, 380.0, 0.38, 380.0),
        OpStat("aten::native_group_norm", "normalization", 2000, 110.0, 110.0, 0.11, 110.0),
        OpStat("aten::conv2d", "convolution", 10, 510.0, 510.0, 0.51, 510.0),
    )
    table = OpTable(ops, "cpu", 1000.0, 1, "profiler")
    f = fragmented_ops(ConfigEvidence(result=config(latency_samples(1.0, 0.001)), op_table=table), TH)
    assert f.summary.startswith("49% of op time")
    first = f.evidence[0]
    assert (
        first.value == pytest.approx(0.49)
        and "38%" in first.text
        and "11%" in first.text
        and "49% in all" in first.text
    )
    assert "torch.compile" in f.action


def _ok(batch, median_ms, noise, extra=None, seed=0):
    return config(latency_samples(median_ms, noise, n=50, seed=seed), model="m", batch=batch, extra=extra)


def test_a_throughput_dip_inside_the_noise_is_no_memory_pressure():
    noisy = [_ok(1, 1.0, 0.6, seed=1), _ok(2, 2.5, 0.6, seed=2)]  # 20% fewer samples/s, CIs overlapping
    assert memory_pressure(noisy, TH, 1 << 21) == []
    clean = [_ok(1, 1.0, 0.01, seed=1), _ok(2, 2.5, 0.01, seed=2)]  # the same fall, beyond the noise
    (found,) = memory_pressure(clean, TH, 1 << 21)  # the larger batch at half the memory
    assert "beyond the noise" in found.summary and "95% CI" in found.evidence[0].text


def test_allocator_retries_are_a_memory_signal():
    (found,) = memory_pressure([_ok(1, 1.0, 0.01, extra={"alloc_retries": 3})], TH, None)
    assert found.kind == "memory_pressure" and "retried 3" in found.summary


def _failed(precision, error, mode="eager"):
    r = config([], model="fno", size=96, precision=precision, mode=mode, status="error")
    return replace(r, error=error)


def test_fft_precision_failures_become_one_precision_mismatch():
    results = [
        config(latency_samples(2.0, 0.01), model="fno", size=96),
        _failed("bf16", "RuntimeError: Unsupported dtype BFloat16"),
        _failed(
            "fp16",
            "RuntimeError: cuFFT only supports dimensions whose sizes are powers of two when "
            "computing in half precision, but got a signal size of[96, 96]",
        ),
    ]
    (f,) = [f for f in diagnose_run([], results) if f.kind == "precision_mismatch"]
    assert f.summary == "bf16 is not available for this model's FFTs; fp16 FFTs need power-of-2 sizes"
    assert [e.text for e in f.evidence] == [f"{r.precision} failed: {r.error}" for r in results[1:]]
    causes = [recorded_cause(r.error, r.extra) for r in results[1:]]  # the failures' causes, as stored
    assert [c.cause_id for c in causes] == ["fft_no_bf16", "fft_half_size"] and f.estimated_gain_ms is None
    assert f.action == "; ".join(c.line for c in causes)  # each cause's line: keep fp32, or pad to a power of 2


def test_graph_capture_failure_is_a_host_sync_finding():
    results = [
        _failed(
            "fp32",
            "RuntimeError: CUDA error: operation failed due to a previous error during capture",
            mode="cudagraph",
        )
    ]
    (f,) = diagnose_run([], results)
    assert f.kind == "host_sync" and "graph capture" in f.summary and "remove it from forward" in f.action


def test_superlinear_group_norm_gets_its_family_advice_not_nhwc():
    from surrobench.analysis.detect_run import superlinear_scaling

    def table(total_us):
        return OpTable(
            (
                OpStat(
                    "aten::native_group_norm", "normalization", 10, 0.5 * total_us, 0.5 * total_us, 0.5, 0.5 * total_us
                ),
            ),
            "device",
            total_us,
            1,
            "profiler",
        )

    # a GPU's configs (a device-basis table): a CPU's get the CPU's words (analysis.op_families.words)
    small = replace(config(latency_samples(1.0, 0.01), model="u", size=64), device="cuda")
    large = replace(config(latency_samples(20.0, 0.01), model="u", size=128), device="cuda")
    (f,) = superlinear_scaling([small, large], {small.key(): table(600), large.key(): table(9600)}, TH, {})
    assert "NHWC" not in f.action and "channels-last" not in f.action and "NCHW" not in f.action


def test_a_host_to_device_copy_is_not_a_memory_bound_op():
    # the pageable-h2d scenario on the H200: aten::_to_copy held 93% of op time at 14 GB/s, which is the host
    # link (h2d_transfer's finding), not device memory bandwidth
    from surrobench.analysis.timeline import TraceFacts

    copy = _op("aten::_to_copy", "copy/cast", 11.0, 0.7, gbps=14.0, flops=0)
    norm = _op("aten::native_group_norm", "normalization", 3.0, 0.2, gbps=100.0, flops=10**6)
    facts = TraceFacts(
        steps=3,
        step_ms=15.0,
        gpu_busy_ms=15.0,
        busy_share=0.95,
        launch_gap_ms=0.0,
        model_syncs=0,
        sync_op="",
        model_sync_gap_ms=0.0,
        h2d_ms=10.5,
        h2d_bytes=96 * 2**20,
        h2d_pageable_share=1.0,
        stream_waits=0.0,
    )
    f = memory_bound(replace(_evidence(15.0, copy, norm), facts=facts), TH)
    assert f is not None and "aten::_to_copy" not in f.summary and "native_group_norm" in f.summary
    # without host-to-device copies on the timeline the same copy op stays memory-bound
    f = memory_bound(_evidence(15.0, copy, norm), TH)
    assert "aten::_to_copy" in f.summary


def test_a_clause_two_families_share_stands_once_in_their_action():
    from surrobench.analysis.op_families import family_actions

    texts = [c.text for c in family_actions(["aten::convolution", "aten::bmm"], cpu=True)]
    assert texts.count("a larger batch") == 1 and len(texts) == len(set(texts))
    assert any(t.startswith("convolution (aten::convolution)") for t in texts)
    assert any(t.startswith("gemm/matmul/einsum (aten::bmm)") for t in texts)


def test_a_nearest_neighbour_search_is_a_distance_selection_family_on_a_cpu_op_table():
    """An EdgeConv's kNN (cdist then topk, as DGCNN): its ops are one family with its own advice, not "other"."""
    ops = (
        OpStat("aten::_cdist_forward", "distance/selection", 100, 0.0, 0.0, 0.35, 3500.0),
        OpStat("aten::topk", "distance/selection", 100, 0.0, 0.0, 0.25, 2500.0),
        OpStat("aten::addmm", "gemm/matmul/einsum", 100, 0.0, 0.0, 0.40, 4000.0),
    )
    table = OpTable(ops, "cpu", 10000.0, 1, "profiler")
    f = memory_bound(ConfigEvidence(result=config(latency_samples(10.0, 0.001)), op_table=table), TH)
    assert f.summary.startswith("6.000 ms per step in memory-bound ops (aten::_cdist_forward, aten::topk)")
    assert f.clauses[0].text.startswith("distance/selection (aten::_cdist_forward, aten::topk): all-pairs")
    assert any("KD-tree kNN" in c.text for c in f.clauses) and ("threads",) in [c.remedies for c in f.clauses]


def test_topk_is_advised_over_a_full_sort_only_where_the_op_table_holds_a_sort():
    """A trial's graph U-Net selects its k nearest with cdist then topk, and was told "select the k nearest with topk,
    not a full sort": the op table holds no sort, so no such clause; a kNN that sorts (argsort: ATen's sort) is told.
    Alike the top-k pooling's "topk for the k largest" beside its own topk."""
    knn = [("aten::_cdist_forward", 0.3, ()), ("aten::topk", 0.5, ("[[1, 1024, 1024], [], [], [], []]",))]
    for sort, told in ((None, False), (("aten::sort", 0.2, ()), True), (("aten::searchsorted", 0.2, ()), False)):
        clauses = family_actions([n for n, _, _ in knn], cpu=True, table=_cpu_table(*knn, *[sort] if sort else ()))
        assert any("select the k nearest with topk" in c.text for c in clauses) == told
        assert clauses[0].text.startswith("distance/selection (aten::_cdist_forward, aten::topk): all-pairs")
        assert any("KD-tree" in c.text for c in clauses) and ("threads",) in [c.remedies for c in clauses]
    pool = _cpu_table(("aten::topk", 0.6, ("[[1024], [], [], [], []]",)), ("aten::addmm", 0.4, ()))
    assert not any("k largest" in c.text for c in family_actions(["aten::topk"], cpu=True, table=pool))
    assert any("k largest" in c.text for c in family_actions(["aten::sort"], cpu=True, table=pool))


def test_pytorchs_own_im2col_convolutions_are_read_by_their_op_not_as_onednn():
    """slow_conv3d_forward (and the 2-D fallbacks) are not oneDNN: no oneDNN layout advice; bf16 is named (it
    routes the convolution to oneDNN), as are the threads; oneDNN's own convolution keeps the convolution family."""
    for name in ("aten::slow_conv3d_forward", "aten::_slow_conv2d_forward", "aten::thnn_conv2d"):
        assert family_of(name).name == "im2col convolution" and not family_of(name).low_intensity
    assert family_of("aten::mkldnn_convolution").name == "convolution"
    clauses = family_actions(["aten::slow_conv3d_forward"], cpu=True)
    assert [c.remedies for c in clauses] == [("bf16",), ("threads",)]
    assert not any("oneDNN reorders" in c.text or "channels_last" in c.text for c in clauses)
    mixed = family_actions(["aten::_slow_conv2d_forward", "aten::mkldnn_convolution"], cpu=True)
    assert {r for c in mixed for r in c.remedies} == {"bf16", "threads", "channels_last"}


def _cpu_table(*rows):
    """A CPU op table of ``(name, share, input shapes)`` rows, 10 ms per step."""
    ops = tuple(OpStat(n, categorize(n), 10, 0.0, 0.0, s, 10000.0 * s, input_shapes=shapes) for n, s, shapes in rows)
    return OpTable(ops, "cpu", 10000.0, 1, "profiler")


def _memory_bound(table):
    return memory_bound(ConfigEvidence(result=config(latency_samples(10.0, 0.001)), op_table=table), TH)


def _memory_bound_texts(table) -> list[str]:
    return [c.text for c in _memory_bound(table).clauses]


def test_a_selection_without_distances_is_no_nearest_neighbour_search():
    """A graph U-Net's top-k pooling over node scores (topk of a 1-D [1024]) and its index_add_ aggregation: no
    distance op, so no kNN advice; the adds by index get the CSR advice, a gather by index only its own."""
    table = _cpu_table(
        ("aten::index", 0.4, ("[[1, 1024, 64], []]",)),
        ("aten::index_add_", 0.3, ("[[1, 1024, 64], [], [5890], [1, 5890, 64], []]",)),
        ("aten::topk", 0.2, ("[[1024], [], [], [], []]",)),
        ("aten::addmm", 0.1, ()),
    )
    texts = _memory_bound_texts(table)
    joined = "; ".join(texts)
    assert "KD-tree" not in joined and "all-pairs" not in joined and "nearest" not in joined
    assert texts[0].startswith("scatter/gather/index (aten::index): irregular access by index")
    assert any(t.startswith("index reduction (aten::index_add_): adds by index") and "CSR" in t for t in texts)
    assert any(t.startswith("sort/selection (aten::topk)") for t in texts)
    # the same topk over a square [1, 1024, 1024] matrix (x @ x.T: all pairs) is a kNN's
    square = replace(table.ops[2], input_shapes=("[[1, 1024, 1024], [], [], [], []]",))
    texts = _memory_bound_texts(replace(table, ops=(*table.ops[:2], square, table.ops[3])))
    assert any(t.startswith("distance/selection (aten::topk): all-pairs") for t in texts)


def test_a_knot_search_and_a_scatter_into_a_dense_basis_get_their_own_advice():
    """A KAN layer: searchsorted over spline knots and scatter_ (a write) of the hat weights into a zero basis: a
    search, not a kNN; a write by index, not the adds by destination of a graph."""
    table = _cpu_table(
        ("aten::searchsorted", 0.4, ("[[12], [1, 4096, 32], [], [], [], []]",)),
        ("aten::scatter_", 0.3, ("[[1, 4096, 32, 12], [], [1, 4096, 32, 1], [1, 4096, 32, 1]]",)),
        ("aten::mm", 0.3, ()),
    )
    texts = _memory_bound_texts(table)
    joined = "; ".join(texts)
    assert texts[0].startswith("search (aten::searchsorted): a binary search per element") and "floor(" in texts[0]
    assert "KD-tree" not in joined and "destination" not in joined and "CSR" not in joined
    assert any(t.startswith("scatter/gather/index (aten::scatter_): irregular access by index") for t in texts)


def test_copies_inside_a_linear_are_told_as_its_bias_broadcast_not_its_operands_layout():
    """A trial's hash-grid field and the zoo MeshGraphNet (CPU, torch 2.13): aten::copy_ runs inside aten::linear,
    where addmm copies the 1-D bias (aten::expand of [64]) into its output before the matmul; no change of the
    operands' layout or dtype removes it, so none is advised. The zoo FNO's copies inside aten::einsum come with a
    clone (its permuted operands made dense): there the layout is told; with neither in the table, only the op."""

    def clauses(outer, *inner):
        linear = (outer, 1.0)
        rows = [("aten::mul", 0.4, ()), ("aten::copy_", 0.3, ("[[8192, 64], [8192, 64], []]",))]
        table = _cpu_table(*rows, (outer, 0.2, ()), *((n, 0.01, shapes) for n, shapes in inner))
        table = replace(
            table, ops=tuple(replace(op, inside=(linear,)) if op.name != outer else op for op in table.ops[1:])
        )
        return family_actions(["aten::copy_"], cpu=True, table=table)

    (bias,) = clauses(
        "aten::linear",
        ("aten::addmm", ("[[64], [8192, 16], [16, 64], [], []]",)),
        ("aten::expand", ("[[64], [], []]",)),
    )
    assert bias.text.startswith(
        "copy/cast/cat (aten::copy_): most of their time runs inside aten::linear, a 1-D operand ([64]"
    )
    assert "change how" not in bias.text and bias.remedies == ()
    (einsum,) = clauses("aten::einsum", ("aten::bmm", ()), ("aten::clone", ("[[32, 32], []]",)))
    assert einsum.text.endswith(
        "change how aten::einsum is called (its operands' layout and dtype, the dims it contracts)"
    )
    (bare,) = clauses("aten::upsample_bilinear2d")
    assert bare.text.endswith("inside aten::upsample_bilinear2d: change how aten::upsample_bilinear2d is called")


def test_permuted_4d_tensors_copied_name_channels_last_for_diagnose_to_measure():
    """A Swin operator lifts (B, C, H, W) by a conv, permutes it to (B, H, W, C) and copies it contiguous: its copies
    name channels_last (a remedy diagnose measures); a conv net's 4-D bias copies with no permute do not."""
    rows = (
        ("aten::copy_", 0.5, ("[[1, 32, 32, 48], [1, 32, 32, 48], []]",)),
        ("aten::permute", 0.01, ("[[1, 48, 32, 32], []]",)),
        ("aten::bmm", 0.49, ()),
    )
    clauses = _memory_bound(_cpu_table(*rows)).clauses
    assert clauses[0].text.startswith("copy/cast/cat (aten::copy_)") and ("channels_last",) in [
        c.remedies for c in clauses
    ]
    no_permute = _cpu_table(("aten::copy_", 0.5, ("[[1, 16, 32, 32], [16, 1, 1], []]",)), ("aten::bmm", 0.5, ()))
    assert all("channels_last" not in c.remedies for c in _memory_bound(no_permute).clauses)


def test_a_roofline_selection_is_named_by_the_family_its_table_shows():
    """On a roofline, a topk's unknown FLOPs name the kNN family only beside a distance op in the op table."""
    topk = _op("aten::topk", "distance/selection", 3.0, 0.6, gbps=100.0)
    for rows, family in (([("aten::cdist", 0.1, ())], "distance/selection"), ([], "sort/selection")):
        table = _cpu_table(("aten::topk", 0.6, ()), *rows)
        f = memory_bound(_evidence(5.0, topk, table=table), TH)
        assert any(f"aten::topk: FLOPs unknown ({family} op" in e.text for e in f.evidence)


@pytest.mark.parametrize(
    "name",
    [
        "aten::upsample_trilinear3d",
        "aten::upsample_bilinear2d",
        "aten::upsample_nearest2d",
        "aten::_upsample_bilinear2d_aa",
        "void at::native::(anonymous namespace)::upsample_nearest2d_out_frame<float, "
        "&at::native::nearest_neighbor_compute_source_index>(float const*, float*)",
    ],
)
def test_interpolation_is_a_resampling_read_not_a_gather_by_index(name):
    assert categorize(name) == "elementwise/activation"
    family = family_of(name)
    assert family.name == "elementwise" and family.low_intensity
    assert not [c for c in family.action + family.cpu_action if "indices" in c.text]


def test_a_grid_sample_is_a_gather_at_the_grid_s_coordinates_without_index_advice():
    for name in ("aten::grid_sampler_2d", "aten::grid_sampler_3d", "aten::cudnn_grid_sampler"):
        assert categorize(name) == "concat/index/gather/scatter"
        assert family_of(name).name == "grid sampling"
    op = _op("aten::grid_sampler_2d", "concat/index/gather/scatter", 2.0, 0.5, gbps=300.0, flops=0)
    f = memory_bound(_evidence(4.0, op), TH)
    assert f"{family_of(op.name).name} ({op.name})" in f.action and "grid's points" in f.action
    assert "int32" not in f.action


def test_a_cpu_memory_bound_action_gives_each_op_the_family_its_profile_category_names():
    """The trial's V-cycle on a CPU: aten::avg_pool2d, which the profile categorises as a reduction, is told as one,
    not "elementwise"; aten::copy_, 95% of it inside aten::upsample_bilinear2d (the model casts and concatenates
    nothing), is that op's: change how it is called, not "cast once ... instead of torch.cat"."""
    upsample = (("aten::upsample_bilinear2d", 0.95),)
    ops = (
        OpStat("aten::mkldnn_convolution", "convolution", 40, 0.0, 0.0, 0.55, 85000.0, inside=(("aten::conv2d", 1.0),)),
        OpStat("aten::avg_pool2d", "reduction", 15, 0.0, 0.0, 0.12, 19000.0),
        OpStat("aten::copy_", "copy/cast/contiguous", 95, 0.0, 0.0, 0.10, 16000.0, inside=upsample),
        OpStat("aten::upsample_bilinear2d", "elementwise/activation", 15, 0.0, 0.0, 0.23, 35000.0),
    )
    table = OpTable(ops, "cpu", 155000.0, 5, "profiler")
    ev = ConfigEvidence(label="m", result=config(latency_samples(37.0, 0.001, seed=7)), op_table=table)
    found = memory_bound(ev, TH)
    heads = [c.text.split(": ")[0] for c in found.clauses]
    assert heads[:2] == ["reduction (aten::avg_pool2d)", "copy/cast/cat (aten::copy_)"]
    assert family_of("aten::avg_pool2d").name == categorize("aten::avg_pool2d") == "reduction"
    assert "change how aten::upsample_bilinear2d is called" in found.clauses[1].text
    assert "torch.cat" not in found.action and found.clauses[0].remedies == ("compile",)
    cat = replace(table, ops=(*ops, OpStat("aten::cat", "concat/index/gather/scatter", 15, 0.0, 0.0, 0.01, 900.0)))
    mixed = family_actions(["aten::copy_", "aten::cat"], cpu=True, table=cat)  # a model that concatenates: still told
    assert "inside aten::upsample_bilinear2d" in mixed[0].text and "torch.cat" in mixed[1].text


def test_slice_once_per_step_is_told_only_of_views_that_slice():
    """The trial's spectral-element model expands a weight vector and slices nothing: its views' action had
    "slice once per step, not per row" all the same. The clause is drawn from the views named."""

    def texts(*names):
        return [c.text.split(": ")[-1] for c in family_actions(list(names), cpu=True)]

    assert "slice once per step, not per row" not in texts("aten::expand", "aten::as_strided")
    assert "slice once per step, not per row" in texts("aten::expand", "aten::slice")
    assert "slice once per step, not per row" in texts("aten::select")
