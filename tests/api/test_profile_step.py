"""The profiled step stored with an op table, and the CPU op-time scale built from it
(:func:`surrobench.api.profile.profile_config`, :func:`surrobench.analysis.evidence.deflate`)."""

from __future__ import annotations

import pytest
from synthetic import config, latency_samples, run

import surrobench.api.profile as profile_api
from surrobench.analysis.detect_ops import memory_bound
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.records.ops import OpStat, OpTable
from surrobench.results.store import ResultStore
from surrobench.results.profiles import op_profile_step
from surrobench.workload.spec import ShapeSpec

RUN_ID = "20261201-100000-aaaa"


def test_cpu_op_times_per_step_never_exceed_the_step_on_a_busy_machine(tmp_path, monkeypatch):
    # A busy machine: 8 of the 10 recorded steps take 10 ms, 2 are preempted to 100 ms (median 10, mean 28 ms).
    # The op table sums self CPU (wall) time over all 10 steps: 90% of their 280 ms, 25.2 ms per step on average,
    # aten::tanh 80% of it (20.16 ms per step). The unprofiled median is 10 ms.
    steps = [10.0] * 8 + [100.0] * 2
    total_us = 0.9 * sum(steps) * 1e3
    table = OpTable(
        (
            OpStat("aten::tanh", "elementwise/activation", 100, 0.0, 0.0, 0.8, 0.8 * total_us),
            OpStat("aten::addmm", "gemm/matmul/einsum", 100, 0.0, 0.0, 0.2, 0.2 * total_us),
        ),
        "cpu",
        total_us,
        len(steps),
        "profiler",
    )
    child = {
        "status": "ok",
        "error": None,
        "warnings": [],
        "op_table": table.to_json(),
        "active_step_ms": steps,
        "trace_path": None,
        "input_shape": [1, 4096, 3],
    }
    monkeypatch.setattr(profile_api, "spawn", lambda *args, **kwargs: child)
    cfg = ExecConfig("pinn-mlp", ShapeSpec(size=4096), 1, "fp32", "cpu", "eager", 10, 20, False, 0, 1)
    result = config(latency_samples(10.0, 0.0), model="pinn-mlp")
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(run(RUN_ID, []))
        config_id = store.add_result(RUN_ID, result)
        report = profile_api.profile_config(cfg, result, config_id, store, ProfileOptions(), RUN_ID)
        stored, _ = op_profile_step(store, config_id)
    for profiled in (report.profiled_step_ms, stored):  # diagnose_workload reads the report, diagnose --run the store
        ev = ConfigEvidence(result=result, op_table=report.op_table, profiled_step_ms=profiled)
        found = memory_bound(ev, DEFAULT_THRESHOLDS)
        per_step = float(found.summary.split(" ms per step")[0])
        assert per_step <= ev.step_ms()
        # 18 ms over 20 calls a step: 0.9 ms off each call leaves tanh 11.16 ms a step, addmm none; then the 10 ms step
        assert per_step == pytest.approx(10.0, abs=1e-3)
    # the step the op table's per-step times are averaged over: the mean of the recorded steps
    assert report.profiled_step_ms == stored == pytest.approx(28.0)


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"schedule": "x"}, "schedule"),
        ({"schedule": (2, 5, 10)}, "schedule"),
        ({"schedule": ProfileSchedule(wait="2")}, "schedule.wait"),
        ({"with_stack": "yes"}, "with_stack"),
        ({"counters": 1}, "counters"),
    ],
)
def test_a_bad_profiler_option_is_named_before_anything_is_planned_or_timed(monkeypatch, keywords, parameter):
    monkeypatch.setattr(profile_api, "sweep_plan", lambda *a, **k: pytest.fail("planned"))
    with pytest.raises(UsageError) as bad:
        profile_api.profile("pinn-mlp", shapes=[16], device="cpu", **keywords)
    assert bad.value.parameter == parameter and str(bad.value).startswith(f"{parameter} ")


def test_reading_4_of_a_two_input_model_checks_and_names_every_input():
    import json

    from surrobench.analysis.detect_ops import CPU_MEMORY
    from surrobench.report.op_tables import reading_lines

    profiled = profile_api.profile("deeponet", shapes=[64], device="cpu", threads=1, warmup=1, iters=3)
    (report,) = json.loads(json.dumps(profiled.to_json()))["profiles"]
    shapes = report["readings"]["shapes"]
    assert shapes["inputs"] == [[64, 2], [1, 100]] and shapes["requested"] == [64, 2]
    assert shapes["matches"] is True and shapes["missing"] == []
    assert reading_lines(report["readings"])[3].startswith("4. shapes: requested 64x2,1x100 reached ")
    memory = reading_lines(report["readings"], report["op_table"]["basis"])[2]
    assert memory.endswith(CPU_MEMORY)  # as diagnose's memory_bound says on a CPU
    assert "device" not in memory and "trace" not in memory  # a CPU profile of a model: a trial read GPU words there
