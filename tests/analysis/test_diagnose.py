"""The diagnosis on planted timelines, op tables and runs, on the H200 fixture traces, and on a healthy control."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kineto_synth import annotation, cpu_op, launch, memcpy, runtime, write
from synthetic import config, latency_samples

from surrobench.analysis.diagnose import diagnose_config, diagnose_run, trace_evidence
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, load_thresholds
from surrobench.errors import UsageError
from surrobench.records.ops import OpStat, OpTable
from surrobench.records.system import HostHotspot, SystemView
from surrobench.trace import load_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


def _kinds(findings, alarms_only=False):
    return [f.kind for f in findings if f.alarm or not alarms_only]


def _trace(tmp_path, events):
    return trace_evidence(load_trace(write(tmp_path / "t.json", events)))


def _step(n, t0, dur, body):
    """One profiled step [t0, t0 + dur) whose forward range covers its first 80%; ``body`` its GPU events."""
    return [annotation(f"ProfilerStep#{n}", t0, dur), annotation("surrobench::forward", t0, dur * 0.8)] + body


def test_fno_fixture_top_finding_is_launch_bound():
    findings = diagnose_config(trace_evidence(load_trace(FIXTURES / "fno2d_128_b1_fp32_h200.json.gz")))
    top = findings[0]
    assert top.kind == "launch_bound" and top.severity == "high"
    assert 4.0 < top.estimated_gain_ms < 5.5  # ~4.8 ms of launch-bound gaps per profiled step
    assert {e.source for e in top.evidence} >= {"profiler", "timeline"}


def test_unet_fixture_group_norm_is_memory_bound():
    findings = diagnose_config(trace_evidence(load_trace(FIXTURES / "unet_256_b1_fp32_h200.json.gz")))
    memory = next(f for f in findings if f.kind == "memory_bound")
    assert "native_group_norm" in memory.summary
    assert "host_sync" not in _kinds(findings)  # the harness's sync between steps is not the model's


def test_trace_evidence_builds_the_op_table_only_when_none_is_given(tmp_path, monkeypatch):
    from surrobench.analysis import diagnose

    tl = load_trace(write(tmp_path / "t.json", _step(0, 0, 1000, launch(10, 5, 1, 20, 50))))
    table = _table(("aten::mm", "gemm/matmul/einsum", 1.0))
    built = []
    real = diagnose.op_table_from_timeline
    monkeypatch.setattr(diagnose, "op_table_from_timeline", lambda t: built.append(t) or real(t))
    assert trace_evidence(tl, op_table=table).op_table is table and built == []
    assert trace_evidence(tl, op_table=None).op_table is None and built == []
    assert trace_evidence(tl).op_table.source == "trace" and built == [tl]


def test_item_inside_forward_is_host_sync(tmp_path):
    events = []
    for n in range(3):
        t0 = 1000 * n
        events += _step(
            n,
            t0,
            900,
            launch(t0 + 10, 5, 10 * n + 1, t0 + 20, 100)
            + [
                cpu_op("aten::item", t0 + 30, 200, ext=10 * n + 5),
                runtime("cudaStreamSynchronize", t0 + 40, 185, corr=10 * n + 2, ext=10 * n + 5),
            ]
            + launch(t0 + 500, 5, 10 * n + 3, t0 + 510, 100),
        )
    findings = diagnose_config(_trace(tmp_path, events))
    top = findings[0]
    assert top.kind == "host_sync" and "aten::item" in top.summary
    assert top.estimated_gain_ms == pytest.approx(0.390)  # per step: GPU idle from the kernel end (120) to 510


def test_pageable_copy_inside_step_is_h2d_transfer(tmp_path):
    events = []
    for n in range(2):
        t0 = 2000 * n
        events += _step(
            n,
            t0,
            1500,
            [runtime("cudaMemcpyAsync", t0 + 5, 900, 100 + n), memcpy(t0 + 10, 890, 100 + n, nbytes=64 << 20)]
            + launch(t0 + 910, 5, 200 + n, t0 + 915, 50),
        )
    top = diagnose_config(_trace(tmp_path, events))[0]
    assert top.kind == "h2d_transfer" and top.estimated_gain_ms >= 0.89
    assert any("pageable" in e.text and e.value == 1.0 for e in top.evidence)


def test_serialized_streams(tmp_path):
    events = []
    for i in range(4):
        events += launch(-50 + i, 0.5, 10 + i, 200 * i, 100, stream=7) + launch(
            -40 + i, 0.5, 20 + i, 200 * i + 100, 100, stream=8
        )
    events.append(runtime("cudaStreamWaitEvent", -45, 1, 99))
    findings = diagnose_config(_trace(tmp_path, events))
    assert findings[0].kind == "stream_serialization"
    assert findings[0].estimated_gain_ms == pytest.approx(0.4)  # no steps: the whole window is one step


def test_healthy_control_gets_no_alarm(tmp_path):
    events = []
    for n in range(3):  # GEMM kernels back to back, launched well ahead; one harness sync per step
        t0 = 2000 * n
        body = [
            launch(t0 + 5 * k, 4, 100 * n + k, t0 + 20 + 490 * k, 490, name="sm90_xmma_gemm_bf16") for k in range(4)
        ]
        events += _step(n, t0, 1990, [e for pair in body for e in pair])
        events.append(runtime("cudaDeviceSynchronize", t0 + 1700, 300, 999 + n))
    ev = _trace(tmp_path, events)
    table = OpTable((OpStat("aten::mm", "gemm/matmul/einsum", 12, 5880, 5880, 1.0, 30.0),), "device", 5880, 3, "trace")
    findings = diagnose_config(ConfigEvidence(op_table=table, timeline=ev.timeline, facts=ev.facts))
    assert _kinds(findings, alarms_only=True) == []
    assert _kinds(findings) == ["compute_bound"]


def _table(*rows, basis="device", total_us=1000.0):
    ops = tuple(
        OpStat(name, cat, 10, share * total_us, share * total_us, share, share * total_us) for name, cat, share in rows
    )
    return OpTable(ops, basis, total_us, 1, "profiler", kernel_count=100, small_kernel_count=90, small_kernel_us=5.0)


def test_compute_bound_without_roofline_needs_compute_share_min(tmp_path):
    ev = ConfigEvidence(
        op_table=_table(("aten::mm", "gemm/matmul/einsum", 0.6), ("aten::add", "elementwise/activation", 0.4))
    )
    assert "compute_bound" in _kinds(diagnose_config(ev))
    strict = tmp_path / "t.toml"
    strict.write_text("compute_share_min = 0.7\n")
    assert "compute_bound" not in _kinds(diagnose_config(ev, load_thresholds(strict)))


def test_compute_bound_without_roofline_sums_every_gemm_conv_op_under_the_per_op_floor():
    """The trial's ConvLSTM: mkldnn_convolution 47.7% and _slow_conv2d_forward 9.5% (under bound_op_share_min) hold
    a majority together, so the verdict is the family's total, not only its ops over the floor; those under it are
    one line of evidence, counted in the finding's op share."""
    table = _table(
        ("aten::mkldnn_convolution", "convolution", 0.477),
        ("aten::_slow_conv2d_forward", "convolution", 0.095),
        ("aten::gelu", "elementwise/activation", 0.428),
    )
    (found,) = [f for f in diagnose_config(ConfigEvidence(op_table=table)) if f.kind == "compute_bound"]
    assert found.op_share == pytest.approx(0.572)
    assert [e.value for e in found.evidence] == pytest.approx([0.477, 0.095])
    assert found.evidence[0].text.startswith("aten::mkldnn_convolution")


def test_fragmented_ops_and_threshold_override(tmp_path):
    table = _table(
        ("aten::add", "elementwise/activation", 0.2),
        ("aten::cat", "concat/index/gather/scatter", 0.2),
        ("aten::conv2d", "convolution", 0.6),
    )
    ev = ConfigEvidence(op_table=table)
    assert "fragmented_ops" in _kinds(diagnose_config(ev))
    strict = tmp_path / "t.toml"
    strict.write_text("fragmented_share = 0.5\n")
    assert "fragmented_ops" not in _kinds(diagnose_config(ev, load_thresholds(strict)))


@pytest.mark.parametrize(
    "text, message",
    [
        ("fragmented_share = ", "invalid TOML"),
        ("nope = 1", "unknown threshold"),
        ('superlinear_ratio = "x"', "non-negative number"),
        ("fragmented_share = nan", "fragmented_share = nan must be a finite non-negative number"),
        ("severity_high_fraction = inf", "severity_high_fraction = inf must be a finite"),
        ("severity_high_fraction = -1", "severity_high_fraction = -1 must be a finite"),
    ],
)
def test_bad_threshold_file_is_usage_error(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message) as bad:
        load_thresholds(path)
    assert bad.value.parameter == "config" and str(path) in str(bad.value) and "\n" not in str(bad.value)


@pytest.mark.parametrize(
    ("thresholds", "needle"),
    [
        ("x", "thresholds 'x': must be a"),
        ({"fragmented_share": 0.5}, "thresholds {"),
        (dataclasses.replace(DEFAULT_THRESHOLDS, fragmented_share=float("nan")), "thresholds: fragmented_share = nan"),
    ],
)
def test_diagnose_names_bad_thresholds_before_opening_anything(tmp_path, thresholds, needle):
    import surrobench

    db = tmp_path / "never.db"
    with pytest.raises(UsageError) as bad:
        surrobench.diagnose(run="20261201-100000-aaaa", db=db, thresholds=thresholds)
    assert bad.value.parameter == "thresholds" and str(bad.value).startswith(needle)
    assert not db.exists()


def test_system_view_names_the_host_function_and_reads_low_cpu_as_waiting(tmp_path):
    events = _step(0, 0, 1000, launch(10, 5, 1, 20, 50))
    ev = _trace(tmp_path, events)
    hot = SystemView(
        cpu_utilization=0.9,
        hotspots=(
            HostHotspot("torch/nn/modules/conv.py:450 forward", 0.5, 0.3),
            HostHotspot("prep.py:12 build_mask", 0.4, 0.35),
        ),
    )
    found = diagnose_config(ConfigEvidence(timeline=ev.timeline, facts=ev.facts, system=hot))
    prep = next(f for f in found if f.kind == "cpu_preprocess")
    assert "prep.py:12 build_mask" in prep.summary and prep.estimated_gain_ms == pytest.approx(0.35)
    idle = diagnose_config(ConfigEvidence(timeline=ev.timeline, facts=ev.facts, system=SystemView(cpu_utilization=0.2)))
    assert any(f.kind == "host_sync" and any(e.source == "system" for e in f.evidence) for f in idle)
    # an idle share under a user's report floor is no finding (it raised ValueError in Finding)
    quiet = dataclasses.replace(
        DEFAULT_THRESHOLDS, severity_high_fraction=0.99, severity_medium_fraction=0.99, report_min_fraction=0.99
    )
    low_cpu = ConfigEvidence(timeline=ev.timeline, facts=ev.facts, system=SystemView(cpu_utilization=0.2))
    assert "host_sync" not in _kinds(diagnose_config(low_cpu, quiet))


def _ok(batch, median_ms, size=64, precision="fp32", mem=1 << 20, reserved=None, model="m"):
    r = config(
        latency_samples(median_ms, 0.01, n=20),
        model=model,
        size=size,
        batch=batch,
        precision=precision,
        peak_mem_bytes=mem,
    )
    return r if reserved is None else r.__class__(**{**r.__dict__, "peak_reserved_bytes": reserved})


def test_run_level_kinds():
    results = [
        _ok(1, 1.0),
        _ok(2, 4.0, mem=1 << 30),
        config([], batch=4, status="oom", model="m"),
        _ok(1, 1.5, precision="bf16"),
        _ok(1, 1.0, size=128, mem=300 << 20, reserved=1 << 30),
    ]
    kinds = _kinds(diagnose_run([], results, device_memory_bytes=3 << 29))
    assert kinds.count("memory_pressure") == 3  # throughput drop, OOM at batch 4, reserved 3.4x allocated
    assert "precision_mismatch" in kinds


def test_a_throughput_fall_far_from_the_memory_limit_is_not_memory_pressure_and_a_busy_host_is_said():
    """As a trial read it on a busy 2-CPU host: throughput fell 45% from batch 1 to 4 at a 43 MiB peak."""
    results = [_ok(1, 1.0), _ok(4, 7.3, mem=43 << 20)]
    assert "memory_pressure" not in _kinds(diagnose_run([], results, device_memory_bytes=16 << 30))
    assert "memory_pressure" not in _kinds(diagnose_run([], results))  # no limit known: no memory evidence
    assert "memory_pressure" in _kinds(diagnose_run([], results, device_memory_bytes=64 << 20))
    busy = "busy host: 1-minute load average 4.7 on 2 CPU(s)"
    (found,) = diagnose_run([], results, device_memory_bytes=64 << 20, host_warning=busy)
    assert found.evidence[-1].source == "run" and busy in found.evidence[-1].text


def test_superlinear_scaling_from_op_tables():
    small, large = _ok(1, 1.0, size=64), _ok(1, 20.0, size=128)  # 4x the points
    t_small = _table(("aten::native_group_norm", "normalization", 0.5), total_us=600)
    t_large = _table(("aten::native_group_norm", "normalization", 0.5), total_us=9600)  # 0.3 -> 4.8 ms: 16x
    evidence = [ConfigEvidence(result=small, op_table=t_small), ConfigEvidence(result=large, op_table=t_large)]
    found = [f for f in diagnose_run(evidence, [small, large]) if f.kind == "superlinear_scaling"]
    assert len(found) == 1 and found[0].estimated_gain_ms == pytest.approx(4.8 - 0.3 * 4)


def test_severity_floor_keeps_small_stakes_quiet():
    assert DEFAULT_THRESHOLDS.severity(0.01) is None and DEFAULT_THRESHOLDS.severity(0.3) == "high"


def test_a_sync_ranks_above_the_launch_bound_finding_it_blocks():
    from surrobench.records.findings import Finding, rank_findings

    def finding(kind, gain, config="m 1x3 b1"):
        return Finding(kind, "high", kind, (), "act", gain, config)

    # the launch-bound gain is (slightly) larger, as on the H200 sync-in-forward scenario (0.573 vs 0.568 ms)
    ranked = rank_findings(
        [finding("launch_bound", 0.573), finding("host_sync", 0.568), finding("fragmented_ops", 9.0)]
    )
    assert [f.kind for f in ranked] == ["fragmented_ops", "host_sync", "launch_bound"]
    # a sync in another config does not block this config's launch-bound finding
    other = rank_findings([finding("launch_bound", 0.573), finding("host_sync", 0.568, config="other")])
    assert [f.kind for f in other] == ["launch_bound", "host_sync"]


def test_memory_bound_op_far_below_bandwidth_is_called_parallelism_starved():
    from surrobench.analysis.detect_ops import memory_bound
    from surrobench.analysis.roofline import H200_FALLBACK, RooflineOp, RooflineReport

    def op(name, gbps):  # 3.7 ms per step of a normalization at a given achieved bandwidth
        return RooflineOp(
            name,
            "normalization",
            3.7,
            0.6,
            0,
            int(gbps * 3.7e6),
            0.0,
            0.0,
            gbps,
            "memory",
            gbps / H200_FALLBACK.copy_gbps,
            3.0,
            ("float32",),
        )

    def finding(gbps):
        roof = RooflineReport(H200_FALLBACK, "fp32", 12.4, (op("aten::native_group_norm", gbps),))
        return memory_bound(
            ConfigEvidence(label="u", result=config(latency_samples(6.0, 0.01, seed=3)), roofline=roof),
            DEFAULT_THRESHOLDS,
        )

    starved = finding(130.0)  # the H200 unet2d 512 b1 GroupNorm: 3% of the copy bandwidth
    assert starved.kind == "memory_bound" and "more bandwidth would not help" in starved.action
    assert "too few rows" in starved.action and "raise the batch" in starved.action
    assert "channels_last (NHWC)" not in starved.action and "keep NCHW" not in starved.action  # no prior: measured
    assert "more bandwidth would not help" not in finding(3000.0).action  # near the bandwidth roof
    # its summary does not call it bandwidth-bound where its own evidence says bandwidth is not the limit
    assert "not bandwidth" in starved.summary and "memory-bound ops" in finding(3000.0).summary
    assert "130 GB/s = " in " ".join(e.text for e in starved.evidence)


def _compute_evidence(fraction, *, basis="device", precision="bf16", rates=None):
    """One GEMM holding the whole 1 ms step at ``fraction`` of the calibrated peak."""
    from surrobench.analysis.roofline import RooflineOp, RooflineReport
    from surrobench.records.ceilings import Ceilings

    ceilings = Ceilings("dev", 4000.0, rates or {"fp32": 50.0, "bf16": 800.0}, "2026-11-30T00:00:00+00:00")
    peak = ceilings.peak_tflops(precision)
    op = RooflineOp(
        "aten::mm",
        "gemm/matmul/einsum",
        1.0,
        1.0,
        int(peak * fraction * 1e9),
        10**6,
        1000.0,
        peak * fraction,
        1.0,
        "compute",
        fraction,
        max(1.0 - fraction, 0.0),
        ("bfloat16",),
    )
    roof = RooflineReport(ceilings, precision, ceilings.ridge_flop_per_byte(precision), (op,))
    return ConfigEvidence(
        label="g",
        result=config(latency_samples(1.0, 0.01, seed=1)),
        roofline=roof,
        op_table=_table(("aten::mm", "gemm/matmul/einsum", 1.0), basis=basis),
    )


def test_compute_bound_above_the_calibrated_peak_is_a_suspect_ceiling_not_healthy():
    from surrobench.analysis.detect_ops import compute_bound

    spread = compute_bound(_compute_evidence(1.07), DEFAULT_THRESHOLDS)  # the H200 gemm-bf16: 107% of 767 TFLOP/s
    assert spread.severity == "info" and "healthy" in spread.action
    assert "100% of the bf16" in spread.summary and "calibration spread" in spread.summary  # capped, and why
    assert "107%" not in spread.summary
    stale = _compute_evidence(103142.72)  # a calibration at n = 1
    assert compute_bound(stale, DEFAULT_THRESHOLDS) is None  # no verdict against a suspect ceiling
    (suspect,) = [f for f in diagnose_config(stale) if f.kind == "ceiling_suspect"]
    assert suspect.severity == "low" and suspect.estimated_gain_ms is None
    assert "surrobench calibrate" in suspect.action and "healthy" not in suspect.action


def test_compute_bound_on_the_cpu_gives_no_tensor_core_advice():
    from surrobench.analysis.detect_ops import compute_bound

    cpu_rates = {"fp32": 0.067, "bf16": 0.134, "fp16": 0.001}  # an AVX512-BF16 EPYC: bf16 twice fp32
    low = compute_bound(_compute_evidence(0.3, basis="cpu", precision="fp32", rates=cpu_rates), DEFAULT_THRESHOLDS)
    # at 30% of the peak for the whole 1 ms step: 0.4 ms to the 50% target, a high stake
    assert low.severity == "high" and low.estimated_gain_ms == pytest.approx(0.4)
    assert "OMP_NUM_THREADS" in low.action and "bf16 autocast" in low.action
    healthy = compute_bound(_compute_evidence(0.9, basis="cpu", precision="fp32", rates=cpu_rates), DEFAULT_THRESHOLDS)
    for finding in (low, healthy):
        assert "tf32" not in finding.action and "tensor core" not in finding.action
    no_bf16 = compute_bound(
        _compute_evidence(0.3, basis="cpu", precision="fp32", rates={"fp32": 0.2, "bf16": 0.01}), DEFAULT_THRESHOLDS
    )
    assert "bf16" not in no_bf16.action  # only where this CPU's bf16 matmul beats its fp32 one
    gpu = compute_bound(_compute_evidence(0.3, precision="fp32"), DEFAULT_THRESHOLDS)
    assert "tensor cores" in gpu.action  # the device wording is unchanged


def test_a_healthy_cpu_compute_bound_keeps_use_every_core_while_torch_leaves_cores_free():
    """The perceiver calibrated at 1 thread on a 2-core EPYC read 96% of the 1-thread peak, "healthy near the peak",
    and lost the threads remedy (measured 1.53x at threads=2 uncalibrated): the peak is that thread count's."""
    from dataclasses import replace

    from surrobench.analysis.detect_ops import compute_bound

    def healthy(**extra):
        ev = _compute_evidence(0.9, basis="cpu", precision="fp32", rates={"fp32": 0.099})
        ev = replace(ev, result=replace(ev.result, extra={"usable_cpus": 2, **extra}))
        found = compute_bound(ev, DEFAULT_THRESHOLDS)
        assert found.severity == "info" and "healthy near the peak" in found.action
        return [c for c in found.clauses if "threads" in c.remedies]

    (more,) = healthy(torch_threads=1, other_cpus=0.1)
    assert more.direction == "up"
    assert healthy(torch_threads=2, other_cpus=0.1) == []  # every usable core already
    assert healthy(torch_threads=1, other_cpus=1.3) == []  # the other core busy: none free
    assert healthy() == []  # thread count unknown


def test_cpu_op_times_lose_the_profilers_cost_per_call():
    from surrobench.analysis.detect_ops import memory_bound
    from surrobench.analysis.evidence import deflate
    from surrobench.records.findings import GAIN_UNKNOWN, OP_SHARE

    # 36 ms profiled step (+161% profiler overhead), 13.8 ms unprofiled median; the GroupNorm holds 80%: the
    # 22.2 ms over the table's 20 calls a step is 1110 us a call, more than each aten::mm call's 720 us
    table = _table(
        ("aten::native_group_norm", "normalization", 0.8),
        ("aten::mm", "gemm/matmul/einsum", 0.2),
        basis="cpu",
        total_us=36000.0,
    )
    result = config(latency_samples(13.8, 0.001, seed=2))
    ev = ConfigEvidence(result=result, op_table=table, profiled_step_ms=36.0)
    assert [(op.name, op.self_cpu_us, op.share) for op in ev.ops.ops] == [
        ("aten::native_group_norm", pytest.approx(13800.0, rel=1e-3), 1.0),  # 17.7 ms left, at most the unprofiled step
        ("aten::mm", 0.0, 0.0),
    ]
    scaled = memory_bound(ev, DEFAULT_THRESHOLDS)
    assert [e.value for e in scaled.evidence if e.unit == OP_SHARE] == [1.0]
    assert [e.value for e in scaled.evidence if e.unit == "ratio"] == [pytest.approx(13.8 / 36.0, rel=1e-3)]
    (why,) = [e for e in scaled.evidence if e.unit == GAIN_UNKNOWN]  # no roofline: why, in a CPU's words
    assert scaled.estimated_gain_ms is None and why.value is None and "surrobench calibrate --device cpu" in why.text
    unknown = memory_bound(ConfigEvidence(result=result, op_table=table), DEFAULT_THRESHOLDS)
    assert "28.800 ms" in unknown.summary and any("under the profiler" in e.text for e in unknown.evidence)
    faster = ConfigEvidence(result=result, op_table=table, profiled_step_ms=10.0)  # noise: never scaled up
    assert [op.share for op in faster.ops.ops] == [0.8, 0.2] and faster.ops.total_us <= table.total_us
    unreliable = ConfigEvidence(result=result, op_table=table, profiled_step_ms=13.8 * 5)  # beyond 4x: spread evenly
    assert [op.share for op in unreliable.ops.ops] == [0.8, 0.2] and unreliable.ops.total_us == pytest.approx(
        7200.0, rel=1e-3
    )
    gpu = ConfigEvidence(
        result=result, op_table=_table(("aten::native_group_norm", "normalization", 0.8)), profiled_step_ms=36.0
    )
    assert gpu.ops == gpu.op_table  # kernel time: no profiler overhead in it
    tiny = _table(
        ("aten::add", "elementwise/activation", 0.5),
        ("aten::mul", "elementwise/activation", 0.5),
        basis="cpu",
        total_us=20.0,
    )
    spent = deflate(tiny, 0.05, 0.02)  # 30 us over 20 calls a step: 1.5 us off calls of 1 us each
    assert spent.total_us == 0.0 and [op.share for op in spent.ops] == [0.0, 0.0]  # all of it the profiler's


def test_cpu_op_times_not_scaled_say_so_not_scaled_by_one():
    """A fresh-user trial: "op times scaled by 1.00 to the unprofiled step: ... (profiler overhead -31%)" where the
    profiled step ran faster than the timed one (a busy host while timed) and nothing was scaled."""
    from surrobench.analysis.detect_ops import memory_bound

    rows = (("aten::native_group_norm", "normalization", 0.8), ("aten::mm", "gemm/matmul/einsum", 0.2))
    table = _table(*rows, basis="cpu", total_us=20000.0)  # 20 ms of op time a step
    result = config(latency_samples(31.599, 0.001, seed=2))
    (note,) = [e for e in memory_bound(ConfigEvidence(result=result, op_table=table, profiled_step_ms=21.797),
                                       DEFAULT_THRESHOLDS).evidence if e.unit == "ratio"]  # fmt: skip
    assert note.value == 1.0 and note.text.startswith("op times not scaled: profiled step 21.797 ms vs timed 31.5")
    assert note.text.endswith("(0.69x timed)") and "overhead" not in note.text


def test_many_tiny_cpu_calls_are_fragmented_not_memory_bound():
    from surrobench.analysis.detect_ops import fragmented_ops, memory_bound

    def table(basis):  # 20000 copy_ calls of 0.4 us each hold 80% of the op time
        return OpTable(
            (
                OpStat("aten::copy_", "copy/cast/contiguous", 20000, 8000.0, 8000.0, 0.8, 8000.0),
                OpStat("aten::conv2d", "convolution", 10, 2000.0, 2000.0, 0.2, 2000.0),
            ),
            basis,
            10000.0,
            1,
            "profiler",
        )

    result = config(latency_samples(10.0, 0.001, seed=4))
    cpu = ConfigEvidence(result=result, op_table=table("cpu"))
    assert memory_bound(cpu, DEFAULT_THRESHOLDS) is None
    fragmented = fragmented_ops(cpu, DEFAULT_THRESHOLDS)
    copies = [e for e in fragmented.evidence if e.text.startswith("aten::copy_:")]
    assert [(e.value, e.unit) for e in copies] == [(20000, "calls")]
    gpu = ConfigEvidence(result=result, op_table=table("device"))  # a device basis keeps the category rule
    assert memory_bound(gpu, DEFAULT_THRESHOLDS).kind == "memory_bound"


@pytest.mark.parametrize("inside_share", [0.97, 0.3, None])
def test_fragments_inside_one_op_are_told_to_change_that_op_not_the_model(inside_share):
    """The zoo FNO on the CPU: 2,000 copies a step that its complex einsum makes, and its own 6,000 ``aten::select``.
    Where most of the fragments' time runs inside one op, the finding says so and the copies' clause names that op
    (the one rule of :func:`~surrobench.analysis.op_families.enclosing_op`, memory_bound's too); the other families'
    actions stand either way (measured, channels_last ran that FNO 1.96x faster on a CPU)."""
    from surrobench.analysis.detect_ops import fragmented_ops

    inside = (("aten::einsum", inside_share),) if inside_share else ()
    table = OpTable(
        (
            OpStat("aten::copy_", "copy/cast/contiguous", 20000, 0.0, 0.0, 0.5, 5000.0, inside=inside),
            OpStat("aten::clone", "copy/cast/contiguous", 100, 0.0, 0.0, 0.0, 0.0, inside=inside),  # permuted operands
            OpStat("aten::select", "view/metadata", 60000, 0.0, 0.0, 0.3, 3000.0),  # the model's own views
            OpStat("aten::einsum", "gemm/matmul/einsum", 10, 0.0, 0.0, 0.2, 2000.0),
        ),
        "cpu",
        10000.0,
        1,
        "profiler",
    )
    ev = ConfigEvidence(result=config(latency_samples(10.0, 0.001, seed=4)), op_table=table)
    finding = fragmented_ops(ev, DEFAULT_THRESHOLDS)
    named = [c for c in finding.clauses if "inside aten::einsum" in c.text]
    held = [e.value for e in finding.evidence if e.unit == "fraction" and "inside" in e.text]
    if inside_share == 0.97:  # named first, in the copies' clause; the other families' remedies stay, to measure
        assert finding.clauses[0] == named[0] and named[0].remedies == ()
        assert named[0].text.startswith("copy/cast/cat (aten::copy_, aten::clone): most of their time runs inside")
        assert not any("torch.cat" in c.text for c in finding.clauses)  # not the model's casts or concatenations
        assert "compile" in finding.remedies  # the views' clause: a remedy diagnose measures
        assert held == [pytest.approx(0.97 * 5 / 8)]  # of all the fragments' time, the views' included
        assert "the dims it contracts" in named[0].text  # an einsum contracts
    else:
        assert not named and not held


def test_fragments_inside_an_op_that_contracts_nothing_are_not_told_of_contracted_dims():
    from surrobench.analysis.detect_ops import fragmented_ops

    table = OpTable(
        (
            OpStat("aten::copy_", "copy/cast/contiguous", 20000, 0.0, 0.0, 0.8, 8000.0, inside=(("aten::relu", 0.97),)),
            OpStat("aten::relu", "elementwise", 10, 0.0, 0.0, 0.2, 2000.0),
        ),
        "cpu",
        10000.0,
        1,
        "profiler",
    )
    ev = ConfigEvidence(result=config(latency_samples(10.0, 0.001, seed=4)), op_table=table)
    clause = fragmented_ops(ev, DEFAULT_THRESHOLDS).clauses[0]
    assert "inside aten::relu" in clause.text and "contracts" not in clause.text


def test_tiny_calls_against_a_cpu_roofline_are_not_memory_bound():
    from surrobench.analysis.detect_ops import memory_bound
    from surrobench.analysis.roofline import RooflineOp, RooflineReport
    from surrobench.records.ceilings import Ceilings

    def finding(calls):  # 8 ms per step of copies at 0.5% of a CPU's 21 GB/s copy bandwidth
        op = RooflineOp(
            "aten::_to_copy",
            "copy/cast/contiguous",
            8.0,
            0.8,
            0,
            8 * 10**5,
            0.0,
            0.0,
            0.1,
            "memory",
            0.005,
            7.9,
            ("float32",),
            calls,
        )
        roof = RooflineReport(Ceilings("cpu", 21.0, {"fp32": 0.07}), "fp32", 3.2, (op,))
        table = _table(("aten::_to_copy", "copy/cast/contiguous", 0.8), basis="cpu", total_us=10000.0)
        return memory_bound(
            ConfigEvidence(result=config(latency_samples(10.0, 0.001, seed=5)), op_table=table, roofline=roof),
            DEFAULT_THRESHOLDS,
        )

    assert finding(20000) is None  # 0.4 us per call: dispatch-bound small calls, left to fragmented_ops
    bulky = finding(37)  # 216 us per call: a real copy, far below the bandwidth
    assert bulky.kind == "memory_bound" and "memory-copy bandwidth" in bulky.action and "SMs" not in bulky.action


def _cpu_ops(*rows, steps=5):
    """A CPU op table of ``(name, calls, self us, inside)`` rows over ``steps`` steps (shares of their sum)."""
    from surrobench.records.ops import categorize

    total = sum(us for _, _, us, _ in rows)
    ops = tuple(OpStat(n, categorize(n), c, 0.0, 0.0, us / total, us, inside=i) for n, c, us, i in rows)
    return OpTable(ops, "cpu", total, steps, "profiler")


def test_fragmented_ops_count_only_small_calls_and_leave_the_rest_to_memory_bound():
    """A graph U-Net on a CPU: aten::index and aten::index_add_ at 100+ us a call are not "many calls, little time
    each"; they are memory_bound's, never both; the small calls (add, copy_, topk) alone make reading 2."""
    from surrobench.analysis.detect_ops import fragmented_ops, memory_bound
    from surrobench.analysis.op_readings import read_fragmentation

    table = _cpu_ops(
        ("aten::index", 75, 11000.0, ()),
        ("aten::index_add_", 60, 7500.0, ()),
        ("aten::addmm", 40, 2500.0, (("aten::linear", 1.0),)),
        ("aten::add", 75, 770.0, ()),  # 10 us a call
        ("aten::copy_", 85, 370.0, (("aten::linear", 0.8),)),
        ("aten::topk", 15, 270.0, ()),
    )
    ev = ConfigEvidence(result=config(latency_samples(5.0, 0.001, seed=4)), op_table=table)
    reading = read_fragmentation(table)
    small = ("aten::add", "aten::copy_", "aten::topk")
    assert reading.share == pytest.approx(sum(op.share for op in table.ops if op.name in small))
    assert reading.by_category["concat/index/gather/scatter"] == 0.0 and not reading.flagged
    assert fragmented_ops(ev, DEFAULT_THRESHOLDS) is None
    bound = memory_bound(ev, DEFAULT_THRESHOLDS)
    assert [e.text.split(": ")[0] for e in bound.evidence[:2]] == ["aten::index", "aten::index_add_"]
    assert bound.summary.endswith("(aten::index, aten::index_add_)")  # none of the small calls


def test_a_wrappers_calls_are_not_tiny_its_nested_ops_hold_the_time():
    """A Swin block's aten::softmax (6 us of its own a call) wraps aten::_softmax (700 us): its calls are not tiny,
    so no evidence cites it; aten::add, whose nested cast is smaller than it, stays a tiny call."""
    from surrobench.analysis.op_readings import small_calls

    table = _cpu_ops(
        ("aten::_softmax", 20, 14000.0, (("aten::softmax", 1.0),)),
        ("aten::softmax", 20, 128.0, ()),
        ("aten::add", 60, 600.0, ()),
        ("aten::_to_copy", 60, 120.0, (("aten::add", 1.0),)),
        ("aten::bmm", 40, 11000.0, (("aten::matmul", 1.0),)),
    )
    assert set(small_calls(table)) == {"aten::add", "aten::_to_copy"}


def test_a_recurrent_steps_view_calls_are_dispatch_and_make_it_fragmented():
    """A GRU rollout on a CPU: most of the step is views (slice, narrow, as_strided: no arithmetic, no bytes) at
    under a microsecond a call, most inside aten::gru_cell. They are tiny calls of reading 2 (the step is
    fragmented, the finding names compile), and a composite's own views name no op to call differently (its copies,
    most inside it, do)."""
    from surrobench.analysis.detect_ops import fragmented_ops
    from surrobench.analysis.op_readings import read_fragmentation

    gru = (("aten::gru_cell", 0.7),)
    table = _cpu_ops(
        ("aten::addmm", 245, 1200.0, gru),
        ("aten::slice", 650, 800.0, gru),
        ("aten::gru_cell", 80, 770.0, ()),
        ("aten::narrow", 650, 560.0, gru),
        ("aten::as_strided", 1300, 390.0, gru),
        ("aten::add_", 240, 150.0, (("aten::gru_cell", 1.0),)),
        ("aten::copy_", 250, 180.0, gru),
    )
    reading = read_fragmentation(table)
    assert reading.flagged and reading.by_category["tiny low-intensity calls"] > 0.4
    ev = ConfigEvidence(result=config(latency_samples(0.8, 0.001, seed=4)), op_table=table)
    finding = fragmented_ops(ev, DEFAULT_THRESHOLDS)
    assert finding.kind == "fragmented_ops" and "compile" in finding.remedies
    inside = [c.text.split(" (")[0] for c in finding.clauses if "inside" in c.text]
    assert inside == ["copy/cast/cat"]


@pytest.mark.parametrize("overhead_us", [3.0, 7.0, 12.0])
@pytest.mark.parametrize("copies", [30, 300])
def test_a_table_inflated_by_the_profilers_cost_per_call_reads_as_the_clean_one(overhead_us, copies):
    """The trial's spectral-element step (docs/benchmarks/cpu-profiler-overhead.md): a few large LU factorizations
    and many small copies, fills and views. Each recorded call slowed by ``overhead_us`` (the profiled step by as
    much a call) gives the fragmented verdict and share of the clean table: none at 30 copies a step, one at 300."""
    from surrobench.analysis.detect_ops import fragmented_ops
    from surrobench.analysis.op_readings import read_fragmentation

    rows = [  # name, category, calls a step, clean us a call
        ("aten::linalg_lu_factor_ex", "other", 3, 600.0),
        ("aten::bmm", "gemm/matmul/einsum", 3, 170.0),
        ("aten::copy_", "copy/cast/contiguous", copies, 12.0),
        ("aten::fill_", "elementwise/activation", 12, 12.0),
        ("aten::mul", "elementwise/activation", 9, 25.0),
        ("aten::expand", "view/metadata", 90, 1.0),
    ]
    clean_ms = sum(calls * us for _, _, calls, us in rows) / 1e3

    def evidence(each: float) -> ConfigEvidence:
        times = {name: calls * (us + each) for name, _, calls, us in rows}
        total = sum(times.values())
        ops = tuple(OpStat(n, c, calls, 0.0, 0.0, times[n] / total, times[n]) for n, c, calls, _ in rows)
        table = OpTable(ops, "cpu", total, 1, "profiler")
        return ConfigEvidence(
            result=config(latency_samples(clean_ms, 0.0)), op_table=table, profiled_step_ms=total / 1e3
        )

    clean, inflated = evidence(0.0), evidence(overhead_us)
    verdicts = [
        (f.kind, f.severity) if f else None
        for f in (fragmented_ops(ev, DEFAULT_THRESHOLDS) for ev in (clean, inflated))
    ]
    assert verdicts == [None, None] if copies == 30 else verdicts == [("fragmented_ops", "high")] * 2
    assert read_fragmentation(inflated.ops).share == pytest.approx(read_fragmentation(clean.ops).share, abs=1e-9)
