"""The third-party model factories under examples/ load through ``--model file.py:factory`` and run.

neuraloperator and torch_geometric are not CI dependencies: each test skips when its library is missing.
"""

from pathlib import Path

import pytest
import torch

from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import ShapeSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _forward(spec: str, batch: int, size: int):
    surrogate = resolve_model(spec)
    module = surrogate.build().eval()
    inputs = surrogate.example_inputs(
        batch, ShapeSpec(size=size), generator=torch.Generator().manual_seed(0), device=torch.device("cpu")
    )
    with torch.inference_mode():
        return module(*inputs), inputs


@pytest.mark.parametrize("factory", ["build_fno", "build_tfno"])
def test_neuralop_factories_map_a_grid_to_one_field(factory):
    pytest.importorskip("neuralop")
    out, (x,) = _forward(f"{EXAMPLES / 'neuralop_fno.py'}:{factory}", 2, 32)
    assert x.shape == (2, 3, 32, 32) and out.shape == (2, 1, 32, 32)
    assert torch.isfinite(out).all()


def test_pyg_gat_gives_one_value_per_node_of_the_batched_graph():
    pytest.importorskip("torch_geometric")
    out, (x, edge_index) = _forward(f"{EXAMPLES / 'pyg_gat.py'}:build", 2, 50)
    assert x.shape == (100, 16) and edge_index.shape == (2, 800) and out.shape == (100, 1)
    assert int(edge_index[:, 400:].min()) >= 50  # the second copy's edges stay in the second copy
