"""U-Net, 2-D (``unet2d``) with GroupNorm.

Sources: O. Ronneberger, P. Fischer, T. Brox, "U-Net: Convolutional Networks for Biomedical Image
Segmentation", MICCAI 2015 (arXiv:1505.04597) for the encoder-decoder with skip connections;
Y. Wu, K. He, "Group Normalization", ECCV 2018 (arXiv:1803.08494), the same at every batch size.
"""

from __future__ import annotations

import torch
from torch import nn

from surrobench.workload.zoo._common import GridSurrogate
from surrobench.workload.zoo.base import ModelInfo

IN_CHANNELS = 3
OUT_CHANNELS = 1
BASE_WIDTH = 32
LEVELS = 3  # down-sampling steps; the input side must be divisible by 2**LEVELS
# 8 groups rather than Wu & He's default 32: with 32 channels at the first level, 32 groups would be
# instance norm; 8 divides every width used here (32..256).
GROUPS = 8


def conv_block(in_channels: int, out_channels: int) -> nn.Sequential:
    """Two (3x3 conv, GroupNorm, SiLU) layers; padding 1 keeps H and W: ``(B, C_in, H, W) -> (B, C_out, H, W)``."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.GroupNorm(GROUPS, out_channels),
        nn.SiLU(),
        nn.Conv2d(out_channels, out_channels, 3, padding=1),
        nn.GroupNorm(GROUPS, out_channels),
        nn.SiLU(),
    )


class UNet2d(nn.Module):
    """Encoder of ``levels`` (conv block, 2x2 max pool) steps, a bottleneck block, and a decoder of
    (2x2 transposed conv, concatenate skip, conv block) steps; widths double per level from ``base_width``.

    Shapes: ``(B, in_channels, H, W) -> (B, out_channels, H, W)``; H and W divisible by ``2**levels``.
    """

    def __init__(
        self,
        in_channels: int = IN_CHANNELS,
        out_channels: int = OUT_CHANNELS,
        base_width: int = BASE_WIDTH,
        levels: int = LEVELS,
    ) -> None:
        super().__init__()
        widths = [base_width * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList(conv_block(c_in, c_out) for c_in, c_out in zip([in_channels, *widths], widths[:-1]))
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = conv_block(widths[-2], widths[-1])
        self.upsample = nn.ModuleList(nn.ConvTranspose2d(c, c // 2, 2, stride=2) for c in reversed(widths[1:]))
        self.up = nn.ModuleList(conv_block(c, c // 2) for c in reversed(widths[1:]))
        self.head = nn.Conv2d(base_width, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottleneck(x)
        for upsample, block, skip in zip(self.upsample, self.up, reversed(skips)):
            x = block(torch.cat([upsample(x), skip], dim=1))
        return self.head(x)


class UNet2dSurrogate(GridSurrogate):
    """``unet2d``: 3 levels, base width 32; output ``(B, 1, N, N)``."""

    info = ModelInfo(
        name="unet2d",
        paper="Ronneberger et al. 2015, U-Net, MICCAI; GroupNorm: Wu & He 2018, ECCV",
        layout="x: (B, 3, N, N), N divisible by 8",
        point_kind="grid points",
        default_size=128,
    )

    channels, multiple_of = IN_CHANNELS, 2**LEVELS

    def build(self) -> nn.Module:
        return UNet2d()
