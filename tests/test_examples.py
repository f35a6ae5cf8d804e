"""The examples that ship with the repository: the domain-decomposed convolution stack."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from conftest import torchrun_variables, two_ranks

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_halo_stack_alone_is_a_zero_padded_convolution_stack():
    halo = _load("halo_conv2d")
    torch.manual_seed(0)
    model = halo.build().eval()
    x = halo.field_rows(1, 12, 0, 12, seed=3)
    expected = x
    for conv in model.convs:
        expected = F.gelu(F.conv2d(expected, conv.weight, conv.bias, padding=1))
    with torch.inference_mode():
        assert torch.allclose(model(x), expected, atol=1e-6)


def test_halo_field_rows_tile_the_same_field():
    halo = _load("halo_conv2d")
    whole = halo.field_rows(2, 8, 0, 10, seed=5)
    assert torch.equal(whole, torch.cat([halo.field_rows(2, 8, 0, 3, 5), halo.field_rows(2, 8, 3, 10, 5)], dim=2))


def test_halo_stack_split_over_two_gloo_ranks_equals_one_process():
    """The example's ``--check`` on two gloo ranks, started with the variables torchrun gives each rank (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``: what ``init_process_group`` reads), without torchrun's agent
    process (conftest's ``two_ranks``)."""
    argv = [sys.executable, str(ROOT / "examples" / "halo_conv2d.py"), "--size", "16", "--batch", "2"]
    outputs = two_ranks([*argv, "--device", "cpu", "--check"], torchrun_variables)
    line = next(ln for ln in outputs[0][0].splitlines() if "max abs difference" in ln)
    assert "on 2 ranks" in line and float(line.rsplit(" ", 1)[1]) < 1e-5


def test_patch_transformer_patches_join_back_to_the_field_and_both_builds_keep_its_shape():
    pt = _load("patch_transformer")
    x = torch.randn(2, 3, 16, 24)
    patches = pt._Patches(3, pt.PATCH)
    tokens = patches.split(x)
    assert tokens.shape == (2, (16 // pt.PATCH) * (24 // pt.PATCH), 3 * pt.PATCH**2)
    assert torch.equal(patches.join(tokens, 16, 24), x)
    with torch.inference_mode():
        for build in (pt.build, pt.build_sdpa):
            assert build().eval()(x).shape == x.shape


def test_the_measured_advice_families_map_their_inputs_to_fields_of_the_same_points():
    """The AFNO, Galerkin transformer and SIREN written for docs/benchmarks/h200-measured-advice.md."""
    torch.manual_seed(0)
    afno = _load("afno").build().eval()
    with torch.inference_mode():
        assert afno(torch.randn(2, 3, 16, 16)).shape == (2, 3, 16, 16)
        for name in ("galerkin_transformer", "siren_pinn"):
            module = _load(name)
            points = module.example_inputs(2, 40)
            assert points.shape == (2, 40, 3) and module.build().eval()(points).shape == (2, 40, 1)
