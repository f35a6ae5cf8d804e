"""Multi-rank results: step = max over ranks per iteration, time waiting in collectives, the scaling table."""

from __future__ import annotations

import numpy as np
import pytest

from surrobench.records.run import ConfigResult, Placement, placement, scaling_rows
from surrobench.results.scaling import comm_breakdown, comm_ms_per_step, placed, step_result
from surrobench.records.stats import LatencyStats


def _result(samples, batch=2, shape=(2, 3, 8, 8), points=64) -> ConfigResult:
    stats = LatencyStats.from_samples(samples)
    per_s = batch / (stats.median / 1000)
    return ConfigResult(
        model="m",
        shape_label="8",
        input_shape=shape,
        batch=batch,
        precision="fp32",
        device="cpu",
        mode="eager",
        status="ok",
        error=None,
        warmup=1,
        iters=len(samples),
        latency_ms=stats,
        samples_per_s=per_s,
        points_per_s=per_s * points,
        samples_ms=tuple(samples),
        peak_mem_bytes=10,
    )


def test_step_is_the_slowest_rank_of_each_iteration():
    ranks = [_result([1.0, 5.0, 2.0]), _result([3.0, 1.0, 2.5])]
    step = step_result(ranks, samples_per_step=4, points_per_sample=64, like=ranks[0])
    assert step.samples_ms == (3.0, 5.0, 2.5)
    assert step.latency_ms.median == 3.0
    assert step.samples_per_s == pytest.approx(4 / 0.003) and step.points_per_s == pytest.approx(64 * 4 / 0.003)


def test_a_failed_rank_fails_the_step():
    failed = ConfigResult(
        model="m",
        shape_label="8",
        input_shape=(2, 3, 8, 8),
        batch=2,
        precision="fp32",
        device="cpu",
        mode="eager",
        status="oom",
        error="OOM",
        warmup=1,
        iters=3,
    )
    step = step_result([_result([1.0, 2.0, 3.0]), failed], 4, 64, failed)
    assert step.status == "oom" and step.latency_ms is None and step.samples_per_s is None


def test_time_in_collectives_is_the_union_of_overlapping_calls():
    intervals = [
        (np.array([0, 1_000_000, 5_000_000]), np.array([2_000_000, 3_000_000, 6_000_000])),
        (np.array([], dtype=np.int64), np.array([], dtype=np.int64)),
    ]
    assert comm_ms_per_step(intervals).tolist() == [4.0, 0.0]


def test_wait_is_what_a_rank_spends_beyond_the_least_in_that_step():
    fast_rank, late_rank = np.array([30.0, 32.0, 31.0]), np.array([1.0, 2.0, 1.5])
    fast, late = comm_breakdown([fast_rank, late_rank])
    assert fast["comm_wait_ms"]["median"] == pytest.approx(29.5) and late["comm_wait_ms"]["max"] == 0.0
    assert fast["comm_ms"]["median"] == 31.0


def _rows(parallel_factor: int):
    solo = _result([2.0] * 5)
    ranks = [_result([2.5] * 5), _result([2.0, 2.0, 3.0, 3.0, 3.0])]
    step = step_result(ranks, samples_per_step=2 * parallel_factor, points_per_sample=64, like=solo)
    return [
        placed(solo, Placement(0, "reference", 0, 1, "h", None)),
        *(placed(r, Placement(0, "rank", i, 2, "h", None)) for i, r in enumerate(ranks)),
        placed(step, Placement(0, "step", None, 2)),
    ]


def test_scaling_of_replicas_counts_every_rank_batch():
    (row,) = scaling_rows(_rows(parallel_factor=2))
    # step median 3.0 ms for 2 x 2 samples against 2 samples in 2.0 ms: (4/3) / (2/2) = 1.33
    assert row.world_size == 2 and row.step_median_ms == 3.0 and row.solo_median_ms == 2.0
    assert row.speedup == pytest.approx(4 / 3) and row.efficiency == pytest.approx(2 / 3)
    assert row.rank_median_ms == (2.5, 3.0) and row.rank_skew == pytest.approx(0.2)
    assert row.speedup_ci95[0] <= row.speedup <= row.speedup_ci95[1]
    assert row.comm_ms is None


def test_scaling_of_a_distributed_model_is_latency_over_latency():
    (row,) = scaling_rows(_rows(parallel_factor=1))
    assert row.speedup == pytest.approx(2.0 / 3.0) and row.efficiency == pytest.approx(1 / 3)


def test_ordinary_runs_have_no_placement_and_no_scaling_rows():
    r = _result([1.0, 2.0])
    assert placement(r) is None and scaling_rows([r]) == []
    assert placement(placed(r, Placement(3, "spread", 1, 1, "h", "GPU-x"))).device_uuid == "GPU-x"
