"""Shared test helpers: tiny surrogates whose behaviour is known by construction."""

from __future__ import annotations

import gc
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo.base import ModelInfo, Surrogate

# Inductor's CPU kernels for the suite's few real torch.compile calls, in this process and in every process a
# test starts (read when torch._inductor.config is first imported, which `import torch` does not do): scalar C++
# (no probe of AVX2/AVX-512 by compiling test programs) and no precompiled header (one large g++ run per cache
# directory). torch/_inductor/config.py names both switches. On 2 shared cores a compiling child took 18.9 s
# with torch's defaults and 9.6 s with these (docs/benchmarks/test-suite.md); what the tests check (a mode
# runs, a graph cache is shared across processes) does not depend on how the kernel is vectorized. A user's
# own setting stands.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "0")
os.environ.setdefault("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", "0")
# rich fixes a console's width from COLUMNS where it is set when the console is made (a pytest-xdist worker sets it to
# 80), and tests that set their own width (monkeypatch.setenv("COLUMNS", ...)) then read a console made before them:
# unset, every console reads the width at each print, in any test order and with or without workers.
os.environ.pop("COLUMNS", None)


_frozen_at_modules = 0


def _freeze_the_long_lived() -> None:
    """Collect, then move every object left to the collector's permanent generation (:func:`gc.freeze`), which no
    later collection walks. The surrobench code the tests run calls ``gc.collect()`` between configs
    (``execution.runner.free_device``); in this process each walked the ~200,000-400,000 objects of pytest, the
    collected tests and the modules imported so far. The optimize, input-identity and optimize-CLI tests (57) took
    28.5 s on 2 shared cores, 12.6 s of it in full collections; frozen, 19.4 s and 0.8 s
    (docs/benchmarks/test-suite.md). An object frozen here is
    alive now; were it to become cyclic garbage later, it would stay, which costs this process memory and no
    test a result."""
    global _frozen_at_modules
    gc.collect()
    gc.freeze()
    _frozen_at_modules = len(sys.modules)


def pytest_collection_finish(session):
    _freeze_the_long_lived()


def pytest_runtest_logfinish(nodeid, location):
    """Freeze again once a test's lazy imports (scipy, sympy, matplotlib, torch._dynamo...) have added modules."""
    if len(sys.modules) > _frozen_at_modules + 20:
        _freeze_the_long_lived()


def exec_config(**fields) -> ExecConfig:
    """A small CPU config: ``tiny`` at 8, batch 1, fp32 eager, 1 warm-up and 2 timed calls, seed 0, one input
    set; ``fields`` override any of them."""
    base = dict(
        model="tiny",
        shape=ShapeSpec(size=8),
        batch=1,
        precision="fp32",
        device="cpu",
        mode="eager",
        warmup=1,
        iters=2,
        cudnn_benchmark=False,
        seed=0,
        input_sets=1,
    )
    return ExecConfig(**{**base, **fields})


class TinySurrogate(Surrogate):
    """A 1x1 conv on (B, 2, N, N); ``module`` may be overridden to plant failures."""

    info = ModelInfo("tiny", "test fixture", "x: (B, 2, N, N)", "grid points", 8)

    def __init__(self, module_factory=None):
        self._factory = module_factory or (lambda: nn.Conv2d(2, 1, 1))

    def build(self) -> nn.Module:
        return self._factory()

    def example_inputs(self, batch, shape: ShapeSpec, *, generator, device):
        n = shape.size if shape.size is not None else shape.full[-1]
        if shape.full is not None and len(shape.full) != 4:
            raise UsageError("tiny needs a 4-D shape")
        return (torch.randn(batch, 2, n, n, generator=generator, device=device),)

    def points_per_sample(self, inputs) -> int:
        return inputs[0].shape[-1] * inputs[0].shape[-2]


class RaisesOn(nn.Module):
    """Raises ``exc`` when the batch size equals ``batch``; otherwise a 1x1 conv."""

    def __init__(self, batch: int, exc: BaseException):
        super().__init__()
        self.batch, self.exc, self.conv = batch, exc, nn.Conv2d(2, 1, 1)

    def forward(self, x):
        if x.shape[0] == self.batch:
            raise self.exc
        return self.conv(x)


class ReturnsNaN(nn.Module):
    def forward(self, x):
        return x * float("nan")


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """One intra-op thread in this process and in every process a test starts (they inherit the environment):
    the zoo FNO takes 90-245 ms a forward at torch's default thread count on two shared cores, ~2 ms on one
    thread (docs/benchmarks/test-suite.md)."""
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _profiling_child_in_process(request, monkeypatch):
    """The profiling child (:mod:`surrobench.collect.child`) runs as a call of its ``main`` in the test's process:
    the same build, steps and profile from the same config file, without a Python start and a torch import per
    profiled config (seconds each on two shared cores). Tests of the child as a process are marked
    ``child_process``."""
    if request.node.get_closest_marker("child_process"):
        return
    from surrobench.collect import child

    def run(argv, **kwargs):
        return subprocess.CompletedProcess(argv, child.main(argv[3:]), "", "")

    monkeypatch.setattr(child, "subprocess", SimpleNamespace(run=run, TimeoutExpired=subprocess.TimeoutExpired))


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory, monkeypatch):
    """Every test gets its own per-machine cache (calibrated ceilings): never the user's ~/.cache."""
    from surrobench.results.ceilings import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _estimates_unless_asked(monkeypatch):
    """diagnose measures no remedy unless a test asks (``measure_s=``, ``--measure-s``): each measured remedy
    costs a baseline start and windows of rounds, seconds on two shared cores, which the diagnosis tests do not
    check. The tests of measured actions plant their timings (tests/tune/test_advice.py)."""
    from surrobench.tune import advice

    monkeypatch.setattr(advice, "DEFAULT_MEASURE_S", 0.0)


@pytest.fixture(scope="session")
def _cpuinfo_with_bf16_units(tmp_path_factory):
    from surrobench.execution.host_facts import proc_value

    planted = tmp_path_factory.mktemp("cpuinfo") / "cpuinfo"
    model = proc_value("model name")  # this host's, as the runs and processes a test starts read it
    planted.write_text((f"model name\t: {model}\n" if model else "") + "flags\t\t: fpu sse2 avx2 avx512_bf16\n")
    return planted


@pytest.fixture(autouse=True)
def _bf16_units(_cpuinfo_with_bf16_units, monkeypatch):
    """A CPU with bf16 units, whatever this host's flags: optimize and diagnose try bf16 in its own place, not last as
    on a CPU without them (:meth:`surrobench.tune.trials.Trials.crowds`); tests/tune/test_advice.py plants one without.
    """
    monkeypatch.setattr("surrobench.execution.host_facts.CPUINFO", _cpuinfo_with_bf16_units)


@pytest.fixture
def tiny():
    return TinySurrogate()


def run_cli(argv: list[str]) -> int:
    """Run ``surrobench`` in-process through its real entry point; returns the exit code."""
    from surrobench.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code


def two_ranks(command: list[str], rank_variables: Callable[[int], dict[str, str]]) -> list[tuple[str, str]]:
    """``command`` in two processes started as a launcher starts its ranks, with no launcher process (torchrun's agent
    imports torch only to start them: about 2 s of CPU, docs/benchmarks/test-suite.md): each with
    ``rank_variables(rank)``, one OpenMP thread, this checkout's ``src`` first on PYTHONPATH and a free
    ``MASTER_PORT``. Returns their (stdout, stderr); both exited 0."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    src = str(Path(__file__).resolve().parents[1] / "src")
    base.update(
        PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
        OMP_NUM_THREADS="1",
        MASTER_PORT=str(port),
    )
    env = [{**base, **rank_variables(r)} for r in range(2)]
    procs = [subprocess.Popen(command, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for e in env]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs[0][1][-2000:] + outputs[1][1][-2000:]
    return outputs


def torchrun_variables(rank: int) -> dict[str, str]:
    """What torchrun gives rank ``rank`` of 2 on this host (PyTorch docs, "torchrun (Elastic Launch)")."""
    return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
