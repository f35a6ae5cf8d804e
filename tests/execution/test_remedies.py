"""Remedies as execution settings: candidates per device, stacking rules, the settings they apply, and the
interleaved rounds that time them."""

from __future__ import annotations

import pytest
import torch
from conftest import TinySurrogate, exec_config

from surrobench.errors import ModelError
from surrobench.execution.config import ExecConfig, execution_settings
from surrobench.execution.interleave import interleave, open_variant
from surrobench.execution import remedies
from surrobench.execution.remedies import Recipe, candidate_remedies, run_flags, thread_counts
from surrobench.execution.runner import config_step, prepare_model
from surrobench.workload.spec import ShapeSpec


def _cfg(**kw) -> ExecConfig:
    return exec_config(**{"batch": 2, "iters": 3, "input_sets": 2, **kw})


def _by_name(device="cuda", thorough=False):
    return {r.name: r for r in candidate_remedies(device, thorough=thorough)}


def test_candidates_per_device():
    cuda, cpu = _by_name("cuda"), _by_name("cpu")
    assert {
        "cudagraph",
        "compile",
        "compile-reduce-overhead",
        "tf32",
        "fp16",
        "bf16",
        "fp32",
        "channels_last",
        "cudnn_benchmark",
    } == set(cuda)
    # back to fp32 from a reduced precision (a CPU's fp16 has no fast units), never from fp32 itself
    for device in ("cuda", "cpu"):
        assert [r.name for r in candidate_remedies(device, precision="fp32") if r.name == "fp32"] == []
        (back,) = [r for r in candidate_remedies(device, precision="fp16") if r.name == "fp32"]
        assert device in back.devices and Recipe((back,)).apply(_cfg(precision="bf16")).precision == "fp32"
    assert "compile-reduce-overhead" in cpu  # kept so that feasibility says why it is not tried there
    assert "threads=1" in cpu and not any(n.startswith("threads") for n in cuda)
    assert "compile-max-autotune-no-cudagraphs" in _by_name("cuda", thorough=True)


def test_recipe_stacks_compatible_remedies_and_refuses_conflicts():
    r = _by_name()
    recipe = Recipe((r["cudagraph"],)).plus(r["tf32"])
    assert recipe.name == "cudagraph+tf32" and recipe.names == ["cudagraph", "tf32"]
    applied = recipe.apply(_cfg(device="cuda"))
    assert (applied.mode, applied.precision) == ("cudagraph", "tf32")
    assert recipe.conflict(r["fp16"]) is r["tf32"]  # one precision per config
    assert recipe.conflict(r["compile"]) is r["cudagraph"]  # one mode per config
    with pytest.raises(ValueError):
        recipe.plus(r["compile"])
    graphs = Recipe((r["compile-reduce-overhead"],))  # compilation and graph replay in one remedy
    assert graphs.conflict(r["cudagraph"]) is graphs.conflict(r["compile"]) is r["compile-reduce-overhead"]
    applied = graphs.plus(r["tf32"]).apply(_cfg(device="cuda"))
    assert (applied.mode, applied.compile_mode, applied.precision) == ("compile", "reduce-overhead", "tf32")
    assert run_flags(applied)[-2:] == ["--compile-mode", "reduce-overhead"]
    code = recipe.code()
    assert code[0].startswith("# cudagraph") and "torch.backends.cuda.matmul.allow_tf32 = True" in code
    assert Recipe().name == "baseline"


def test_a_swap_puts_a_remedy_in_place_of_those_that_set_its_settings():
    r = _by_name()
    recipe = Recipe((r["cudagraph"], r["tf32"], r["cudnn_benchmark"]))
    assert recipe.swap(r["fp16"]).name == "cudagraph+fp16+cudnn_benchmark"  # at tf32's position
    assert recipe.swap(r["compile-reduce-overhead"]).name == "compile-reduce-overhead+tf32+cudnn_benchmark"
    assert recipe.swap(r["channels_last"]).name == "cudagraph+tf32+cudnn_benchmark+channels_last"  # no clash: added
    assert recipe.swap(r["fp16"]).apply(_cfg(device="cuda")).precision == "fp16"


def test_run_flags_reproduce_every_setting():
    cfg = _cfg(
        device="cuda",
        mode="compile",
        compile_mode="max-autotune",
        precision="bf16",
        channels_last=True,
        cudnn_benchmark=True,
        threads=2,
    )
    assert run_flags(cfg) == [
        "--precision",
        "bf16",
        "--mode",
        "compile",
        "--device",
        "cuda",
        "--compile-mode",
        "max-autotune",
        "--channels-last",
        "--cudnn-benchmark",
        "--threads",
        "2",
    ]


def test_execution_settings_set_and_restore_threads():
    before = torch.get_num_threads()
    with execution_settings(_cfg(threads=1)):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_channels_last_config_converts_inputs_and_restores_the_module():
    prepared = prepare_model(TinySurrogate(), "cpu", 0)
    with config_step(_cfg(channels_last=True), prepared) as (step, input_sets):
        x = input_sets[0][0]
        assert x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        assert prepared.module.weight.is_contiguous(memory_format=torch.channels_last)
        step(0)
    assert prepared.module.weight.is_contiguous()


def test_interleaved_rounds_alternate_and_keep_setup_apart():
    prepared = prepare_model(TinySurrogate(), "cpu", 0)
    a = open_variant(_cfg(), prepared, own_module=False)
    b = open_variant(_cfg(channels_last=True), prepared)
    assert b.setup_ms > 0 and isinstance(b.first_output, torch.Tensor)
    assert prepared.module.weight.is_contiguous()  # b converted its own copy
    interleave([a, b], rounds=3, warmup=1, iters=4, stop=lambda: False)
    assert [len(v.rounds) for v in (a, b)] == [3, 3]
    assert all(len(r) == 4 for r in a.samples_ms())
    merged = b.result()
    assert merged.iters == 12 and merged.extra["rounds"] == 3 and merged.extra["channels_last"] is True
    assert merged.cold_start_ms == b.setup_ms


class _CachesCsr(torch.nn.Module):
    """A 1x1 conv (random init) that caches a sparse CSR tensor on its first call: copy.deepcopy then raises."""

    def __init__(self):
        super().__init__()
        self.conv, self.cache = torch.nn.Conv2d(2, 1, 1), {}

    def forward(self, x):
        self.cache.setdefault("eye", torch.eye(2).to_sparse_csr())
        return self.conv(x)


def test_a_module_that_cannot_be_deep_copied_is_built_again_with_its_weights():
    from surrobench.execution.reference import reference_outputs

    prepared = prepare_model(TinySurrogate(_CachesCsr), "cpu", 0)
    base = open_variant(_cfg(), prepared, own_module=False)  # its first call fills the cache
    variant = open_variant(_cfg(), prepared)
    assert variant.step is not base.step and torch.equal(variant.first_output, base.first_output)
    builds = iter([lambda: torch.nn.Linear(1, 1)])  # a second build that does not take the first's weights
    prepared.surrogate._factory = lambda: next(builds)()
    with pytest.raises(ModelError, match="cannot be copied for timing"):
        reference_outputs(_cfg(), prepared)


def test_the_zoo_fno_has_an_fp64_reference():
    # its spectral layers FFT in the input's precision (at least fp32), so a float64 copy contracts a
    # complex128 spectrum with complex128 weights instead of failing on a dtype mismatch
    from surrobench.execution.reference import reference_outputs
    from surrobench.workload.zoo import get_surrogate

    prepared = prepare_model(get_surrogate("fno2d"), "cpu", 0)
    cfg = _cfg(model="fno2d", shape=ShapeSpec(size=16))
    fp32, fp64, why = reference_outputs(cfg, prepared)
    assert why is None and fp64.dtype == torch.float64
    assert torch.allclose(fp64.float(), fp32, rtol=1e-3, atol=1e-4)


def test_a_config_label_names_its_recipe_settings():
    assert _cfg().label() == "tiny 8 b2 fp32 eager"
    cfg = _cfg(device="cuda", mode="compile", compile_mode="reduce-overhead", channels_last=True, precision="tf32")
    assert cfg.label() == "tiny 8 b2 tf32 compile(reduce-overhead) channels_last"
    assert _cfg(threads=1).label() == "tiny 8 b2 fp32 eager threads=1"


@pytest.mark.parametrize(
    ("logical", "physical", "usable", "expected"),
    [
        (2, 2, 2, (1, 2)),  # two cores, no SMT: both are tried (half of them was, before)
        (16, 8, 16, (1, 8, 16)),  # SMT: one per core and one per logical CPU
        (16, 8, 4, (1, 2, 4)),  # an affinity of 4 logical CPUs (2 cores) on that host
        (1, 1, 1, (1,)),
    ],
)
def test_thread_counts_follow_the_cores_this_process_may_use(monkeypatch, logical, physical, usable, expected):
    monkeypatch.setattr(remedies.os, "cpu_count", lambda: logical)
    monkeypatch.setattr(remedies.os, "sched_getaffinity", lambda pid: set(range(usable)), raising=False)
    monkeypatch.setattr(remedies.psutil, "cpu_count", lambda logical=True: physical)
    assert thread_counts() == expected
