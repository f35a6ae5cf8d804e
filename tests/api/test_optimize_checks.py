"""``optimize`` checks the forward as ``run`` does (:mod:`surrobench.execution.sanity`): an output with NaN/Inf on
any input set is never recommended for, and memory that grows on every call is warned about."""

from __future__ import annotations

import pytest
import torch

from surrobench.api.benchmark import sweep_plan
from surrobench.execution import memory, sanity
from surrobench.records.run import LEAK_KEY, NONFINITE_KEY
from surrobench.results.store import ResultStore
from surrobench.tune.plans import optimize_plans
from surrobench.tune.request import OptimizeRequest

MODEL = '''
import time
import torch


class Checked(torch.nn.Module):
    """Sleeps 8 ms per call unless torch runs one thread (threads=1 wins by construction); ``nan`` says when its
    output is NaN on every input but the first it saw; ``leak_bytes`` are kept from every call (then it does not
    sleep: no candidate wins, the search ends early)."""

    def __init__(self, nan, leak_bytes=0):
        super().__init__()
        self.conv, self.nan, self.leak_bytes, self.first, self.kept = torch.nn.Conv2d(3, 3, 1), nan, leak_bytes, None, []

    def forward(self, x):
        if not self.leak_bytes:
            time.sleep(0.008 if torch.get_num_threads() > 1 else 0.0002)
        if self.leak_bytes:
            self.kept.append(torch.ones(self.leak_bytes // 4))
        if self.first is None:
            self.first = x.clone()
        y = self.conv(x)
        return y * float("nan") if self.nan() and not torch.equal(x, self.first) else y


def nan_always():
    return Checked(lambda: True)


def nan_on_one_thread():
    return Checked(lambda: torch.get_num_threads() == 1)


def leaks():
    return Checked(lambda: False, leak_bytes=4 * 2**20)

'''


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "checked.py"
    path.write_text(MODEL)
    return path


def _optimize(spec, tmp_path, rounds=2):
    plan = sweep_plan(spec, shapes=[8], device="cpu", warmup=1, iters=4, input_sets=3, threads=2)
    with ResultStore(tmp_path / "o.db") as store:
        return optimize_plans(OptimizeRequest((plan,), rounds=rounds, only=("threads=1",)), store)


def test_a_baseline_nan_on_two_of_three_input_sets_gets_no_recipe(model_file, tmp_path):
    (entry,) = _optimize(f"{model_file}:nan_always", tmp_path).configs
    assert entry.recommended == () and entry.recipe_result is None and entry.candidates == ()
    assert entry.baseline.status == "nonfinite" and entry.baseline.extra[NONFINITE_KEY]["input_set"] == 1


def test_a_candidate_nan_on_a_later_input_set_is_rejected(model_file, tmp_path):
    (entry,) = _optimize(f"{model_file}:nan_on_one_thread", tmp_path).configs
    (candidate,) = entry.candidates
    assert candidate.name == "threads=1" and candidate.verdict == "rejected_accuracy"
    assert "not finite" in candidate.reason and "input set 1" in candidate.reason
    assert entry.recommended == () and entry.baseline.status == "ok"


def test_a_forward_that_leaks_is_warned_about(model_file, tmp_path):
    report = _optimize(f"{model_file}:leaks", tmp_path)
    (entry,) = report.configs
    assert entry.baseline.extra[LEAK_KEY]["bytes_per_call"] >= 2**20
    assert any("memory grew" in w and entry.baseline.label() in w for w in report.warnings)


class PlantedHeap:
    """The resident set (``resident_bytes``) of a process whose forward takes a 16 MiB temporary per call and frees it
    on return, served as glibc serves it (docs/benchmarks/cpu-allocator.md, "Memory growth across optimize's rounds"):
    the heap's free blocks go back to the system at each round's start (``malloc_trim``:
    :func:`~surrobench.execution.memory.release_free_heap`), and the :attr:`FRESH_AFTER_RETURN` calls after that take
    fresh blocks (the warm-up's and the first timed call's: glibc took fresh blocks for the calls after a trim), later
    ones a free block. Planted: the real heap's reuse follows what ran before in the process (one round of three grew
    in a full suite), and the resident set moves with the host."""

    BLOCK_BYTES = 16 * 2**20
    FRESH_AFTER_RETURN = 2

    def __init__(self) -> None:
        self.resident_bytes, self.free_bytes, self.fresh_calls, self.returns = 512 * 2**20, 0, 0, 0

    def call(self) -> None:
        if self.fresh_calls < self.FRESH_AFTER_RETURN or not self.free_bytes:
            self.resident_bytes += self.BLOCK_BYTES
            self.free_bytes += self.BLOCK_BYTES  # freed on return, still resident
            self.fresh_calls += 1

    def release(self) -> None:
        self.resident_bytes -= self.free_bytes
        self.free_bytes, self.fresh_calls, self.returns = 0, 0, self.returns + 1


class Temporary(torch.nn.Module):
    """Its calls' temporaries on :attr:`heap` (a class attribute: every variant's copy of the module shares it)."""

    heap: PlantedHeap

    def forward(self, x):
        self.heap.call()
        return x * 2.0


def test_a_temporary_freed_each_call_is_no_leak(tmp_path, monkeypatch):
    # a fresh-user trial: optimize warned "memory grew on most timed calls (+2.1 MiB per call)" for the zoo FNO,
    # whose rounds each began after the free heap was returned, and whose warm-up took it back
    # 4 rounds (optimize runs 6 by default): the verdict is the median timed call of the rounds, as run reads its loop
    heap = PlantedHeap()
    monkeypatch.setattr(Temporary, "heap", heap, raising=False)
    monkeypatch.setattr(memory, "release_free_heap", heap.release)
    monkeypatch.setattr(sanity, "memory_in_use", lambda device: heap.resident_bytes)
    report = _optimize(Temporary(), tmp_path, rounds=4)
    (entry,) = report.configs
    assert heap.returns >= 4 and heap.resident_bytes > 512 * 2**20  # the rounds returned the heap and took it back
    assert entry.baseline.status == "ok" and LEAK_KEY not in entry.baseline.extra
    assert not any("memory grew" in w for w in report.warnings)
