"""The capacity objective of optimize as latency optimize behaves: a baseline that cannot run (factory, forward,
NaN output, sys.exit) is recorded failed and stored (its :func:`~surrobench.execution.failures.explain_failure`
line, exit 3), never a traceback; options it does not use are refused, its budget passed; the remedies latency
optimize finds infeasible are skipped with the same reason."""

from __future__ import annotations

import pytest
from conftest import run_cli

from surrobench.api.optimize import optimize
from surrobench.api.compare import load

ARGS = dict(shapes="8", device="cpu", threads=1, warmup=1, max_batch=1, max_wait_ms=0.0, duration_s=0.2)

FAILING = {
    "factory": ("def build():\n    raise RuntimeError('factory boom')\n", "factory build() raised RuntimeError"),
    "forward": ("    def forward(self, x):\n        raise ValueError('forward boom')\n", "ValueError: forward boom"),
    "nan": ("    def forward(self, x):\n        return x * float('nan')\n", "the model returned NaN/Inf"),
    "exit": ("    def forward(self, x):\n        raise SystemExit(3)\n", "SystemExit: 3"),
}


def _model(tmp_path, failure: str) -> str:
    body, _ = FAILING[failure]
    text = (
        body
        if failure == "factory"
        else f"import torch\nclass M(torch.nn.Module):\n{body}def build():\n    return M()\n"
    )
    (tmp_path / "bad.py").write_text(text)
    return f"{tmp_path / 'bad.py'}:build"


@pytest.mark.parametrize("failure", sorted(FAILING))
def test_a_baseline_that_cannot_run_is_recorded_failed_and_stored(tmp_path, failure):
    found = optimize(_model(tmp_path, failure), objective="capacity", p99_ms=50.0, db=tmp_path / "c.db", **ARGS)
    (base,) = found.candidates
    assert base.accurate is None and FAILING[failure][1] in base.accuracy
    assert found.recipe is None and found.baseline_run_id is None
    assert load(found.optimize_id, db=tmp_path / "c.db")["candidates"][0]["accuracy"] == base.accuracy


def test_the_command_exits_3_for_a_failed_baseline_as_latency_optimize_does(tmp_path, capsys):
    common = ["optimize", "--model", _model(tmp_path, "forward"), "--shape", "8", "--device", "cpu", "--threads", "1"]
    common += ["--db", str(tmp_path / "c.db")]
    assert run_cli([*common, "--objective", "capacity", "--p99-ms", "50", "--max-batch", "1"]) == 3
    out = capsys.readouterr().out
    assert "baseline: failed" in out and "ValueError: forward boom" in out and "Traceback" not in out
    assert run_cli([*common, "--processes", "0", "--budget-s", "1"]) == 3


def test_options_the_capacity_objective_does_not_use_are_refused_and_its_budget_is_passed(
    tmp_path, monkeypatch, capsys
):
    from surrobench.api import capacity as api_capacity
    from surrobench.errors import UsageError

    cli = ["optimize", "--model", "pinn-mlp", "--shape", "8", "--device", "cpu", "--objective", "capacity"]
    cli += ["--p99-ms", "50", "--db", str(tmp_path / "c.db")]
    for unused in (["--rounds", "3"], ["--processes", "2"]):
        assert run_cli([*cli, *unused]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and unused[0] in err and "does not apply" in err
    for unused in (dict(rounds=3), dict(processes=2)):
        with pytest.raises(UsageError, match=f"^{next(iter(unused))} is not taken by the capacity objective"):
            optimize("pinn-mlp", objective="capacity", p99_ms=50.0, **unused)
    budgets = []

    def planted(*_, budget_s, **__):
        budgets.append(budget_s)
        raise UsageError("planted")

    monkeypatch.setattr(api_capacity, "capacity_search", planted)
    assert run_cli([*cli, "--budget-s", "7", "--threads", "1"]) == 2 and budgets == [7.0]


def test_remedies_latency_optimize_skips_or_leaves_out_are_so_here_with_its_notes():
    from torch import nn

    only = "channels_last,threads=1"  # a 3-D input; the baseline's own --threads 1
    args = dict(ARGS, shapes="1x4x8", only=only)
    found = optimize(nn.Linear(8, 8), objective="capacity", p99_ms=1e-3, **args)  # infeasible target: no load
    assert [c.recipe for c in found.candidates] == ["baseline"]
    assert found.notes == (  # as latency optimize: the baseline's own left out, the infeasible with its reason
        "not tried, the baseline's own settings: threads=1 (already part of the baseline config)",
        "channels_last: infeasible, not measured: channels_last applies to 4-D (B, C, H, W) inputs; this model's "
        "inputs are 3-D",
    )
