"""A small convolution stack under a long factory name, to check that pages and tables stay readable when a
model's name is long (``benchmarks/pages.sh`` draws every HTML page with it; docs/benchmarks/pages.md).

    surrobench run --model examples/layout_long_name.py:build_a_very_long_surrogate_model_name_for_layout_tests \
        --shape 16,32 --batch 1,2 --device cpu

Input (B, 3, N, N) for a bare size N, as any grid model.
"""

from __future__ import annotations

from torch import nn


def build_a_very_long_surrogate_model_name_for_layout_tests() -> nn.Module:
    """Three 3x3 convolutions with GELU between them: (B, 3, N, N) -> (B, 1, N, N)."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.GELU(),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.GELU(),
        nn.Conv2d(16, 1, 3, padding=1),
    )
