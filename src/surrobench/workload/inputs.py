"""Fixed-seed input sets, built once per config on the target device before any timing.

We rotate through ``input_sets`` buffers (default :data:`DEFAULT_INPUT_SETS`) rather than feed one tensor
every iteration: (1) a model with data-dependent work cannot settle on one input; (2) when the inputs
are large, the previous iteration's input is no longer the one in the L2 cache, closer to a service
that receives a new request each call. We do not flush caches between iterations: a deployed
surrogate keeps its weights hot too, and a flush would add its own kernel to every step. Masks and
graph structure are part of the inputs and are generated here as well, never inside the timed loop
(docs/sources.md, method §5, the boundary-mask pitfall).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surrobench.workload.spec import ShapeSpec

if TYPE_CHECKING:  # torch is imported where inputs are made: the CLI reads DEFAULT_INPUT_SETS without it
    import torch

    from surrobench.workload.zoo.base import Surrogate

#: Three sets: enough to break the one-buffer cache effect, small enough (3x the input) for any config
#: that fits once.
DEFAULT_INPUT_SETS = 3


def make_input_sets(
    surrogate: Surrogate, batch: int, shape: ShapeSpec, *, device: str, seed: int, n_sets: int
) -> list[tuple[torch.Tensor, ...]]:
    """``n_sets`` input tuples for one config, drawn in sequence from one generator seeded with ``seed``.

    The same (model, shape, batch, seed) always gives the same sets, whatever the precision or mode,
    so configs that differ only in execution are fed identical data.

    Raises:
        UsageError: from the surrogate, when the shape does not fit its layout.
    """
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    dev = torch.device(device)
    return [surrogate.example_inputs(batch, shape, generator=generator, device=dev) for _ in range(n_sets)]
