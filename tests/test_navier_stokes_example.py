"""``examples/navier_stokes.py``: the pseudo-spectral solver converges at its stated (second) order in time, and
the problem answers what ``versus`` asks of it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.test_examples import _load


@pytest.fixture(scope="module")
def ns():
    return _load("navier_stokes")


def _order(errors: list[float]) -> list[float]:
    """Observed orders between successive halvings of the step."""
    return [math.log2(a / b) for a, b in zip(errors, errors[1:])]


def test_taylor_green_decay_converges_at_second_order(ns):
    # w = sin(2 pi x) sin(2 pi y) is a steady Euler state (u . grad w = 0); unforced it decays as exp(-8 pi^2 nu t)
    n, nu = 16, 0.05
    x = torch.arange(n, dtype=torch.float64) / n
    w0 = torch.sin(2 * math.pi * x)[:, None] * torch.sin(2 * math.pi * x)[None, :]
    exact = w0 * math.exp(-8 * math.pi**2 * nu)
    errors = [
        float((ns.simulate(w0, n, dt, 1.0, nu=nu, with_forcing=False)[0] - exact).norm() / exact.norm())
        for dt in (0.1, 0.05, 0.025)
    ]
    assert _order(errors) == pytest.approx([2.0, 2.0], abs=0.1)


def test_forced_nonlinear_flow_self_converges_at_second_order(ns):
    w0 = ns.grf(1, 32, seed=0)[0]
    reference = ns.simulate(w0, 32, 0.0025, 0.5)[0]
    errors = [
        float((ns.simulate(w0, 32, dt, 0.5)[0] - reference).norm() / reference.norm()) for dt in (0.04, 0.02, 0.01)
    ]
    assert all(1.8 < p < 2.4 for p in _order(errors))


def test_resample_round_trips_a_band_limited_field(ns):
    w = ns.resample(ns.grf(2, 8, seed=1), 16)  # no Nyquist modes: truncation keeps all of it
    assert torch.allclose(ns.resample(ns.resample(w, 32), 16), w, atol=1e-12)


def test_the_problem_gives_what_versus_asks(ns):
    problem = ns.problem(size=16, resolutions=(8, 16), dts=(0.05,), horizon=0.1, steps=2)
    (case,) = problem.cases(1, seed=0, device="cpu")
    assert case.shape == (16, 16)
    assert problem.solve(case, problem.levels[0]).shape == (2, 16, 16)
    assert problem.reference(case).shape == (2, 16, 16)
    (x,) = problem.inputs(case)
    out = problem.surrogate()(x)
    assert x.shape == (1, 3, 16, 16) and problem.field(out).shape == (16, 16)
    (nxt,) = problem.advance((x,), out)
    assert torch.equal(nxt[:, 1:], x[:, 1:]) and torch.equal(nxt[:, 0], out[:, 0])
    assert problem.trained is False
    assert np.isfinite(problem.solve(case, problem.levels[-1]).numpy()).all()
