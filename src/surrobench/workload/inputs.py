"""Fixed-seed input sets, built once per config on the device before any timing (docs/sources.md, method §5),
rotated so a data-dependent model does not settle on one input; caches are not flushed (a deployed surrogate
keeps its weights hot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surrobench.workload.spec import ShapeSpec

if TYPE_CHECKING:  # torch is imported where inputs are made: the CLI reads DEFAULT_INPUT_SETS without it
    import torch

    from surrobench.workload.zoo.base import Surrogate

#: Enough to break the one-buffer cache effect, small enough (3x the input) for any config that fits once.
DEFAULT_INPUT_SETS = 3


def make_input_sets(
    surrogate: Surrogate, batch: int, shape: ShapeSpec, *, device: str, seed: int, n_sets: int
) -> list[tuple[torch.Tensor, ...]]:
    """``n_sets`` input tuples drawn from one generator seeded with ``seed`` (the same whatever the precision or
    mode); raises UsageError when the shape does not fit the surrogate's layout."""
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    dev = torch.device(device)
    return [surrogate.example_inputs(batch, shape, generator=generator, device=dev) for _ in range(n_sets)]
