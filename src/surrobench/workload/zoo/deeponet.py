"""Deep operator network (``deeponet``).

Source: L. Lu, P. Jin, G. Pang, Z. Zhang, G. E. Karniadakis, "Learning nonlinear operators via DeepONet
based on the universal approximation theorem of operators", Nature Machine Intelligence 3 (2021) 218-229.
The "unstacked" DeepONet: one branch net on the input function sampled at m sensors, one trunk net on
the query locations, output ``G(u)(y) = sum_k b_k(u) t_k(y) + b_0``.
"""

from __future__ import annotations

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo._common import mlp, randn
from surrobench.workload.zoo.base import ModelInfo, Surrogate

SENSORS = 100  # m, as in several of the paper's examples
QUERY_DIM = 2  # 2-D query locations y
BASIS = 128  # p, the number of basis functions
HIDDEN = 128
DEPTH = 3  # hidden layers per sub-net


class DeepONet(nn.Module):
    """Branch MLP ``(B, m) -> (B, p)``, trunk MLP ``(N, d) -> (N, p)`` (ReLU), output ``(B, N)``. One query grid
    for the whole batch: the trunk costs the same at every batch size."""

    def __init__(
        self,
        sensors: int = SENSORS,
        query_dim: int = QUERY_DIM,
        basis: int = BASIS,
        hidden: int = HIDDEN,
        depth: int = DEPTH,
    ) -> None:
        super().__init__()
        self.branch = mlp([sensors, *[hidden] * depth, basis], nn.ReLU)
        self.trunk = mlp([query_dim, *[hidden] * depth, basis], nn.ReLU)
        self.bias = nn.Parameter(torch.zeros(()))

    def forward(self, queries: torch.Tensor, sensors: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bp,np->bn", self.branch(sensors), self.trunk(queries)) + self.bias


class DeepONetSurrogate(Surrogate):
    """``deeponet``: m=100 sensors, p=128; output ``(B, N)``. The query points come first: the primary input
    carries the ladder."""

    info = ModelInfo(
        name="deeponet",
        paper="Lu et al. 2021, DeepONet, Nature Machine Intelligence",
        layout="y: (N, 2) query points shared by the batch, u: (B, 100) sensors",
        point_kind="query points",
        default_size=16384,
    )

    def build(self) -> nn.Module:
        return DeepONet()

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """``(y, u)``.

        Raises:
            UsageError: a full shape; two inputs of different shapes have no single full shape.
        """
        if shape.full is not None:
            raise UsageError(
                f"deeponet: full shape {shape.label()} is not supported; give a bare size N (query points)"
            )
        sensors = randn((batch, SENSORS), generator, device)
        return randn((shape.size, QUERY_DIM), generator, device), sensors

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int:
        return inputs[0].shape[0]
