"""A forward that leaks memory on every call, or changes its input, is flagged in the result (structured, in
``extra``) and in the sweep's warnings; a well-behaved forward is not."""

from __future__ import annotations

from dataclasses import replace

import torch
from conftest import TinySurrogate, exec_config
from torch import nn

from surrobench.execution.runner import merge_rounds, prepare_model, run_config
from surrobench.execution.sanity import LEAK_KEY, LEAK_MIN_BYTES_PER_CALL, MUTATED_KEY, input_digest, mutated_inputs
from surrobench.execution.env import forward_warnings

#: Over glibc malloc's largest dynamic mmap threshold (32 MiB on 64-bit, mallopt(3)): each kept block is a
#: fresh mapping, so resident memory grows by it even after earlier tests freed large blocks into the heap.
LEAK_BYTES = 40 * 2**20


class Leaks(nn.Module):
    """Keeps a :data:`LEAK_BYTES` tensor (written, so its pages are resident) from every call."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.kept = nn.Conv2d(2, 1, 1), []

    def forward(self, x):
        self.kept.append(torch.ones(LEAK_BYTES // 4))
        return self.conv(x)


class Mutates(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 1)

    def forward(self, x):
        x.mul_(0.5)
        return self.conv(x)


def _run(module_factory, iters=6):
    return run_config(exec_config(iters=iters), prepare_model(TinySurrogate(module_factory), "cpu", 0))


def test_a_forward_that_leaks_is_flagged_with_its_growth_per_call():
    result = _run(Leaks)
    growth = result.extra[LEAK_KEY]
    assert result.status == "ok" and growth["calls"] == 6
    assert LEAK_MIN_BYTES_PER_CALL <= growth["bytes_per_call"] <= 2 * LEAK_BYTES
    assert growth["growth_bytes"] >= 3 * LEAK_BYTES
    (line,) = forward_warnings([result])
    assert result.label() in line


def test_a_forward_that_changes_its_input_is_flagged():
    result = _run(Mutates)
    assert result.status == "ok" and result.extra[MUTATED_KEY] == [0]
    (line,) = forward_warnings([result])
    assert result.label() in line and "in place" in line


def test_a_well_behaved_forward_is_not_flagged():
    result = _run(None)
    assert LEAK_KEY not in result.extra and MUTATED_KEY not in result.extra
    assert forward_warnings([result]) == []


def test_the_digest_sees_a_change_of_one_element_in_a_channels_last_tensor():
    x = torch.randn(1, 3, 4, 4).to(memory_format=torch.channels_last)
    before = input_digest((x, 3))
    x[0, 2, 3, 1] += 1
    assert mutated_inputs(before, input_digest((x, 3))) == [0]
    assert mutated_inputs(before, before) == []


class GoesBadLater(nn.Module):
    """Well-behaved for its first ``after`` calls, then leaks 16 MiB per call and halves its input in place."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.conv, self.kept, self.calls, self.after = nn.Conv2d(2, 1, 1), [], 0, after

    def forward(self, x):
        self.calls += 1
        if self.calls > self.after:
            self.kept.append(torch.ones(LEAK_BYTES // 4))
            x.mul_(0.5)
        return self.conv(x)


def test_a_leak_or_a_mutation_seen_in_a_later_round_only_survives_the_merge():
    # a round is 1 cold + 1 warm-up + 6 timed calls: round 1 is clean, round 2 goes bad from its warm-up on
    prepared = prepare_model(TinySurrogate(lambda: GoesBadLater(after=9)), "cpu", 0)
    rounds = [run_config(exec_config(iters=6), prepared) for _ in range(2)]
    assert LEAK_KEY not in rounds[0].extra and MUTATED_KEY not in rounds[0].extra
    assert LEAK_KEY in rounds[1].extra and rounds[1].extra[MUTATED_KEY] == [0]
    merged = merge_rounds(rounds)
    assert merged.extra[MUTATED_KEY] == [0] and merged.extra["rounds"] == 2
    assert merged.extra[LEAK_KEY] == {**rounds[1].extra[LEAK_KEY], "rounds": 1}
    assert len(forward_warnings([merged])) == 2
    # a later round that fails keeps what the earlier rounds saw
    failed = merge_rounds([rounds[1], replace(rounds[0], status="error", error="boom")])
    assert failed.status == "error" and failed.extra[MUTATED_KEY] == [0] and failed.extra[LEAK_KEY]["rounds"] == 1


class WorkingSet(nn.Module):
    """Planted resident memory (``held``, MiB): the first call after the other variant's takes its working set back
    (``size`` MiB over what the other holds), a leaking one keeps ``leak`` MiB more on every call."""

    def __init__(self, held: dict, size: int, leak: int = 0) -> None:
        super().__init__()
        self.conv, self.held, self.size, self.leak = nn.Conv2d(2, 1, 1), held, size, leak

    def forward(self, x):
        if self.held["last"] is not self:
            self.held["mib"] += self.size - self.held["size"]
            self.held["last"], self.held["size"] = self, self.size
        self.held["mib"] += self.leak
        return self.conv(x)


def test_optimize_reads_growth_from_a_variants_own_timed_calls(monkeypatch):
    # a fresh-user trial's wavelet operator: optimize warned "memory grew (+1.4 MiB per call)" where a plain run read
    # none: each round was read from the end of the other variant's, so taking its working set back read as growth
    from surrobench.execution import sanity
    from surrobench.execution.interleave import interleave, open_variant

    held = {"mib": 100, "size": 0, "last": None}
    monkeypatch.setattr(sanity, "memory_in_use", lambda device: held["mib"] * 2**20)

    def variant(size: int, leak: int):
        prepared = prepare_model(TinySurrogate(lambda: WorkingSet(held, size, leak)), "cpu", 0)
        return open_variant(exec_config(), prepared, own_module=False)

    def grown(leak: int) -> list:
        heavy, light = variant(64, leak), variant(0, 0)
        interleave([heavy, light], 3, 1, 4, lambda: False)
        return [merge_rounds(v.rounds).extra.get(LEAK_KEY) for v in (heavy, light)]

    assert grown(0) == [None, None]
    heavy, light = grown(4)
    assert light is None and heavy["bytes_per_call"] == 4 * 2**20 and heavy["rounds"] == 3
