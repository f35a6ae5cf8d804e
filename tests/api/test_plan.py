"""One plan per command; results carry their identity and database row, and later stages match by them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import run_cli

import surrobench
from surrobench.api.profile import profile_phase
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.execution import sweep as sweep_module
from surrobench.execution.sweep import SweepRequest, execute_sweep, plan_sweep
from surrobench.records.run import ConfigResult
from surrobench.results.store import ResultStore
from surrobench.workload.spec import ShapeSpec


def _plan(batches=(1, 2, 3)):
    return plan_sweep(
        SweepRequest(
            models=("fno2d",),
            shapes=(ShapeSpec(size=8),),
            batches=batches,
            precisions=("fp32",),
            modes=("eager",),
            device="cpu",
            warmup=1,
            iters=2,
            seed=0,
            cudnn_benchmark=False,
            input_sets=1,
        )
    )


@pytest.fixture(scope="module")
def swept():
    """One timed sweep shared by the tests below, which only read it."""
    plan = _plan()
    with ResultStore(":memory:") as store:
        record, _ = execute_sweep(plan, store)
        yield plan, record, store


def test_stored_results_carry_their_config_ids(swept):
    plan, record, store = swept
    ids = [r.config_id for r in record.results]
    stored = store.conn.execute("SELECT config_id FROM configs WHERE run_id = ? ORDER BY config_id", (record.run_id,))
    assert None not in ids and ids == [row[0] for row in stored]
    loaded = store.load_run(record.run_id)
    assert {r.key(): r.config_id for r in loaded.results} == {r.key(): r.config_id for r in record.results}
    first = record.results[0]
    assert "config_id" not in first.to_json()  # run-v2 keys only
    from_file = ConfigResult.of(first.to_json())
    assert from_file.config_id is None
    assert replace(from_file, config_id=first.config_id) == from_file  # not part of equality


def test_profiling_pairs_results_with_configs_by_identity_not_position(swept):
    plan, record, store = swept
    shuffled = replace(record, results=tuple(reversed(record.results)))
    stored_batch = {r.config_id: r.batch for r in store.load_run(record.run_id).results}
    calls = []

    def profile_one(cfg, result, config_id, store, options, run_id):
        calls.append((cfg, result, config_id))
        return type("Report", (), {"config": replace(result, top_op={"name": f"op-b{cfg.batch}", "share": 1.0})})()

    profiled, reports = profile_phase(plan, shuffled, store, None, profile_one=profile_one)
    assert len(calls) == 3
    for cfg, result, config_id in calls:
        assert cfg.batch == result.batch and cfg.shape.label() == result.shape_label
        assert stored_batch[config_id] == result.batch
    # the returned run keeps the order it was given, each result with its own top op
    assert [r.batch for r in profiled.results] == [3, 2, 1]
    assert [r.top_op["name"] for r in profiled.results] == ["op-b3", "op-b2", "op-b1"]


def test_a_result_of_another_plan_is_refused(swept):
    plan, record, _ = swept
    other = replace(record.results[0], batch=64)
    with pytest.raises(KeyError, match="not a config of this sweep plan"):
        plan.config_for(other)
    unstored = replace(record, results=(replace(record.results[0], config_id=None),))
    with pytest.raises(ValueError, match="not stored"):
        profile_phase(plan, unstored, None, None, profile_one=lambda *a: None)


def test_a_profiled_command_plans_its_sweep_once(monkeypatch):
    resolved = []
    real = sweep_module.resolve_model

    def counting(spec, trust_pickle=False):
        resolved.append(spec)
        return real(spec, trust_pickle)

    monkeypatch.setattr(sweep_module, "resolve_model", counting)
    one_step = ProfileSchedule(wait=0, warmup=1, active=1)  # the default 10 steps of ~8,700 fno2d CPU ops: ~9 s more
    prof = surrobench.profile("fno2d", shapes=[8], batches=[1, 2], device="cpu", warmup=1, iters=3, schedule=one_step)
    assert resolved == ["fno2d"]
    assert [r.config.config_id for r in prof.reports] == [r.config_id for r in prof.run.results]
    assert all(r.status == "ok" and r.config.top_op is not None for r in prof.reports)


@pytest.mark.parametrize("command", ["run", "diagnose"])
def test_a_cli_command_plans_its_sweep_once(monkeypatch, tmp_path, command):
    resolved = []
    real = sweep_module.resolve_model
    monkeypatch.setattr(
        sweep_module, "resolve_model", lambda spec, trust=False: resolved.append(spec) or real(spec, trust)
    )
    argv = [command, "--model", "fno2d", "--shape", "8", "--batch", "1,2", "--device", "cpu"]
    argv += ["--warmup", "1", "--iters", "2", "--db", str(tmp_path / "r.db")]
    argv += ["--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "1"]  # as above: one step
    if command == "run":
        argv += ["--profile", "torch", "--trace-out", str(tmp_path / "tr")]
    else:
        argv += ["--trace-out", str(tmp_path / "tr")]
    assert run_cli(argv) == 0
    assert resolved == ["fno2d"]
