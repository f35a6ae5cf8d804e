"""Physics-informed neural network MLP (``pinn-mlp``).

Source: M. Raissi, P. Perdikaris, G. E. Karniadakis, "Physics-informed neural networks: A deep learning
framework for solving forward and inverse problems involving nonlinear partial differential equations",
J. Comput. Phys. 378 (2019) 686-707: their tanh MLP on space-time collocation points, forward only.
"""

from __future__ import annotations

import torch
from torch import nn

from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo._common import mlp, points_shape, randn
from surrobench.workload.zoo.base import ModelInfo, Surrogate

IN_DIM = 3  # (x, y, t), as in the paper's 2-D Navier-Stokes example
OUT_DIM = 2  # (psi, p): stream function and pressure, as in that example
# The paper's nets are about this deep but only 20 neurons wide; 128 makes each layer a GEMM large
# enough to measure on a GPU rather than pure launch overhead.
HIDDEN = 128
DEPTH = 8


class PINNSurrogate(Surrogate):
    """``pinn-mlp``: tanh MLP 3 -> 8 x 128 -> 2; output ``(B, N, 2)``. The batch stays its own dimension (the same
    ``(B*N) x 3`` GEMMs) so N can be read."""

    info = ModelInfo(
        name="pinn-mlp",
        paper="Raissi et al. 2019, Physics-informed neural networks, J. Comput. Phys.",
        layout="x: (B, N, 3) collocation points (x, y, t)",
        point_kind="collocation points",
        default_size=16384,
    )

    def build(self) -> nn.Module:
        return mlp([IN_DIM, *[HIDDEN] * DEPTH, OUT_DIM], nn.Tanh)

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """``(x,)``. Raises UsageError for a full shape other than ``Bx N x 3``."""
        return (randn(points_shape(self.info.name, batch, shape, dim=IN_DIM), generator, device),)

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int:
        return inputs[0].shape[1]
