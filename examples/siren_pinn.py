"""A model family no rule of surrobench was written from: a SIREN physics-informed network evaluated on collocation
points, loaded through ``--model file.py:build``. Written for docs/benchmarks/h200-measured-advice.md; no threshold or
rule was tuned on it.

    surrobench diagnose --model examples/siren_pinn.py:build --shape 65536

After Sitzmann et al., "Implicit Neural Representations with Periodic Activation Functions", NeurIPS 2020: an MLP
whose activations are ``sin(w0 x)`` (``w0 = 30`` on the first layer), initialized as the paper prescribes so that
activations stay distributed alike through depth. It maps space-time points ``(B, n, 3)`` (x, y, t in [-1, 1]) to a
field value; the zoo's ``pinn-mlp`` uses tanh, whose kernels differ (a sine is a polynomial range reduction, not an
exponential). ``--shape n`` sets the number of points (:func:`example_inputs`).
"""

import math

import torch
from torch import nn

WIDTH = 256
HIDDEN_LAYERS = 4
IN_FEATURES = 3
W0 = 30.0


class SineLayer(nn.Module):
    """``sin(w0 (W x + b))`` with SIREN's initialization: U(-1/in, 1/in) on the first layer, U(-sqrt(6/in)/w0, ...)
    on the others."""

    def __init__(self, fan_in: int, fan_out: int, first: bool) -> None:
        super().__init__()
        self.linear = nn.Linear(fan_in, fan_out)
        bound = 1.0 / fan_in if first else math.sqrt(6.0 / fan_in) / W0
        with torch.no_grad():
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(W0 * self.linear(x))


class Siren(nn.Module):
    """``HIDDEN_LAYERS + 1`` sine layers of ``WIDTH`` units and a linear output."""

    def __init__(self) -> None:
        super().__init__()
        layers = [SineLayer(IN_FEATURES, WIDTH, first=True)]
        layers += [SineLayer(WIDTH, WIDTH, first=False) for _ in range(HIDDEN_LAYERS)]
        self.net = nn.Sequential(*layers, nn.Linear(WIDTH, 1))

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        return self.net(points)


def build() -> nn.Module:
    """The SIREN of the module docstring."""
    return Siren()


def example_inputs(batch: int, shape) -> torch.Tensor:
    """``(batch, n, 3)`` points uniform in [-1, 1]^3; ``shape`` the point count (a bare size) or a full shape whose
    second dim is it."""
    n = shape if isinstance(shape, int) else shape[1]
    return 2.0 * torch.rand(batch, n, IN_FEATURES) - 1.0
