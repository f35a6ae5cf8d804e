"""A planted straggler: every rank runs the same chain of matmuls, one rank runs extra ones, then all ranks
all-reduce the result, so the others wait inside the all-reduce for the late one every step.

    surrobench run --nproc 2 --model examples/straggler.py:build --shape 16384 --batch 1

The scaling table then shows the wait: the fast ranks' time inside collectives is about the slow rank's
extra work. ``benchmarks/straggler_traces.py`` records the same model with torch.profiler on every rank.
Input (B, M, 1024) for a bare size M; weight (1024, 1024).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

WIDTH = 1024
BASE_MATMULS = 4
#: Extra matmuls of the slow rank. At M = 16384 one matmul is 2*M*1024*1024 = 34 GFLOP, about 0.7 ms in
#: fp32 on an H200 (51 TFLOP/s, docs/benchmarks/h200-baseline.md's calibration), so 40 add ~27 ms a step.
EXTRA_MATMULS = 40


class Straggler(nn.Module):
    """``base`` matmuls (each followed by tanh) on every rank, ``extra`` more on ``slow_rank``, then
    ``all_reduce`` over ``group``. Input and output ``(B, M, WIDTH)``.

    Args:
        group: the process group (None: a single process, no all-reduce).
        base, extra: matmuls on every rank, and more on the slow one.
        slow_rank: the group rank that does the extra work (-1: the last rank).
    """

    def __init__(self, group=None, base: int = BASE_MATMULS, extra: int = EXTRA_MATMULS, slow_rank: int = -1) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(WIDTH, WIDTH) / WIDTH**0.5)
        self.group = group
        distributed = group is not None and dist.is_initialized()
        self.size = dist.get_world_size(group) if distributed else 1
        self.rank = dist.get_rank(group) if distributed else 0
        self.slow_rank = slow_rank % self.size
        self.steps = base + (extra if self.rank == self.slow_rank and self.size > 1 else 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            x = torch.tanh(x @ self.weight)
        if self.size > 1:
            dist.all_reduce(x, group=self.group)
        return x


def build(group=None) -> nn.Module:
    """The straggler model on ``group`` (the last rank is the slow one)."""
    return Straggler(group)


def example_inputs(batch: int, shape) -> torch.Tensor:
    """(B, M, 1024) random input for a bare size M, or the full shape (its last dim must be 1024)."""
    dims = (batch, shape, WIDTH) if isinstance(shape, int) else (batch, *shape[1:])
    return torch.randn(*dims)
