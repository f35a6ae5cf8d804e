"""Fourier Neural Operator, 2-D (``fno2d``).

Source: Z. Li, N. Kovachki, K. Azizzadenesheli, B. Liu, K. Bhattacharya, A. Stuart, A. Anandkumar,
"Fourier Neural Operator for Parametric Partial Differential Equations", ICLR 2021 (arXiv:2010.08895),
section 4 and the authors' reference code ``fourier_2d.py``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from surrobench.workload.zoo._common import GridSurrogate
from surrobench.workload.zoo.base import ModelInfo

IN_CHANNELS = 3  # the coefficient field a(x) and the two grid coordinates, as in the paper's Darcy setup
OUT_CHANNELS = 1
WIDTH = 32
MODES = 16
N_LAYERS = 4
PROJECTION_WIDTH = 128  # the reference code's fc1 width


class SpectralConv2d(nn.Module):
    """Fourier layer kernel ``irfft2(R · rfft2(x))``, ``(B, C_in, H, W) -> (B, C_out, H, W)``, keeping the lowest
    ``modes`` frequencies: ``R`` is two complex blocks ``(C_in, C_out, modes, modes)``, for the non-negative and
    the negative frequencies along H (the rfft folds W). On a small grid the modes are clamped to ``H // 2`` and
    ``W // 2 + 1``, the weights sliced to match.
    """

    def __init__(self, in_channels: int, out_channels: int, modes: int) -> None:
        super().__init__()
        # Init scale 1 / (C_in * C_out) as in the reference code.
        scale = 1.0 / (in_channels * out_channels)
        shape = (in_channels, out_channels, modes, modes)
        self.weight_pos = nn.Parameter(scale * torch.rand(shape, dtype=torch.cfloat))
        self.weight_neg = nn.Parameter(scale * torch.rand(shape, dtype=torch.cfloat))
        self.out_channels = out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, _, h, w = x.shape
        m1 = min(self.weight_pos.shape[2], h // 2)
        m2 = min(self.weight_pos.shape[3], w // 2 + 1)
        # The FFT runs in fp32 even under autocast (fp64 in an fp64 copy of the model, the accuracy guard's
        # reference): cuFFT half precision only takes power-of-two sizes, and a complex32 spectrum cannot be
        # contracted with the complex64 weights.
        x_ft = torch.fft.rfft2(x.to(torch.promote_types(x.dtype, torch.float32)))
        out_ft = torch.zeros(batch, self.out_channels, h, w // 2 + 1, dtype=x_ft.dtype, device=x.device)
        out_ft[:, :, :m1, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], self.weight_pos[:, :, :m1, :m2])
        out_ft[:, :, h - m1 :, :m2] = torch.einsum(
            "bixy,ioxy->boxy", x_ft[:, :, h - m1 :, :m2], self.weight_neg[:, :, :m1, :m2]
        )
        return torch.fft.irfft2(out_ft, s=(h, w)).to(x.dtype)


class FNO2d(nn.Module):
    """Lifting, ``n_layers`` Fourier layers (spectral conv + 1x1 conv skip, GELU after all but the last), projection
    MLP; 1x1 convolutions for the reference code's channels-last ``nn.Linear`` (the same pointwise maps).

    Shapes: ``(B, in_channels, H, W) -> (B, out_channels, H, W)``.
    """

    def __init__(
        self,
        in_channels: int = IN_CHANNELS,
        out_channels: int = OUT_CHANNELS,
        width: int = WIDTH,
        modes: int = MODES,
        n_layers: int = N_LAYERS,
    ) -> None:
        super().__init__()
        self.lift = nn.Conv2d(in_channels, width, 1)
        self.spectral = nn.ModuleList(SpectralConv2d(width, width, modes) for _ in range(n_layers))
        self.skip = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(n_layers))
        self.project = nn.Sequential(
            nn.Conv2d(width, PROJECTION_WIDTH, 1), nn.GELU(), nn.Conv2d(PROJECTION_WIDTH, out_channels, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.lift(x)
        last = len(self.spectral) - 1
        for i, (spectral, skip) in enumerate(zip(self.spectral, self.skip)):
            x = spectral(x) + skip(x)
            if i < last:
                x = F.gelu(x)
        return self.project(x)


class FNO2dSurrogate(GridSurrogate):
    """``fno2d``: width 32, 16 modes, 4 Fourier layers; output ``(B, 1, H, W)`` (a full shape may be rectangular)."""

    info = ModelInfo(
        name="fno2d",
        paper="Li et al. 2021, Fourier Neural Operator for Parametric PDEs, ICLR",
        layout="x: (B, 3, N, N)",
        point_kind="grid points",
        default_size=128,
    )
    channels = IN_CHANNELS

    def build(self) -> nn.Module:
        return FNO2d()
