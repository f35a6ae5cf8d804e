"""A model family no rule of surrobench was written from: a Galerkin-type linear-attention transformer on point sets,
loaded through ``--model file.py:build``. Written for docs/benchmarks/h200-measured-advice.md; no threshold or rule was
tuned on it.

    surrobench diagnose --model examples/galerkin_transformer.py:build --shape 16384 --batch 4

After Cao, "Choose a Transformer: Fourier or Galerkin", NeurIPS 2021: attention without softmax, the keys and values
layer-normalized per head and contracted first, ``Q (K^T V) / n``, so a layer costs O(n d²) on n points, not
O(n² d). The input is a set of ``n`` points ``(B, n, 3)`` (two coordinates and a sampled field value, in random
order: no grid), lifted to ``WIDTH`` channels, mixed by ``DEPTH`` such layers with feed-forward blocks, and
projected to one output value per point. ``--shape n`` sets the number of points (:func:`example_inputs`).
"""

import torch
from torch import nn

WIDTH = 128
HEADS = 4
DEPTH = 4
IN_FEATURES = 3


class GalerkinAttention(nn.Module):
    """Galerkin attention on ``(B, n, WIDTH)``: per head, ``LN(K)^T LN(V)`` (d x d) first, then ``Q`` times it, / n."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.norm_k, self.norm_v = nn.LayerNorm(self.head_dim), nn.LayerNorm(self.head_dim)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = self.norm_k(k), self.norm_v(v)
        context = torch.matmul(k.transpose(-2, -1), v) / n  # (B, heads, d, d)
        return self.out(torch.matmul(q, context).transpose(1, 2).reshape(b, n, c))


class GalerkinLayer(nn.Module):
    """Attention with a residual, then a 2x feed-forward block with a residual (pre-norm)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.attn = GalerkinAttention(width, HEADS)
        self.norm = nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.ff(self.norm(x))


class GalerkinTransformer(nn.Module):
    """Lift ``(B, n, 3)`` to ``WIDTH`` channels, ``DEPTH`` Galerkin layers, project to ``(B, n, 1)``."""

    def __init__(self) -> None:
        super().__init__()
        self.lift = nn.Linear(IN_FEATURES, WIDTH)
        self.layers = nn.Sequential(*[GalerkinLayer(WIDTH) for _ in range(DEPTH)])
        self.project = nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU(), nn.Linear(WIDTH, 1))

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        return self.project(self.layers(self.lift(points)))


def build() -> nn.Module:
    """The Galerkin transformer of the module docstring."""
    return GalerkinTransformer()


def example_inputs(batch: int, shape) -> torch.Tensor:
    """``(batch, n, 3)``: n random points of the unit square with a smooth field value; ``shape`` the point count
    (a bare size) or a full shape whose second dim is it."""
    n = shape if isinstance(shape, int) else shape[1]
    xy = torch.rand(batch, n, 2)
    field = torch.sin(3.0 * xy[..., :1]) * torch.cos(2.0 * xy[..., 1:])
    return torch.cat([xy, field], dim=-1)
