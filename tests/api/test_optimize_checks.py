"""``optimize`` checks the forward as ``run`` does (:mod:`surrobench.execution.sanity`): an output with NaN/Inf on
any input set is never recommended for, and memory that grows on every call is warned about."""

from __future__ import annotations

import pytest

from surrobench.api.benchmark import sweep_plan
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


class Temporary(torch.nn.Module):
    """A 16 MiB temporary per call, freed on return: heap-served (under the pinned mmap threshold), so each round's
    start, which returns the free heap to the system, has the next call take it back."""

    def forward(self, x):
        return x + torch.ones(4 * 2**20).sum()


def temporaries():
    return Temporary()
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


def test_a_temporary_freed_each_call_is_no_leak(model_file, tmp_path):
    # a fresh-user trial: optimize warned "memory grew on most timed calls (+2.1 MiB per call)" for the zoo FNO,
    # whose rounds each began after the free heap was returned, and whose warm-up took it back
    # 4 rounds (optimize runs 6 by default): the verdict is the median timed call of the rounds, as run reads its loop
    # (docs/benchmarks/cpu-allocator.md)
    (entry,) = _optimize(f"{model_file}:temporaries", tmp_path, rounds=4).configs
    assert entry.baseline.status == "ok" and LEAK_KEY not in entry.baseline.extra
