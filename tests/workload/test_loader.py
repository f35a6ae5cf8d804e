"""User models: module:factory (file and package), the example_inputs hook, torch.export .pt2 files."""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch import nn

from surrobench.errors import ModelError, UsageError
from surrobench.workload.loader import ExportedSurrogate, FactorySurrogate, resolve_model
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo.fno import FNO2dSurrogate

CPU = torch.device("cpu")

MODULE = """
import torch
from torch import nn

def make():
    return nn.Conv2d(3, 2, 3, padding=1)

def broken():
    raise RuntimeError("weights file\\nnot found")

def not_a_module():
    return 42
"""

HOOKED = """
import torch
from torch import nn

class Pair(nn.Module):
    def forward(self, x, scale):
        return x * scale

def make():
    return Pair()

def example_inputs(batch, shape):
    return torch.randn(batch, shape), torch.full((1,), 2.0)
"""


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_file_factory_builds_and_gets_default_grid_input(tmp_path):
    surrogate = resolve_model(write(tmp_path, "user_model.py", MODULE) + ":make")
    assert isinstance(surrogate, FactorySurrogate)
    (x,) = surrogate.example_inputs(2, ShapeSpec(size=8), generator=gen(), device=CPU)
    assert tuple(x.shape) == (2, 3, 8, 8) and x.dtype == torch.float32
    assert tuple(surrogate.build()(x).shape) == (2, 2, 8, 8)
    assert surrogate.points_per_sample((x,)) == 64
    (full,) = surrogate.example_inputs(3, ShapeSpec(full=(1, 3, 4, 6)), generator=gen(), device=CPU)
    assert tuple(full.shape) == (3, 3, 4, 6)


def test_package_module_factory(tmp_path, monkeypatch):
    write(tmp_path, "pkg_user_model.py", MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    model = resolve_model("pkg_user_model:make").build()
    assert isinstance(model, nn.Conv2d)


def test_factory_that_raises_is_one_line_model_error(tmp_path):
    """The model's failure (a UsageError where it stops a command), naming the factory and the exception's type."""
    surrogate = resolve_model(write(tmp_path, "m.py", MODULE) + ":broken")
    with pytest.raises(ModelError, match=r"factory broken\(\) raised RuntimeError: weights file not found$") as raised:
        surrogate.build()
    assert isinstance(raised.value, UsageError) and isinstance(raised.value.__cause__, RuntimeError)


def test_factory_returning_non_module(tmp_path):
    surrogate = resolve_model(write(tmp_path, "m.py", MODULE) + ":not_a_module")
    with pytest.raises(ModelError, match="factory not_a_module returned int, not an nn.Module"):
        surrogate.build()


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("surrobench_no_such_module:make", "cannot import: ModuleNotFoundError"),
        ("no/such/file.py:make", "no such file"),
        ("torch.nn:no_such_factory", "has no callable 'no_such_factory'"),
        (":make", "expected package.module:factory"),
        ("fno3d", "unknown model 'fno3d' \\(did you mean fno2d\\?\\)"),
        ("zzz", "unknown model 'zzz'; known: "),
        ("FNO2D", "unknown model 'FNO2D' \\(did you mean fno2d\\?\\)"),
    ],
)
def test_bad_specs(spec, match):
    with pytest.raises(UsageError, match=match):
        resolve_model(spec)


def test_a_python_file_without_its_factory_is_told_to_name_one(tmp_path):
    path = write(tmp_path, "mine.py", MODULE)
    with pytest.raises(UsageError) as err:
        resolve_model(path)
    assert err.value.parameter == "model"  # the zoo's "unknown model" error names no parameter
    assert f"{path}:" in str(err.value) and "unknown model" not in str(err.value)


def test_module_that_fails_on_import(tmp_path):
    with pytest.raises(UsageError, match="cannot import: ZeroDivisionError"):
        resolve_model(write(tmp_path, "bad.py", "x = 1 / 0\n") + ":make")


def test_zoo_names_resolve_to_zoo():
    assert isinstance(resolve_model("fno2d"), FNO2dSurrogate)


def test_example_inputs_hook_is_used_and_reproducible(tmp_path):
    surrogate = resolve_model(write(tmp_path, "hooked.py", HOOKED) + ":make")
    global_state = torch.get_rng_state()
    x, scale = surrogate.example_inputs(4, ShapeSpec(size=5), generator=gen(1), device=CPU)
    assert torch.equal(torch.get_rng_state(), global_state)
    assert tuple(x.shape) == (4, 5) and scale.item() == 2.0
    again, _ = surrogate.example_inputs(4, ShapeSpec(size=5), generator=gen(1), device=CPU)
    other, _ = surrogate.example_inputs(4, ShapeSpec(size=5), generator=gen(2), device=CPU)
    assert torch.equal(x, again) and not torch.equal(x, other)
    assert torch.equal(surrogate.build()(x, scale), 2 * x)
    assert surrogate.points_per_sample((x, scale)) is None  # a hook declares no points: no points/s


def test_hook_returning_garbage(tmp_path):
    path = write(tmp_path, "garbage.py", MODULE + "\ndef example_inputs(batch, shape):\n    return [1, 2]\n")
    surrogate = resolve_model(path + ":make")
    with pytest.raises(UsageError, match="returned list, not a tensor or a tuple of tensors"):
        surrogate.example_inputs(1, ShapeSpec(size=4), generator=gen(), device=CPU)


class SmallConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


def export(tmp_path, dynamic_batch: bool) -> str:
    model = SmallConv().eval()
    dynamic = ({0: torch.export.Dim("batch", min=1, max=16)},) if dynamic_batch else None
    program = torch.export.export(model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=dynamic)
    path = str(tmp_path / ("dyn.pt2" if dynamic_batch else "static.pt2"))
    torch.export.save(program, path)
    return path


def test_pt2_round_trip_with_dynamic_batch(tmp_path):
    surrogate = resolve_model(export(tmp_path, dynamic_batch=True))
    assert isinstance(surrogate, ExportedSurrogate)
    model = surrogate.build()
    model.eval()  # the runner always does this; the exported module alone would raise
    for batch in (2, 3):
        (x,) = surrogate.example_inputs(batch, ShapeSpec(size=surrogate.info.default_size), generator=gen(), device=CPU)
        assert tuple(x.shape) == (batch, 3, 8, 8)
        with torch.inference_mode():
            assert tuple(model(x).shape) == (batch, 4, 8, 8)
        assert surrogate.points_per_sample((x,)) == 64
    (x,) = surrogate.example_inputs(5, ShapeSpec(full=(1, 3, 8, 8)), generator=gen(), device=CPU)
    assert tuple(x.shape) == (5, 3, 8, 8)


@pytest.mark.parametrize(
    ("dynamic", "batch", "shape", "match"),
    [
        (False, 3, ShapeSpec(size=8), "dim 0 is static 2"),
        (True, 17, ShapeSpec(size=8), r"outside the exported range \[1, 16\]"),
        (True, 2, ShapeSpec(full=(1, 3, 16, 16)), "dim 2 is static 8"),
        (True, 2, ShapeSpec(full=(1, 3, 8)), "has rank 4"),
        (True, 2, ShapeSpec(size=16), "a bare size 16 cannot change that"),
    ],
)
def test_pt2_shapes_the_export_cannot_take(tmp_path, dynamic, batch, shape, match):
    surrogate = resolve_model(export(tmp_path, dynamic_batch=dynamic))
    with pytest.raises(UsageError, match=match):
        surrogate.example_inputs(batch, shape, generator=gen(), device=CPU)


def test_static_pt2_runs_at_its_own_batch(tmp_path):
    surrogate = resolve_model(export(tmp_path, dynamic_batch=False))
    (x,) = surrogate.example_inputs(2, ShapeSpec(size=8), generator=gen(), device=CPU)
    assert tuple(surrogate.build()(x).shape) == (2, 4, 8, 8)


def test_corrupt_and_missing_pt2(tmp_path):
    corrupt = tmp_path / "corrupt.pt2"
    corrupt.write_bytes(b"not a zip archive at all")
    with pytest.raises(UsageError, match=f"model {corrupt}: cannot load exported program: ") as info:
        resolve_model(str(corrupt))
    assert "\n" not in str(info.value)
    with pytest.raises(UsageError, match="missing.pt2: no such file"):
        resolve_model(str(tmp_path / "missing.pt2"))


def test_a_factory_calling_sys_exit_is_a_usage_error(tmp_path):
    from surrobench.errors import UsageError
    from surrobench.workload.loader import resolve_model

    module = tmp_path / "exits.py"
    module.write_text("import sys\ndef build():\n    sys.exit(0)\n")
    with pytest.raises(UsageError, match="SystemExit"):
        resolve_model(f"{module}:build").build()


def test_a_batch_a_static_export_cannot_take_fails_before_anything_is_timed(tmp_path):
    from conftest import run_cli

    from surrobench.results.store import ResultStore

    path = export(tmp_path, dynamic_batch=False)  # exported at batch 2
    db = tmp_path / "r.db"
    assert (
        run_cli(
            [
                "run",
                "--model",
                path,
                "--shape",
                "1x3x8x8",
                "--batch",
                "2,3",
                "--device",
                "cpu",
                "--iters",
                "2",
                "--warmup",
                "0",
                "--db",
                str(db),
            ]
        )
        == 2
    )
    with ResultStore(db) as store:
        assert store.list_runs() == []  # no half-finished run left behind
