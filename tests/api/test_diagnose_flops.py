"""diagnose counts each config's FLOPs for its roofline: a model passing a parameter into a submodule (which
FlopCounterMode's module tracker cannot hook under inference mode) is counted; a count that fails costs the
roofline, with a warning, never the diagnosis."""

from __future__ import annotations

import pytest

import surrobench.api.diagnose as api_diagnose
from surrobench.records.ceilings import Ceilings

CEILINGS = Ceilings("Test CPU", 10.0, {"fp32": 0.1}, "2026-12-01T00:00:00+00:00", "planted")
MODEL = '''
import torch
from torch import nn


class Latents(nn.Module):
    """Learned latents (8, 16) through a linear layer: a parameter as a submodule's input."""

    def __init__(self):
        super().__init__()
        self.q = nn.Parameter(torch.randn(8, 16))
        self.lin = nn.Linear(16, 16)

    def forward(self, x):  # x (B, 16)
        return x @ self.lin(self.q[:, :16]).t()


def latents():
    return Latents()
'''


@pytest.fixture
def latents(tmp_path, monkeypatch):
    monkeypatch.setattr(api_diagnose, "device_ceilings", lambda record: (CEILINGS, "planted ceilings"))
    (tmp_path / "latents.py").write_text(MODEL)
    return f"{tmp_path / 'latents.py'}:latents"


def _diagnose(model):
    return api_diagnose.diagnose(model, shapes="1x16", device="cpu", threads=1, warmup=1, iters=3, measure_s=0)


def test_a_parameter_passed_into_a_submodule_is_counted(latents):
    d = _diagnose(latents)
    ((label, roof),) = d.context["roofline"].items()
    flops = {op["name"]: op["flops"] for op in roof["ops"]}
    assert flops["aten::addmm"] == 2 * 8 * 16 * 16  # the linear layer on the (8, 16) latents
    assert not [w for w in d.warnings if "FLOPs not counted" in w]


def test_a_failing_count_leaves_the_diagnosis_without_a_roofline(latents, monkeypatch):
    def fails(forward, module=None):
        raise RuntimeError("planted counter failure")

    monkeypatch.setattr(api_diagnose, "count_op_costs", fails)
    d = _diagnose(latents)
    assert d.run.results[0].status == "ok" and not d.context.get("roofline")
    (note,) = [w for w in d.warnings if "FLOPs not counted" in w]
    assert note.endswith("(RuntimeError: planted counter failure)")


SR3D = """
import torch
from torch import nn
import torch.nn.functional as F


class SR3D(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.out = nn.Conv3d(2, 4, 3, padding=1), nn.Conv3d(4, 1, 1)

    def forward(self, x):  # (B, 2, D, D, D) -> (B, 1, 2D, 2D, 2D)
        return self.out(F.interpolate(F.silu(self.inp(x)), scale_factor=2, mode="trilinear"))


def sr3d():
    return SR3D()
"""


def test_a_decomposition_only_the_flop_counter_ran_is_left_out_of_the_roofline(tmp_path, monkeypatch):
    # under the counter's dispatch modes trilinear upsampling runs as _unsafe_index/add/sub/mul on full-size
    # tensors; the profiled step ran one aten::upsample_trilinear3d: those costs describe no profiled call
    monkeypatch.setattr(api_diagnose, "device_ceilings", lambda record: (CEILINGS, "planted ceilings"))
    (tmp_path / "sr3d.py").write_text(SR3D)
    d = api_diagnose.diagnose(
        f"{tmp_path / 'sr3d.py'}:sr3d", shapes="1x2x8x8x8", device="cpu", threads=1, warmup=1, iters=3, measure_s=0
    )
    ((label, roof),) = d.context["roofline"].items()
    uncosted = {u["name"]: u for u in roof["uncosted"]}
    assert {"aten::add", "aten::sub", "aten::mul", "aten::_unsafe_index"} <= set(uncosted)
    assert all(u["counted_calls"] > u["profiled_calls"] for u in uncosted.values())
    costed = {op["name"] for op in roof["ops"]}
    assert not costed & set(uncosted) and "aten::convolution" in costed
