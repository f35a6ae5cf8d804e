"""A model surrobench did not write: torch_geometric's GraphSAGE, loaded through ``--model module:factory``.

    surrobench run --model examples/pyg_graphsage.py:build --shape 10000,100000 --batch 1

``shape`` is the node count N of a random graph with 8 edges per node (E = 8 N) and 16 input features;
the batch is B disjoint copies of the graph, as torch_geometric batches graphs.
"""

import torch
from torch_geometric.nn import GraphSAGE

IN_FEATURES = 16
EDGES_PER_NODE = 8


def build() -> torch.nn.Module:
    """GraphSAGE (Hamilton et al. 2017), 4 layers of width 128, mean aggregation."""
    return GraphSAGE(in_channels=IN_FEATURES, hidden_channels=128, num_layers=4, out_channels=1)


def example_inputs(batch: int, shape) -> tuple[torch.Tensor, torch.Tensor]:
    """Node features (B*N, 16) and edge_index (2, B*8N) of B disjoint random graphs of N nodes."""
    n = shape if isinstance(shape, int) else shape[-1]
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(batch * n, IN_FEATURES, generator=gen)
    src = torch.randint(0, n, (batch, EDGES_PER_NODE * n), generator=gen)
    dst = torch.randint(0, n, (batch, EDGES_PER_NODE * n), generator=gen)
    offset = (torch.arange(batch) * n).unsqueeze(1)
    return x, torch.stack([(src + offset).flatten(), (dst + offset).flatten()])
