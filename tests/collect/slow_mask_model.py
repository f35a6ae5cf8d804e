"""A user model whose forward spends most of its host time in a slow pure-Python preprocessing function,
``make_boundary_mask``: the kind of hot spot the system-level pass must name (issue 7)."""

from __future__ import annotations

import torch
from torch import nn


def make_boundary_mask(n: int) -> torch.Tensor:
    """(n, n) mask, 1 within two cells of the domain boundary, built cell by cell in Python: deliberately slow."""
    rows = []
    for i in range(n):
        row = []
        for j in range(n):
            distance = min(i, j, n - 1 - i, n - 1 - j)
            row.append(1.0 if distance < 2 else 0.0)
        rows.append(row)
    return torch.tensor(rows)


class MaskedConv(nn.Module):
    """A 3x3 convolution of the input times a boundary mask rebuilt on every call."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x) * make_boundary_mask(x.shape[-1])


def build() -> nn.Module:
    return MaskedConv()
