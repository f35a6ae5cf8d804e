"""torch._dynamo's recompile limit, raised for the search: every compiled candidate is compiled, none runs
uncompiled because earlier candidates used up the entries of a shared code object."""

from __future__ import annotations

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from surrobench.tune.bench import room_for_compiled_variants


def _compiled_shapes(shapes: int) -> int:
    """Graphs Dynamo compiled for one function called at ``shapes`` shapes (each a recompilation)."""
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
    for n in range(1, shapes + 1):
        fn(torch.ones(n))
    return counters["stats"]["unique_graphs"]


def test_past_dynamos_limit_every_variant_is_still_compiled():
    limit = torch._dynamo.config.recompile_limit
    assert _compiled_shapes(limit + 3) == limit  # torch's own limit: the last three ran uncompiled
    with room_for_compiled_variants():
        assert _compiled_shapes(limit + 3) == limit + 3
    assert torch._dynamo.config.recompile_limit == limit  # restored after the search
