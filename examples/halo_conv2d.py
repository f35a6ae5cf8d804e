"""A domain-decomposed surrogate: a stack of 3x3 convolutions on a grid split along H over the ranks of a
process group, with a one-row halo exchanged with each neighbour before every layer.

Each rank holds rows ``[r*H/P, (r+1)*H/P)`` of the (B, C, H, W) field; before each layer it sends its
first and last rows to the ranks above and below and receives theirs (``torch.distributed``
``batch_isend_irecv``); the domain's outer edges get zero rows, as a zero-padded convolution would. The
result equals the single-process stack (same seed, same weights) up to floating-point summation order.

    surrobench run --model examples/halo_conv2d.py:build --shape 4096 --batch 1          # one process
    surrobench run --nproc 2 --model examples/halo_conv2d.py:build --shape 4096 --batch 1 # split over 2

Under ``--nproc N`` surrobench passes the process group to :func:`build` and :func:`example_inputs`, so
each rank builds the stack with identical weights and gets its own slab of the same global input; the
one-process reference in the same command gets a group of one rank and the whole grid.

Checking the split output against the one-device output (run with torchrun, one process per GPU, or
``--device cpu`` for gloo)::

    python -m torch.distributed.run --nproc_per_node 2 examples/halo_conv2d.py --size 4096 --check
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

CHANNELS = 64
LAYERS = 8
SEED = 0


def _rank_and_size(group) -> tuple[int, int]:
    if group is None or not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def row_range(height: int, rank: int, size: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of a grid of ``height`` rows held by ``rank`` of ``size`` (as even as possible)."""
    return rank * height // size, (rank + 1) * height // size


class HaloConvStack(nn.Module):
    """``layers`` of 3x3 convolution (``channels`` in and out, zero padding 1: the halo rows along H, the
    convolution's own padding along W) and GELU, over this rank's
    rows of a (B, C, H, W) grid; input and output ``(B, C, rows, W)``.

    Args:
        channels: C.
        layers: number of convolutions.
        group: the process group the grid is split over (None: the whole grid here).
    """

    def __init__(self, channels: int = CHANNELS, layers: int = LAYERS, group=None) -> None:
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(channels, channels, 3, padding=(0, 1)) for _ in range(layers))
        self.group = group
        self.rank, self.size = _rank_and_size(group)

    def _peer(self, group_rank: int) -> int:
        return dist.get_global_rank(self.group, group_rank)

    def halo(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The row above and the row below this rank's slab: ``(B, C, 1, W)`` each, zeros at the edges."""
        above = torch.zeros_like(x[:, :, :1])
        below = torch.zeros_like(x[:, :, :1])
        ops = []
        if self.rank > 0:
            ops += [
                dist.P2POp(dist.isend, x[:, :, :1].contiguous(), self._peer(self.rank - 1), self.group),
                dist.P2POp(dist.irecv, above, self._peer(self.rank - 1), self.group),
            ]
        if self.rank < self.size - 1:
            ops += [
                dist.P2POp(dist.isend, x[:, :, -1:].contiguous(), self._peer(self.rank + 1), self.group),
                dist.P2POp(dist.irecv, below, self._peer(self.rank + 1), self.group),
            ]
        if ops:
            for work in dist.batch_isend_irecv(ops):
                work.wait()
        return above, below

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in self.convs:
            above, below = self.halo(x)
            x = F.gelu(conv(torch.cat([above, x, below], dim=2)))
        return x


def build(group=None) -> nn.Module:
    """The stack with weights from the global seed (every rank draws the same ones)."""
    return HaloConvStack(CHANNELS, LAYERS, group)


def field_rows(batch: int, width: int, start: int, stop: int, seed: int) -> torch.Tensor:
    """Rows ``[start, stop)`` of a random (B, 64, H, W) field whose row r is drawn from a generator seeded
    with ``seed + r``: any split of the rows gives the same global field, and each rank draws only its own
    rows. Shape ``(B, 64, stop - start, W)``."""
    rows = [
        torch.randn(batch, CHANNELS, width, generator=torch.Generator().manual_seed(seed + r))
        for r in range(start, stop)
    ]
    return torch.stack(rows).permute(1, 2, 0, 3).contiguous()  # stacked along dim 0: contiguous copies


def example_inputs(batch: int, shape, group=None) -> torch.Tensor:
    """This rank's rows of a (B, 64, N, N) random field (a bare size N, or a full shape (B, 64, H, W)).

    The field's seed is drawn from torch's global RNG, which surrobench seeds identically on every rank
    for each input set, so the ranks' slabs tile one global field."""
    height, width = (shape, shape) if isinstance(shape, int) else tuple(shape[-2:])
    rank, size = _rank_and_size(group)
    start, stop = row_range(height, rank, size)
    return field_rows(batch, width, start, stop, seed=int(torch.randint(2**31, (1,))))


def check(size: int, batch: int, device: str) -> float:
    """Run the stack on one device (rank 0) and split over the world; returns the max abs difference
    of the assembled split output from the one-device output on rank 0 (0.0 on the other ranks).

    Needs an initialised default group whose size divides ``size``.
    """
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(SEED)
    model = build(dist.group.WORLD).to(device).eval()
    x = field_rows(batch, size, 0, size, SEED).to(device)
    start, stop = row_range(size, rank, world)
    with torch.inference_mode():
        local = model(x[:, :, start:stop].contiguous())
        parts = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(parts, local)
        if rank != 0:
            return 0.0
        model.group, model.rank, model.size = None, 0, 1  # the same weights on the whole grid, no exchange
        reference = model(x)
    return float((torch.cat(parts, dim=2) - reference).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--check", action="store_true", help="compare the split output with the one-device one")
    args = parser.parse_args()
    if args.device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    try:
        diff = check(args.size, args.batch, args.device)
        if dist.get_rank() == 0:
            print(
                f"halo_conv2d {args.size}x{args.size} b{args.batch} on {dist.get_world_size()} ranks: "
                f"max abs difference from one device {diff:.3e}"
            )
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
