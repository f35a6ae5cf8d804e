"""Every tensor of a model's output is checked for NaN/Inf on every input set, on its first call and again after
timing (:mod:`surrobench.execution.sanity`): a config that fails is ``nonfinite``, its timings kept, the tensor
and the call named in ``extra``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from conftest import TinySurrogate, exec_config
from torch import nn

from surrobench.execution.runner import prepare_model, run_config
from surrobench.execution.sanity import check_calls, output_tensors
from surrobench.records.run import NONFINITE_KEY
from surrobench.execution.env import sweep_warnings


class NaNAfterFirstSet(nn.Module):
    """Finite on the input it saw first (set 0, the cold call's), NaN on every other input set (2 of 3)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.first = nn.Conv2d(2, 1, 1), None

    def forward(self, x):
        if self.first is None:
            self.first = x.clone()
        y = self.conv(x)
        return y if torch.equal(x, self.first) else y * float("nan")


class SecondOutputNaN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 1)

    def forward(self, x):
        y = self.conv(x)
        return y, y * float("nan")


class NaNLate(nn.Module):
    """Finite for its first ``calls`` calls, then Inf: a state that breaks only after timing began."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.conv, self.calls, self.seen = nn.Conv2d(2, 1, 1), calls, 0

    def forward(self, x):
        self.seen += 1
        y = self.conv(x)
        return y if self.seen <= self.calls else y + float("inf")


def _run(factory, **fields):
    cfg = exec_config(**{"input_sets": 3, "warmup": 1, "iters": 4, **fields})
    return run_config(cfg, prepare_model(TinySurrogate(factory), "cpu", 0))


def test_nan_on_two_of_three_input_sets_is_nonfinite_with_the_set_and_call_named():
    r = _run(NaNAfterFirstSet)
    assert r.status == "nonfinite" and r.latency_ms is not None  # timings kept
    assert r.extra[NONFINITE_KEY]["input_set"] == 1 and r.extra[NONFINITE_KEY]["call"] == 1
    assert r.extra[NONFINITE_KEY]["phase"] == "first" and r.extra[NONFINITE_KEY]["tensor"] == "output"
    assert any(r.label() in w and "nonfinite" in w for w in sweep_warnings([r], {}))


def test_a_nan_in_the_second_output_tensor_is_nonfinite():
    r = _run(SecondOutputNaN)
    assert r.status == "nonfinite" and r.extra[NONFINITE_KEY]["tensor"] == "output[1]"
    assert r.extra[NONFINITE_KEY]["nonfinite_values"] == r.extra[NONFINITE_KEY]["numel"] == 64


def test_an_output_that_breaks_during_timing_is_caught_at_the_end():
    # 3 first calls (one per set) + 1 warm-up + 4 timed: finite through them all, Inf on the end check
    r = _run(lambda: NaNLate(8))
    found = r.extra[NONFINITE_KEY]
    assert r.status == "nonfinite" and found["phase"] == "end" and found["call"] == 8 and found["input_set"] == 0


def test_a_finite_model_is_ok():
    assert _run(None).status == "ok"


@dataclass
class Fields:
    u: torch.Tensor
    p: tuple


def test_every_tensor_of_an_output_is_walked_with_its_path():
    t = torch.zeros(1)
    out = {"a": (t, [t]), "b": Fields(t, (None, t)), "c": "text"}
    paths = [p for p, _ in output_tensors(out)]
    assert paths == ["output['a'][0]", "output['a'][1][0]", "output['b'].u", "output['b'].p[1]"]
    bad = {"a": t, "b": Fields(t, (torch.tensor([1.0, float("inf")]),))}
    found = check_calls(lambda i: bad, [2], 5, "end")
    assert found == {
        "tensor": "output['b'].p[0]",
        "nonfinite_values": 1,
        "numel": 2,
        "input_set": 2,
        "call": 5,
        "phase": "end",
    }
    ints = torch.tensor([1, 2])  # an integer tensor holds no NaN: never flagged
    assert check_calls(lambda i: (ints,), [0], 0, "first") is None
