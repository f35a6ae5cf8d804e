"""A model object (an nn.Module, or a function returning one) goes through the same planning and timing as
a named model."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import surrobench
from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.run import DOCUMENTS as RUN_DOCUMENTS

FAST = dict(device="cpu", warmup=1, iters=3)


class TinyConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x).relu()


def test_a_module_instance_benchmarks_on_cpu_and_stays_as_it_was():
    torch.manual_seed(1)
    net = TinyConv().train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    run = surrobench.benchmark(net, shapes=[(1, 3, 16, 16)], batches=[1, 2], **FAST)
    assert [r.status for r in run.results] == ["ok", "ok"]
    assert {r.model for r in run.results} == {"TinyConv"}
    assert [r.input_shape for r in run.results] == [(1, 3, 16, 16), (2, 3, 16, 16)]
    assert all(r.latency_ms.median > 0 and r.config_id is not None for r in run.results)
    schemas.check(run.to_json(), RUN_DOCUMENTS)  # typed records, the run-v2 JSON
    # timed on a copy: the caller's module keeps its training mode and weights
    assert net.training
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_a_factory_with_an_inputs_hook_benchmarks_with_its_own_inputs():
    def mlp():
        return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))

    mlp.example_inputs = lambda batch, size: torch.randn(batch, 8)
    run = surrobench.benchmark(mlp, shapes=[32], batches=[4], **FAST)
    (r,) = run.results
    assert r.status == "ok" and r.model == "mlp" and r.input_shape == (4, 8)


def test_a_module_whose_forward_does_not_take_the_built_inputs_is_a_usage_error():
    with pytest.raises(UsageError, match=r"model TinyConv: forward fails on the inputs built for it \(1x5x8x8\)"):
        surrobench.benchmark(TinyConv(), shapes=[(1, 5, 8, 8)], **FAST)

    class NoTensor(nn.Module):
        def forward(self, x):
            return None

    with pytest.raises(
        UsageError, match="forward ran on 1x3x8x8 but model forward returned NoneType, not a tensor"
    ) as err:
        surrobench.benchmark(NoTensor(), shapes=[8], **FAST)
    assert "shapes=" not in str(err.value)  # other shapes would not help a forward that returns None


def test_the_profiling_verbs_ask_for_a_name_not_an_object():
    for verb in (surrobench.profile, surrobench.diagnose):
        with pytest.raises(UsageError, match="child process.*not a model object"):
            verb(TinyConv(), shapes=[8], **FAST)
    with pytest.raises(UsageError, match="give a name, an nn.Module"):
        surrobench.benchmark(42, **FAST)
    with pytest.raises(UsageError, match="one model object per call"):
        surrobench.benchmark([TinyConv(), TinyConv()], **FAST)


def test_optimize_takes_the_same_plan_of_a_model_object():
    from surrobench.api.benchmark import sweep_plan
    from surrobench.tune.plans import optimize_plans
    from surrobench.tune.request import OptimizeRequest
    from surrobench.results.store import ResultStore

    plan = sweep_plan(TinyConv(), shapes=[8], device="cpu", warmup=1, iters=4, input_sets=1, threads=2)
    with ResultStore(":memory:") as store:
        report = optimize_plans(OptimizeRequest((plan,), rounds=2, only=("threads=1",)), store)
        (entry,) = report.configs
        assert entry.baseline.model == "TinyConv" and entry.baseline.status == "ok"
        assert store.load_run(report.baseline_run_id).results[0].input_shape == (1, 3, 8, 8)


def test_optimize_of_a_model_object_prints_no_command_line_it_cannot_rebuild():
    """``surrobench run --model TinyConv`` would fail (no such name): no command lines, a note says why."""
    from surrobench.report.optimize import recipe_lines

    report = surrobench.optimize(TinyConv(), shapes=[8], only="threads=1", rounds=2, budget_s=20, input_sets=1, **FAST)
    (entry,) = report.configs
    assert entry.run_command is None and entry.baseline_command is None
    assert any("given as a Python object" in n for n in entry.notes)
    assert not any(line.startswith("run it:") for line in recipe_lines(report.to_json()["configs"][0]))
    by_name = surrobench.optimize("pinn-mlp", shapes=[64], only="threads=1", rounds=2, budget_s=20, **FAST)
    assert by_name.configs[0].baseline_command.startswith("surrobench run --model pinn-mlp")


def test_optimize_starts_from_a_stored_run_as_the_cli_does(tmp_path):
    """``surrobench.optimize(run=...)``: every config of the stored run optimized as it was measured (its shape,
    batch and warm-up), in the same database; exactly one of model and run; no sweep keywords with run."""
    db = tmp_path / "r.db"
    timed = surrobench.benchmark("pinn-mlp", shapes=[64], batches=[1, 2], db=db, **FAST)
    report = surrobench.optimize(run=timed.run_id[:12], db=db, only="threads=1", rounds=2, budget_s=20, processes=0)
    assert [(e.baseline.input_shape, e.baseline.warmup) for e in report.configs] == [
        (r.input_shape, r.warmup) for r in timed.results
    ]
    for bad in ({}, {"model": "pinn-mlp", "run": timed.run_id}):
        with pytest.raises(surrobench.UsageError) as raised:
            surrobench.optimize(db=db, **bad)
        assert set(raised.value.others) == {"model", "run"}
    with pytest.raises(surrobench.UsageError) as raised:
        surrobench.optimize(run=timed.run_id, db=db, shapes=[32])
    assert raised.value.parameter == "run"
