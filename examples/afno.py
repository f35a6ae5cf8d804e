"""A model family no rule of surrobench was written from: an adaptive Fourier neural operator (AFNO), loaded through
``--model file.py:build``. Written for docs/benchmarks/h200-measured-advice.md; no threshold or rule was tuned on it.

    surrobench diagnose --model examples/afno.py:build --shape 256 --batch 4

After Guibas et al., "Adaptive Fourier Neural Operators: Efficient Token Mixers for Transformers", ICLR 2022 (the
token mixer of FourCastNet): the field ``(B, 3, N, N)`` is cut into ``PATCH x PATCH`` patches embedded as tokens on
an ``N/PATCH`` grid; each of ``DEPTH`` blocks mixes the tokens in Fourier space (a 2-D real FFT over the grid, a
block-diagonal complex MLP over the channels, soft-thresholding, the inverse FFT) and then the channels (an MLP),
each with a residual; a linear head projects each token back to its patch. Unlike the zoo's FNO, there is no mode
truncation: every frequency is kept and the complex weights are shared across frequencies. N must be a multiple of
``PATCH``.
"""

import torch
from torch import nn
from torch.nn import functional as F

PATCH = 4
WIDTH = 128
BLOCKS = 8  # diagonal blocks of the channel MLP: WIDTH / BLOCKS channels each
DEPTH = 6
IN_CHANNELS = 3
SHRINK = 0.01  # the soft-threshold on the mixed modes (sparsity), as the paper's lambda


class AfnoFilter(nn.Module):
    """Token mixing in Fourier space on ``(B, H, W, C)``: rFFT2 over (H, W), a two-layer block-diagonal complex MLP
    on the channels (real and imaginary weights kept apart, as the reference implementation), soft-shrink, irFFT2."""

    def __init__(self, width: int, blocks: int) -> None:
        super().__init__()
        self.blocks, size = blocks, width // blocks
        scale = 0.02
        self.w1 = nn.Parameter(scale * torch.randn(2, blocks, size, size))
        self.b1 = nn.Parameter(scale * torch.randn(2, blocks, size))
        self.w2 = nn.Parameter(scale * torch.randn(2, blocks, size, size))
        self.b2 = nn.Parameter(scale * torch.randn(2, blocks, size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        xf = torch.fft.rfft2(x.float(), dim=(1, 2), norm="ortho").reshape(b, h, w // 2 + 1, self.blocks, -1)
        re = F.relu(_mix(xf.real, xf.imag, self.w1[0], self.w1[1]) + self.b1[0])
        im = F.relu(_mix(xf.imag, xf.real, self.w1[0], -self.w1[1]) + self.b1[1])
        re2 = _mix(re, im, self.w2[0], self.w2[1]) + self.b2[0]
        im2 = _mix(im, re, self.w2[0], -self.w2[1]) + self.b2[1]
        mixed = F.softshrink(torch.stack([re2, im2], dim=-1), SHRINK)
        out = torch.view_as_complex(mixed.contiguous()).reshape(b, h, w // 2 + 1, c)
        return torch.fft.irfft2(out, s=(h, w), dim=(1, 2), norm="ortho").to(x.dtype)


def _mix(a: torch.Tensor, b: torch.Tensor, wa: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
    """``a @ wa - b @ wb`` per diagonal block: (..., blocks, size) x (blocks, size, size)."""
    return torch.einsum("...bi,bio->...bo", a, wa) - torch.einsum("...bi,bio->...bo", b, wb)


class AfnoBlock(nn.Module):
    """LayerNorm, Fourier token mixing, residual; LayerNorm, channel MLP (4x), residual."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.filter = AfnoFilter(width, BLOCKS)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.filter(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Afno(nn.Module):
    """Patch embedding (a strided convolution), ``DEPTH`` AFNO blocks on the token grid, a linear patch head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Conv2d(IN_CHANNELS, WIDTH, PATCH, stride=PATCH)
        self.blocks = nn.Sequential(*[AfnoBlock(WIDTH) for _ in range(DEPTH)])
        self.head = nn.Linear(WIDTH, IN_CHANNELS * PATCH * PATCH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.blocks(self.embed(x).permute(0, 2, 3, 1))  # (B, N/P, N/P, WIDTH)
        patches = self.head(tokens).permute(0, 3, 1, 2)  # (B, C P^2, N/P, N/P)
        return F.pixel_shuffle(patches, PATCH)


def build() -> nn.Module:
    """The AFNO of the module docstring, on fields ``(B, 3, N, N)``."""
    return Afno()
