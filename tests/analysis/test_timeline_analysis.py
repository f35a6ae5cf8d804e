"""Timeline analysis on fixture traces and on synthetic traces with answers known by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kineto_synth import annotation, cpu_op, kernel, launch, memcpy, runtime, write

from surrobench.analysis.timeline import analyze_timeline
from surrobench.trace import load_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"


def analyze(tmp_path, events, **kw):
    return analyze_timeline(load_trace(write(tmp_path / "t.json", events)), **kw)


def test_fno_fixture_is_launch_bound():
    r = analyze_timeline(load_trace(FIXTURES / "fno2d_128_b1_fp32_h200.json.gz"))
    assert r.status == "ok"
    assert [s.step for s in r.steps] == [7, 8, 9]
    for s in r.steps:  # the fixture README: ~0.21 ms of kernel time per step
        assert 0.20 < s.gpu_time_ms < 0.22
        assert s.busy_share < 0.1
    causes = {c.cause: c for c in r.gaps.by_cause}
    assert causes["launch_bound"].share > 0.9
    assert r.launches.shorter_than_launch > 0.9
    assert r.launches.kernels == 237 and r.launches.linked == 237


def test_unet_fixture_group_norm_dominates():
    r = analyze_timeline(load_trace(FIXTURES / "unet_256_b1_fp32_h200.json.gz"))
    top = r.launches.top_ops[0]
    total = sum(o.gpu_ms for o in r.launches.top_ops)
    assert "group_norm" in top.op
    assert 0.55 < top.gpu_ms / r.devices[0].kernel_ms < 0.75 and top.gpu_ms <= total


def test_gap_of_known_length_is_launch_bound(tmp_path):
    # kernel A runs [0, 10); the launch of B starts at 30, after A ended: a 30 us gap until B at 40.
    events = launch(-5, 3, 1, 0, 10) + launch(30, 8, 2, 40, 10)
    r = analyze(tmp_path, events)
    assert r.gaps.count == 1
    gap = r.gaps.longest[0]
    assert gap.dur_us == pytest.approx(30.0)
    assert gap.cause == "launch_bound" and gap.launch_call == "cudaLaunchKernel"
    assert r.devices[0].busy_ms == pytest.approx(0.020)


def test_gap_threshold_hides_short_gaps(tmp_path):
    events = launch(-5, 3, 1, 0, 10) + launch(30, 8, 2, 40, 10)
    assert analyze(tmp_path, events, gap_threshold_ns=31_000).gaps.count == 0


def test_item_sync_is_traced_to_its_cpu_op(tmp_path):
    events = (
        launch(-5, 2, 1, 0, 10)
        + [
            cpu_op("aten::item", -3, 15, ext=100),
            cpu_op("aten::_local_scalar_dense", -2.5, 14, ext=101),
            runtime("cudaStreamSynchronize", -2, 13, corr=5, ext=101),
        ]
        + launch(20, 5, 2, 26, 4)
    )
    gap = analyze(tmp_path, events).gaps.longest[0]
    assert gap.cause == "host_sync" and gap.dur_us == pytest.approx(16.0)
    assert gap.sync_call == "cudaStreamSynchronize"
    assert gap.host_op == "aten::item > aten::_local_scalar_dense"


def test_pageable_h2d_copy_gap(tmp_path):
    events = launch(-5, 2, 1, 0, 10) + [runtime("cudaMemcpyAsync", 15, 20, 2), memcpy(40, 5, 2)]
    gap = analyze(tmp_path, events).gaps.longest[0]
    assert gap.cause == "h2d_copy" and gap.pageable


def test_two_streams_overlap_by_known_amount(tmp_path):
    events = launch(-10, 2, 1, 0, 100, stream=7) + launch(-5, 2, 2, 60, 100, stream=8)
    r = analyze(tmp_path, events)
    by_stream = {s.stream: s for s in r.streams}
    assert by_stream[7].overlap_ms == pytest.approx(0.040)
    assert by_stream[8].overlap_ms == pytest.approx(0.040)
    assert r.devices[0].busy_ms == pytest.approx(0.160)
    assert r.serialized_streams == ()


def test_streams_that_alternate_are_reported_serialized(tmp_path):
    events = []
    for i in range(3):
        events += launch(-50 + i, 0.5, 10 + i, 20 * i, 10, stream=7)
        events += launch(-40 + i, 0.5, 20 + i, 20 * i + 10, 10, stream=8)
    r = analyze(tmp_path, events)
    assert [p.streams for p in r.serialized_streams] == [(7, 8)]


@pytest.mark.parametrize(("entered_us", "cause"), [(5, "collective"), (25, "launch_bound")])
def test_gap_before_a_nccl_kernel_waiting_for_its_peer_is_not_launch_bound(tmp_path, entered_us, cause):
    # kernel A runs [0, 10). The host enters c10d::send at ``entered_us``; inside it NCCL waits for the peer
    # and launches SendRecv only at 300. Entered before the GPU went idle (5 < 10): waiting for the peer.
    # Entered after (25): the host was elsewhere when the GPU ran dry, an ordinary late launch.
    events = launch(-5, 3, 1, 0, 10) + [
        cpu_op("c10d::send", entered_us, 310 - entered_us, ext=2),
        runtime("cudaLaunchKernel", 300, 5, 2, ext=2),
        kernel(310, 20, 2, stream=20, name="ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"),
    ]
    r = analyze(tmp_path, events)
    assert [(g.cause, g.dur_us) for g in r.gaps.longest] == [(cause, pytest.approx(300.0))]


def test_graph_replay_is_not_launch_bound(tmp_path):
    events = [runtime("cudaGraphLaunch", 0, 5, 1), kernel(10, 2, 1), kernel(20, 2, 1), kernel(30, 2, 1)]
    r = analyze(tmp_path, events)
    assert {c.cause for c in r.gaps.by_cause} == {"graph_internal"}
    assert r.launches.graph_kernels == 3 and r.launches.graph_launches == 1


def test_cpu_ops_without_gpu_events_mean_cupti_missing(tmp_path):
    events = [cpu_op("aten::conv2d", 0, 10, 1), runtime("cudaLaunchKernel", 2, 3, 1, ext=1)]
    r = analyze(tmp_path, events)
    assert r.status == "gpu_activities_missing"
    assert "CUPTI" in r.message  # the status above, and the likely cause named
    assert r.devices == () and r.gaps is None


def test_overlapping_and_zero_duration_kernels_are_anomalies(tmp_path):
    events = launch(-5, 1, 1, 0, 10) + launch(-4, 1, 2, 5, 10) + launch(-3, 1, 3, 30, 0)
    a = analyze(tmp_path, events).anomalies
    assert a.overlapping_ops_same_stream == 1 and a.zero_duration_ops == 1
    assert a.examples


def test_steps_and_ranges(tmp_path):
    events = [annotation("ProfilerStep#3", 0, 100), annotation("forward", 10, 50)]
    events += launch(20, 2, 1, 30, 20) + launch(80, 2, 2, 90, 20)
    r = analyze(tmp_path, events)
    (step,) = r.steps
    assert step.step == 3 and step.gpu_time_ms == pytest.approx(0.040)
    assert step.gpu_busy_ms == pytest.approx(0.030)  # the second kernel runs past the step's end
    (fwd,) = r.ranges
    assert fwd.name == "forward" and fwd.gpu_time_ms == pytest.approx(0.020)


def test_report_is_json_serializable(tmp_path):
    r = analyze(tmp_path, launch(-5, 3, 1, 0, 10) + launch(30, 8, 2, 40, 10))
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["schema"] == "surrobench/timeline-v1" and doc["gaps"]["count"] == 1


def test_gpu_activity_launch_ns_is_the_launch_call_start_or_the_op_start(tmp_path):
    from surrobench.analysis.activity import gpu_activity

    tl = load_trace(write(tmp_path / "t.json", launch(0, 5, 1, 20, 10) + [kernel(40, 10, corr=9)]))
    act = gpu_activity(tl)
    assert act.launch.tolist() == [0, -1]
    assert act.launch_ns.tolist() == [tl.api_calls.start_ns[0], act.start_ns[1]]
