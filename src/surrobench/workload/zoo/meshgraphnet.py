"""MeshGraphNet (``meshgraphnet``): encode-process-decode message passing on a mesh.

Source: T. Pfaff, M. Fortunato, A. Sanchez-Gonzalez, P. W. Battaglia, "Learning Mesh-Based Simulation
with Graph Networks", ICLR 2021 (arXiv:2010.03409), section 3 and appendix A.1: MLPs of two hidden layers
of 128 with ReLU and a LayerNorm on the output (except the decoder), residual edge and node updates,
sum aggregation of incoming edge messages. Pure torch: aggregation is ``index_add_`` over destinations.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo._common import mlp, randn
from surrobench.workload.zoo.base import ModelInfo, Surrogate

NODE_DIM = 3  # e.g. 2-D velocity and a node type code (the paper's CylinderFlow inputs)
EDGE_DIM = 3  # relative position (dx, dy) and its norm |d|
OUT_DIM = 2  # per-node velocity change, as in CylinderFlow
HIDDEN = 128
STEPS = 6  # the paper uses 15 message-passing steps; 6 keeps CPU runs short and the per-step cost visible


def _latent_mlp(in_dim: int, out_dim: int = HIDDEN, *, layer_norm: bool = True) -> nn.Sequential:
    return mlp([in_dim, HIDDEN, HIDDEN, out_dim], nn.ReLU, layer_norm=layer_norm)


class MeshGraphNet(nn.Module):
    """Node and edge encoders, ``steps`` residual blocks (``m_ij = MLP_e([e_ij, x_src, x_dst])``,
    ``x_i += MLP_v([x_i, sum_j m_ji])``, ``e_ij += m_ij``; ``edge_index[0]`` the source), a node decoder.

    Shapes: nodes ``(B, N, node_dim)``, edge_index ``(2, E)`` int64 into the ``B*N`` nodes, edges
    ``(E, edge_dim)`` -> ``(B, N, out_dim)``.
    """

    def __init__(
        self, node_dim: int = NODE_DIM, edge_dim: int = EDGE_DIM, out_dim: int = OUT_DIM, steps: int = STEPS
    ) -> None:
        super().__init__()
        self.node_encoder = _latent_mlp(node_dim)
        self.edge_encoder = _latent_mlp(edge_dim)
        self.edge_mlps = nn.ModuleList(_latent_mlp(3 * HIDDEN) for _ in range(steps))
        self.node_mlps = nn.ModuleList(_latent_mlp(2 * HIDDEN) for _ in range(steps))
        self.decoder = _latent_mlp(HIDDEN, out_dim, layer_norm=False)

    def forward(
        self, node_features: torch.Tensor, edge_index: torch.Tensor, edge_features: torch.Tensor
    ) -> torch.Tensor:
        batch, nodes, _ = node_features.shape
        x = self.node_encoder(node_features.reshape(batch * nodes, -1))
        e = self.edge_encoder(edge_features)
        src, dst = edge_index[0], edge_index[1]
        for edge_mlp, node_mlp in zip(self.edge_mlps, self.node_mlps):
            message = edge_mlp(torch.cat([e, x[src], x[dst]], dim=-1))
            # Zeros in the message dtype: under autocast it may differ from x's, and index_add_ needs a match.
            incoming = message.new_zeros(x.shape[0], message.shape[1]).index_add_(0, dst, message)
            x = x + node_mlp(torch.cat([x, incoming], dim=-1))
            e = e + message
        return self.decoder(x).reshape(batch, nodes, -1)


def grid_mesh_edges(side: int, batch: int, device: torch.device) -> torch.Tensor:
    """Directed edges ``(2, E)`` int64 of ``batch`` disjoint ``side x side`` grid meshes, each cell split by its
    (i, j)-(i+1, j+1) diagonal, node ``(i, j)`` of copy ``b`` numbered ``b * side**2 + i * side + j``:
    ``E = 2 * batch * (2 * side * (side - 1) + (side - 1)**2)``."""
    idx = torch.arange(side * side, device=device).view(side, side)
    pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :]), (idx[:-1, :-1], idx[1:, 1:])]
    undirected = torch.cat([torch.stack([a.flatten(), b.flatten()]) for a, b in pairs], dim=1)
    directed = torch.cat([undirected, undirected.flip(0)], dim=1)
    offsets = torch.arange(batch, device=device) * side * side
    return (directed[:, None, :] + offsets[None, :, None]).reshape(2, -1)


class MeshGraphNetSurrogate(Surrogate):
    """``meshgraphnet``: hidden 128, 6 processor steps; output ``(B, N, 2)``. B disjoint triangulated ``s x s`` grid
    meshes (:func:`grid_mesh_edges`), ``s = round(sqrt(N))``; N a perfect square in a full shape ``Bx N x 3``.
    """

    info = ModelInfo(
        name="meshgraphnet",
        paper="Pfaff et al. 2021, Learning Mesh-Based Simulation with Graph Networks, ICLR",
        layout="nodes: (B, N, 3), edge_index: (2, E) int64, edges: (E, 3); triangulated grid mesh",
        point_kind="nodes",
        default_size=4096,
    )

    def build(self) -> nn.Module:
        return MeshGraphNet()

    def example_inputs(
        self, batch: int, shape: ShapeSpec, *, generator: torch.Generator, device: torch.device
    ) -> tuple[torch.Tensor, ...]:
        """``(node_features, edge_index, edge_features)``.

        Raises:
            UsageError: fewer than 4 nodes, or a full shape that is not ``Bx N x 3`` with N a perfect square.
        """
        if shape.full is None:
            side = round(math.sqrt(shape.size))
        else:
            side = math.isqrt(shape.full[1]) if len(shape.full) == 3 else 0
            if len(shape.full) != 3 or shape.full[2] != NODE_DIM or side * side != shape.full[1]:
                raise UsageError(
                    f"meshgraphnet: shape {shape.label()} does not fit layout (B, N, 3) with N a perfect square; "
                    "give a bare size N or e.g. 1x4096x3"
                )
        if side < 2:
            raise UsageError(f"meshgraphnet: size {shape.label()} gives a mesh under 2x2 nodes; use N >= 4")
        edge_index = grid_mesh_edges(side, batch, device)
        nodes = randn((batch, side * side, NODE_DIM), generator, device)
        edges = randn((edge_index.shape[1], EDGE_DIM), generator, device)
        return nodes, edge_index, edges

    def points_per_sample(self, inputs: tuple[torch.Tensor, ...]) -> int:
        return inputs[0].shape[1]
