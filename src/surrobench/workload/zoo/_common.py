"""Helpers shared by the zoo families and the user-model loader: input tensors, layout checks, MLPs."""

from __future__ import annotations

import math

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo.base import Surrogate


def randn(
    shape: tuple[int, ...], generator: torch.Generator, device: torch.device, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Standard-normal tensor made on ``device`` from ``generator`` (which lives there): no host-to-device copy in
    the input path. On ``meta`` an empty tensor (``torch.randn`` on meta loads some 800 modules first, 1 CPU s:
    docs/benchmarks/profile-cost.md)."""
    if torch.device(device).type == "meta":
        return torch.empty(shape, device=device, dtype=dtype)
    return torch.randn(shape, generator=generator, device=device, dtype=dtype)


def grid_shape(name: str, batch: int, shape: ShapeSpec, *, channels: int, multiple_of: int = 1) -> tuple[int, ...]:
    """The grid layout ``(B, C, H, W)`` of a bare size N (``H = W = N``) or a full shape (its batch ``batch``).

    Raises:
        UsageError: a full shape other than ``(B, channels, H, W)``, or H or W not divisible by ``multiple_of``.
    """
    if shape.full is None:
        dims = (batch, channels, shape.size, shape.size)
    else:
        if len(shape.full) != 4 or shape.full[1] != channels:
            raise UsageError(
                f"{name}: shape {shape.label()} does not fit layout (B, {channels}, H, W); "
                f"give a bare size N or e.g. 1x{channels}x64x64"
            )
        dims = (batch, *shape.full[1:])
    if any(d % multiple_of for d in dims[2:]):
        raise UsageError(
            f"{name}: spatial size {'x'.join(map(str, dims[2:]))} must be divisible by {multiple_of}; "
            f"e.g. {multiple_of * max(1, dims[2] // multiple_of)}"
        )
    return dims


class GridSurrogate(Surrogate):
    """A family on a 2-D grid: one fp32 input ``x: (B, channels, H, W)`` (:func:`grid_shape`, H and W multiples of
    ``multiple_of``), ``H * W`` points per sample."""

    channels = 3
    multiple_of = 1

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """``(x,)``; raises UsageError as :func:`grid_shape`."""
        dims = grid_shape(self.info.name, batch, shape, channels=self.channels, multiple_of=self.multiple_of)
        return (randn(dims, generator, device),)

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int:
        return grid_points(inputs[0])


def points_shape(name: str, batch: int, shape: ShapeSpec, *, dim: int) -> tuple[int, int, int]:
    """The point-cloud layout ``(B, N, dim)`` of a bare size N or a full shape; raises UsageError for a full shape
    other than ``Bx N x dim``."""
    if shape.full is None:
        return (batch, shape.size, dim)
    if len(shape.full) != 3 or shape.full[2] != dim:
        raise UsageError(
            f"{name}: shape {shape.label()} does not fit layout (B, N, {dim}); give a bare size N or e.g. 1x4096x{dim}"
        )
    return (batch, shape.full[1], dim)


def grid_points(primary: torch.Tensor) -> int:
    """Points per sample of ``(B, C, *spatial)``: the product of the spatial dims; 1 at rank 2 or less."""
    return math.prod(primary.shape[2:]) if primary.dim() > 2 else 1


def mlp(sizes: list[int], activation: type[nn.Module], *, layer_norm: bool = False) -> nn.Sequential:
    """Fully connected net ``sizes[0] -> ... -> sizes[-1]``, ``activation`` between layers, the last linear;
    ``layer_norm`` appends a LayerNorm (MeshGraphNet's MLPs, Pfaff et al. 2021, section 3)."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(activation())
    if layer_norm:
        layers.append(nn.LayerNorm(sizes[-1]))
    return nn.Sequential(*layers)


def count_parameters(module: nn.Module) -> int:
    """Real-valued parameters, a complex one counted twice (as ``neuralop.utils.count_params`` does)."""
    return sum(p.numel() * (2 if p.is_complex() else 1) for p in module.parameters())
