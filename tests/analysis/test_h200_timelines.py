"""The issue-4 timelines captured on the H200 (benchmarks/gpu_timelines.py), analyzed: each case's
answer was known before the trace was taken (see that script's docstring)."""

from __future__ import annotations

from pathlib import Path

import pytest

from surrobench.analysis.timeline import analyze_timeline
from surrobench.trace import load_trace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
#: 4 spin kernels of 200k cycles per stream and step at 1980 MHz (GPU.md: the boost clock under load).
SPIN_MS_PER_STREAM_STEP = 4 * 200_000 / 1980e6 * 1e3


def report(case: str):
    return analyze_timeline(load_trace(FIXTURES / f"h200_{case}.json.gz"))


def causes(r) -> dict:
    return {c.cause: c for c in r.gaps.by_cause}


def test_item_in_forward_is_a_host_sync_traced_to_item():
    r = report("item_sync")
    sync = causes(r)["host_sync"]
    assert sync.top_host_op == "aten::item > aten::_local_scalar_dense"
    assert sync.count >= 9 and sync.share > 0.3  # 4 .item() per step over 3 steps, less those with no gap after


def test_tiny_mlp_at_batch_1_is_launch_bound():
    r = report("tiny_mlp_b1")
    assert causes(r)["launch_bound"].share > 0.8
    assert r.launches.shorter_than_launch == 1.0  # every kernel shorter than its launch call
    assert all(s.busy_share < 0.1 for s in r.steps)


def test_independent_streams_overlap_by_the_spin_time():
    r = report("streams_overlap")
    assert len(r.streams) == 2 and not r.serialized_streams
    per_step = r.streams[0].overlap_ms / len(r.steps)
    # overlap is the spin time less the few microseconds stream 2's launches trail stream 1's
    assert 0.8 * SPIN_MS_PER_STREAM_STEP < per_step <= SPIN_MS_PER_STREAM_STEP


def test_a_needless_wait_serializes_the_streams():
    r = report("streams_serialized")
    assert [p.streams for p in r.serialized_streams] == [(21, 25)]
    assert r.serialized_streams[0].overlap_ms == 0.0
    assert r.streams[0].busy_ms == pytest.approx(3 * SPIN_MS_PER_STREAM_STEP, rel=0.05)


def test_a_compiled_graph_replay_is_its_kernels_and_not_launch_bound():
    """U-Net 512² b1, torch.compile(mode="reduce-overhead") + TF32 + channels_last on the H200 (surrobench
    profile, docs/benchmarks/h200-optimize.md "Re-runs"): the replay is launched inside Dynamo's
    ``Torch-Compiled Region`` op, which must not take the kernels' time; without graphs the same compiled
    model was launch-bound (GPU busy 27%)."""
    from kineto_synth import op_table_from_trace

    path = FIXTURES / "unet_512_b1_tf32_reduce_overhead_h200.json.gz"
    table = op_table_from_trace(path)
    assert not any(op.name.startswith("Torch-Compiled Region") for op in table.ops)
    assert table.ops[0].name.startswith("sm90_xmma_fprop") and table.ops[0].category == "convolution"
    assert sum(op.share for op in table.ops) == pytest.approx(1.0)
    r = analyze_timeline(load_trace(path))
    assert "launch_bound" not in causes(r) and all(s.busy_share > 0.6 for s in r.steps)
