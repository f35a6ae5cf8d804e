"""A model surrobench did not write: torch_geometric's GAT, loaded through ``--model file.py:factory``.

    surrobench run --model examples/pyg_gat.py:build --shape 65536 --batch 1 --mode eager,cudagraph

``shape`` is the node count N of a random graph with 8 edges per node and 16 input features, the inputs of
``examples/pyg_graphsage.py`` (whose ``example_inputs`` this file reuses); the batch is B disjoint copies.
Needs ``pip install torch_geometric``.
"""

import sys
from pathlib import Path

import torch
from torch_geometric.nn import GAT

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling example, wherever the repo lies
from pyg_graphsage import IN_FEATURES, example_inputs  # noqa: F401  (surrobench calls example_inputs)

HEADS = 4


def build() -> torch.nn.Module:
    """GAT (Velickovic et al., "Graph Attention Networks", ICLR 2018), 3 layers of width 64 (4 heads of 16),
    self loops added per layer, as torch_geometric's ``GATConv`` does by default."""
    return GAT(in_channels=IN_FEATURES, hidden_channels=64, num_layers=3, out_channels=1, heads=HEADS)
