"""Reference surrogates: forward shapes, input determinism, layout errors, registry, parameter counts."""

from __future__ import annotations

import pytest
import torch

from surrobench.errors import UsageError
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo import all_surrogates, describe, get_surrogate
from surrobench.workload.zoo.meshgraphnet import grid_mesh_edges

CPU = torch.device("cpu")
NAMES = ["fno2d", "unet2d", "pinn-mlp", "deeponet", "meshgraphnet"]


def inputs(name: str, batch: int, shape: ShapeSpec, seed: int = 0) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(seed)
    return get_surrogate(name).example_inputs(batch, shape, generator=generator, device=CPU)


def forward(name: str, batch: int, shape: ShapeSpec) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    torch.manual_seed(0)
    model = get_surrogate(name).build().eval()
    args = inputs(name, batch, shape)
    with torch.inference_mode():
        return args, model(*args)


# (name, bare size, expected output shape per batch B, expected points per sample)
CASES = [
    ("fno2d", 16, lambda b: (b, 1, 16, 16), 256),
    ("unet2d", 16, lambda b: (b, 1, 16, 16), 256),
    ("pinn-mlp", 50, lambda b: (b, 50, 2), 50),
    ("deeponet", 40, lambda b: (b, 40), 40),
    ("meshgraphnet", 20, lambda b: (b, 16, 2), 16),  # round(sqrt(20)) = 4 -> 4x4 mesh
]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize(("name", "size", "out_shape", "points"), CASES, ids=[c[0] for c in CASES])
def test_forward_shape_and_points(name, size, out_shape, points, batch):
    args, out = forward(name, batch, ShapeSpec(size=size))
    assert tuple(out.shape) == out_shape(batch)
    assert torch.isfinite(out).all()
    assert get_surrogate(name).points_per_sample(args) == points
    assert all(a.device == CPU for a in args)
    assert all(a.dtype == torch.float32 for a in args if a.is_floating_point())


@pytest.mark.parametrize("name", NAMES)
def test_inputs_depend_only_on_seed(name):
    shape = ShapeSpec(size=16)
    first, again, other = inputs(name, 2, shape, seed=7), inputs(name, 2, shape, seed=7), inputs(name, 2, shape, seed=8)
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert not all(torch.equal(a, b) for a, b in zip(first, other))


@pytest.mark.parametrize("name", NAMES)
def test_runs_under_bf16_autocast(name):
    # The runner's fp16/bf16 path is autocast; the FNO's FFT and MeshGraphNet's index_add_ must cope.
    torch.manual_seed(0)
    model = get_surrogate(name).build().eval()
    args = inputs(name, 2, ShapeSpec(size=16))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(*args)
    assert torch.isfinite(out.float()).all()


def test_full_shapes_replace_batch_and_keep_the_rest():
    args, out = forward("fno2d", 2, ShapeSpec(full=(1, 3, 8, 12)))
    assert tuple(args[0].shape) == (2, 3, 8, 12) and tuple(out.shape) == (2, 1, 8, 12)
    args, out = forward("unet2d", 2, ShapeSpec(full=(5, 3, 16, 24)))
    assert tuple(out.shape) == (2, 1, 16, 24)
    args, out = forward("pinn-mlp", 3, ShapeSpec(full=(1, 10, 3)))
    assert tuple(out.shape) == (3, 10, 2)
    args, out = forward("meshgraphnet", 2, ShapeSpec(full=(1, 9, 3)))
    assert tuple(out.shape) == (2, 9, 2)


def test_fno_clamps_modes_on_small_grids():
    # 4x4 keeps at most 2 kx modes per sign and 3 ky bins, far under the default 16.
    _, out = forward("fno2d", 1, ShapeSpec(size=4))
    assert tuple(out.shape) == (1, 1, 4, 4)


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("fno2d", ShapeSpec(full=(1, 4, 16, 16))),  # wrong channel count
        ("fno2d", ShapeSpec(full=(1, 3, 16))),  # wrong rank
        ("unet2d", ShapeSpec(size=20)),  # not divisible by 8
        ("unet2d", ShapeSpec(full=(1, 3, 16, 12))),
        ("pinn-mlp", ShapeSpec(full=(1, 10, 2))),
        ("deeponet", ShapeSpec(full=(1, 100))),
        ("meshgraphnet", ShapeSpec(full=(1, 10, 3))),  # 10 is not a perfect square
        ("meshgraphnet", ShapeSpec(size=2)),  # under a 2x2 mesh
    ],
)
def test_bad_shapes_raise_one_line_usage_error(name, shape):
    with pytest.raises(UsageError) as info:
        inputs(name, 1, shape)
    assert name in str(info.value) and "\n" not in str(info.value)


def test_mesh_edges_are_bidirectional_and_batched_disjointly():
    side, batch = 3, 2
    edges = grid_mesh_edges(side, batch, CPU)
    undirected = 2 * side * (side - 1) + (side - 1) ** 2
    assert edges.dtype == torch.int64 and tuple(edges.shape) == (2, 2 * batch * undirected)
    pairs = set(map(tuple, edges.t().tolist()))
    assert all((d, s) in pairs for s, d in pairs)
    n = side * side
    assert all((s < n) == (d < n) for s, d in pairs)  # no edge joins the two copies
    assert (edges.min(), edges.max()) == (0, batch * n - 1)


def test_registry():
    assert [s.info.name for s in all_surrogates()] == NAMES
    with pytest.raises(UsageError, match="known: fno2d, unet2d"):
        get_surrogate("fno3d")


def test_describe_counts_parameters():
    rows = {r["name"]: r for r in map(describe, all_surrogates())}
    assert set(rows) == set(NAMES)
    assert all(r["parameters"] > 0 and r["default_size"] > 0 for r in rows.values())
    # 4 Fourier layers x 2 complex blocks of 32x32x16x16, counted as 2 reals each, dominate the FNO.
    assert rows["fno2d"]["parameters"] > 4 * 2 * 32 * 32 * 16 * 16 * 2
