"""A forward that takes gradients (forces as -dE/dx through ``torch.autograd.grad``) cannot run under
``torch.inference_mode()``, which ``torch.enable_grad()`` inside cannot undo: on that evidence (its call failing
under inference mode and running under ``no_grad``) the model runs under ``no_grad`` in every path, recorded as
``extra["grad_mode"]``; a plain forward keeps inference mode, a forward that fails under both keeps its own error.
The search's compilations keep torch's ``Tensor.item()`` graph-break warning off the terminal."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

import surrobench
from surrobench.execution.runner import in_grad_mode, prepare_model, run_config
from surrobench.execution.env import NO_GRAD, sweep_warnings
from surrobench.records.run import GRAD_MODE_KEY
from surrobench.tune.bench import room_for_compiled_variants

FAST = dict(device="cpu", warmup=1, iters=3, threads=1)


class Forces(nn.Module):
    """Forces as -dE/dx of a small energy network: a physics-informed operator."""

    def __init__(self) -> None:
        super().__init__()
        self.energy = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(self.energy(x).sum(), x)
        return -grad


class Broken(nn.Module):
    def forward(self, x):
        raise ValueError("checkpoint missing")


def _factory(cls):
    def build():
        return cls()

    build.example_inputs = lambda batch, size: torch.randn(batch, 8)
    build.__name__ = cls.__name__.lower()
    return build


def test_a_forward_taking_gradients_runs_under_no_grad_and_a_plain_one_keeps_inference_mode():
    run = surrobench.benchmark(_factory(Forces), shapes=[8], batches=[1, 2], **FAST)
    assert [r.status for r in run.results] == ["ok", "ok"]
    assert [r.extra[GRAD_MODE_KEY] for r in run.results] == ["no_grad", "no_grad"]
    assert [w.startswith(NO_GRAD) for w in sweep_warnings(list(run.results), run.env)].count(True) == 1  # once for both
    plain = surrobench.benchmark(nn.Linear(8, 8), shapes=[(1, 8)], **FAST)
    assert [r.extra[GRAD_MODE_KEY] for r in plain.results] == ["inference_mode"]
    assert not any(w.startswith(NO_GRAD) for w in sweep_warnings(list(plain.results), plain.env))


def test_optimize_times_its_baseline_candidates_and_reference_under_no_grad():
    options = {**FAST, "threads": 2}  # threads=1, the candidate, timed against it
    report = surrobench.optimize(_factory(Forces), shapes=[8], only="threads=1", rounds=2, budget_s=20, **options)
    (entry,) = report.configs
    assert entry.error is None and entry.baseline.status == "ok"
    assert entry.baseline.extra[GRAD_MODE_KEY] == "no_grad"
    timed = [c.result for c in entry.candidates if c.result is not None]
    assert timed and all(r.extra[GRAD_MODE_KEY] == "no_grad" for r in timed)


def test_serve_serves_it_under_no_grad_and_records_it():
    record = surrobench.serve(
        _factory(Forces),
        shapes="8",
        rates=[50],
        max_batch="2",
        max_wait_ms=1,
        duration_s=0.3,
        warmup_s=0.05,
        min_requests=0,
        p99_ms=1000.0,
        device="cpu",
        threads=1,
        warmup=1,
    )
    assert record.workload[GRAD_MODE_KEY] == "no_grad"
    assert sum(n.startswith(NO_GRAD) for n in record.notes) == 1
    assert all(p.nonfinite is None for p in record.policies) and record.policies[0].points


def test_optimize_for_capacity_builds_its_service_under_no_grad():
    args = dict(shapes="8", device="cpu", threads=1, warmup=1, max_batch=1, max_wait_ms=0.0, duration_s=0.2)
    found = surrobench.optimize(_factory(Forces), objective="capacity", p99_ms=1e-3, only="threads=1", **args)
    (baseline,) = found.candidates  # an infeasible target: no load; the baseline's service built and checked
    assert baseline.recipe == "baseline" and baseline.accurate


def test_versus_times_a_surrogate_taking_gradients():
    from tests.api.test_versus import SMALL, Planted, Scale
    from surrobench.records.versus import MATCHED

    class GradScale(Scale):  # factor * x as the gradient of factor / 2 * |x|^2
        def forward(self, x):
            with torch.enable_grad():
                x = x.detach().requires_grad_(True)
                (grad,) = torch.autograd.grad((self.factor / 2 * x.square()).sum(), x)
            return grad

    class GradPlanted(Planted):
        def surrogate(self):
            return GradScale(self.factor)

    record = surrobench.versus(GradPlanted(), **SMALL)
    assert record.surrogates[0].match.status == MATCHED


def test_a_forward_failing_under_both_keeps_its_own_error_and_inference_mode():
    from surrobench.api.benchmark import sweep_plan

    plan = sweep_plan(_factory(Forces), shapes=[8], **FAST)
    cfg = plan.configs[0]
    prepared = prepare_model(plan.surrogates[cfg.model], "cpu", cfg.seed)
    prepared.module = Broken()
    result = run_config(cfg, prepared)
    assert result.status == "error" and "checkpoint missing" in result.error
    assert prepared.grad_mode == "inference_mode"
    calls = []

    def attempt():
        calls.append(torch.is_inference_mode_enabled())
        raise RuntimeError(f"attempt {len(calls)}")

    with pytest.raises(RuntimeError, match="attempt 1"):
        in_grad_mode(prepared, attempt)
    assert len(calls) == 1 and prepared.grad_mode == "inference_mode"  # not raised through torch.autograd: not retried

    def takes_gradients_then_fails():  # retried once; the retry's own failure is the one raised, no_grad kept
        calls.append(torch.is_inference_mode_enabled())
        if len(calls) == 3:
            raise ValueError("the model's own failure")
        torch.autograd.grad(torch.zeros(1), torch.zeros(1))

    with pytest.raises(ValueError, match="own failure"):
        in_grad_mode(prepared, takes_gradients_then_fails)
    assert len(calls) == 3 and prepared.grad_mode == "no_grad"


def test_the_search_scope_keeps_torchs_item_graph_break_warning_quiet_and_restores_it():
    from torch._dynamo.variables.tensor import TensorVariable

    def early_stop(x):
        y = x * 2
        if y.max().item() > 1e9:
            return y
        return y + 1

    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append
    logger = logging.getLogger("torch._dynamo.variables.tensor")
    logger.addHandler(handler)
    try:
        for quiet in (True, False):
            torch._dynamo.reset()
            TensorVariable._warn_capture_scalar_outputs.cache_clear()  # torch warns once per process
            seen.clear()
            with room_for_compiled_variants() if quiet else torch.enable_grad():
                torch.compile(early_stop, backend="eager")(torch.ones(4))
            warned = [r for r in seen if r.levelno == logging.WARNING and "Tensor.item()" in r.getMessage()]
            assert len(warned) == (0 if quiet else 1)
    finally:
        logger.removeHandler(handler)
        torch._dynamo.reset()


class FailsFifth(nn.Module):
    """A genuine bug on the fifth call: never retried under no_grad, its own error kept (a code review's repro)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 5:
            raise IndexError("index 9 is out of bounds")
        return x * 2


def test_a_failure_not_raised_through_autograd_is_never_retried_under_no_grad():
    run = surrobench.benchmark(_factory(FailsFifth), shapes=[8], batches=[1], **FAST)
    (result,) = run.results
    assert result.status == "error" and "IndexError" in result.error


PLAIN_FORCES = """
import torch


class PlainForces(torch.nn.Module):
    # forces as training code writes them: no enable_grad, so under the no_grad fallback no graph is made
    def __init__(self):
        super().__init__()
        self.energy = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))

    def forward(self, x):
        x = x.requires_grad_(True)
        (grad,) = torch.autograd.grad(self.energy(x).sum(), x)
        return -grad


def build():
    return PlainForces()
"""


def test_a_forward_taking_gradients_without_enable_grad_is_explained_by_its_error(tmp_path):
    """A fresh-user trial's HNN (``x.requires_grad_()`` + ``autograd.grad``) failed under the ``no_grad`` fallback
    with autograd's "element 0 of tensors does not require grad" and no hint: its cause now names the remedy,
    ``torch.enable_grad()``, read from the error itself."""
    path = tmp_path / "plain_forces.py"
    path.write_text(PLAIN_FORCES)
    run = surrobench.benchmark(f"{path}:build", shapes=[(1, 8)], **FAST)
    (result,) = run.results
    assert (result.status, result.extra["failure_cause"]) == ("error", "grad_under_no_grad")
    assert "torch.enable_grad()" in result.extra["failure_explained"]
