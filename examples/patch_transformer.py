"""A model outside surrobench's zoo: a patch-transformer neural operator, loaded through ``--model file.py:build``.

    surrobench diagnose --model examples/patch_transformer.py:build --shape 256 --batch 8
    surrobench diagnose --model examples/patch_transformer.py:build_sdpa --shape 256 --batch 8 --precision bf16

The field ``(B, 3, N, N)`` is cut into ``PATCH x PATCH`` patches, each patch embedded as one token (as a
vision transformer does, Dosovitskiy et al., "An Image is Worth 16x16 Words", ICLR 2021), mixed by
``DEPTH`` transformer encoder layers and projected back to a field of the same size, the layout of
transformer neural operators such as ViT-based PDE surrogates. Two builds of the same network:

- ``build``: ``torch.nn.TransformerEncoder``, whose inference fast path runs each layer as one fused op
  (``aten::_transformer_encoder_layer_fwd``) in eval mode under ``inference_mode``;
- ``build_sdpa``: the layers written out with ``torch.nn.functional.scaled_dot_product_attention``, so
  the attention is a fused flash / memory-efficient kernel where the precision allows it.
"""

import torch
from torch import nn
from torch.nn import functional as F

PATCH = 8
WIDTH = 256
HEADS = 8
DEPTH = 4
IN_CHANNELS = 3


class _Patches(nn.Module):
    """(B, C, N, N) -> (B, (N/P)^2, C P^2) tokens and back; N must be a multiple of ``PATCH``."""

    def __init__(self, channels: int, patch: int) -> None:
        super().__init__()
        self.channels, self.patch = channels, patch

    def split(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        p = self.patch
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, (h // p) * (w // p), c * p * p)

    def join(self, tokens: torch.Tensor, h: int, w: int) -> torch.Tensor:
        b, _, _ = tokens.shape
        p, c = self.patch, self.channels
        x = tokens.reshape(b, h // p, w // p, c, p, p).permute(0, 3, 1, 4, 2, 5)
        return x.reshape(b, c, h, w)


class PatchTransformer(nn.Module):
    """Patch embedding, ``DEPTH`` encoder layers of ``WIDTH`` channels and ``HEADS`` heads, patch projection."""

    def __init__(self, sdpa: bool) -> None:
        super().__init__()
        self.patches = _Patches(IN_CHANNELS, PATCH)
        self.embed = nn.Linear(IN_CHANNELS * PATCH * PATCH, WIDTH)
        if sdpa:
            self.encoder = nn.Sequential(*[_SdpaLayer(WIDTH, HEADS) for _ in range(DEPTH)])
        else:
            layer = nn.TransformerEncoderLayer(WIDTH, HEADS, dim_feedforward=4 * WIDTH, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, DEPTH, enable_nested_tensor=False)
        self.project = nn.Linear(WIDTH, IN_CHANNELS * PATCH * PATCH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        tokens = self.encoder(self.embed(self.patches.split(x)))
        return self.patches.join(self.project(tokens), h, w)


class _SdpaLayer(nn.Module):
    """A post-norm encoder layer (as ``nn.TransformerEncoderLayer``) with attention by SDPA."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.ff = nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, c)
        x = self.norm1(x + self.out(attn))
        return self.norm2(x + self.ff(x))


def build() -> nn.Module:
    """The patch transformer on ``nn.TransformerEncoder`` (its fused inference fast path)."""
    return PatchTransformer(sdpa=False)


def build_sdpa() -> nn.Module:
    """The same network with attention through ``scaled_dot_product_attention``."""
    return PatchTransformer(sdpa=True)
