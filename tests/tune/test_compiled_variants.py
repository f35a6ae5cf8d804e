"""torch._dynamo's recompile limit, raised for the search: every compiled candidate is compiled, none runs
uncompiled because earlier candidates used up the entries of a shared code object."""

from __future__ import annotations

import torch
import torch._dynamo
from torch._dynamo.utils import counters

from surrobench.tune.bench import room_for_compiled_variants


def _compiled_shapes(shapes: int) -> int:
    """Graphs Dynamo compiled for one function called at ``shapes`` shapes (each a recompilation)."""
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(lambda x: x * 2 + 1, backend="eager", dynamic=False)
    for n in range(1, shapes + 1):
        fn(torch.ones(n))
    return counters["stats"]["unique_graphs"]


def test_past_dynamos_limit_every_variant_is_still_compiled():
    limit = torch._dynamo.config.recompile_limit
    assert _compiled_shapes(limit + 3) == limit  # torch's own limit: the last three ran uncompiled
    with room_for_compiled_variants():
        assert _compiled_shapes(limit + 3) == limit + 3
    assert torch._dynamo.config.recompile_limit == limit  # restored after the search


def test_optimize_reads_the_free_cores_over_the_search_not_one_short_round(monkeypatch):
    """A code review: a 0.3 ms convolution's rounds last ~10 ms, too short to read (host_facts.MIN_WINDOW_S), so
    reading the free cores over the last round never saw 1.5 planted busy CPUs of 2: the reading spans the search."""
    import importlib
    import time

    import torch
    from torch import nn

    from surrobench.api.benchmark import sweep_plan
    from surrobench.execution.runner import prepare_model
    from surrobench.tune.bench import DeviceBench
    from surrobench.tune.request import OptimizeRequest

    torch.set_num_threads(1)
    real = importlib.import_module("surrobench.execution.host_facts").cpu_times
    clock = iter(range(0, 10_000))  # each reading 1 s after the last, 1.5 CPUs of others' busy time a second

    def planted():
        wall, _, own = real()
        now = float(next(clock))
        return now, 1.5 * now + own, own

    monkeypatch.setattr("surrobench.tune.bench.cpu_times", planted)
    monkeypatch.setattr("surrobench.tune.bench.usable_cpus", lambda: 2)
    plan = sweep_plan(nn.Conv2d(3, 4, 3, padding=1), shapes=[16], device="cpu", threads=1)
    cfg = plan.configs[0]
    prepared = prepare_model(plan.surrogates[cfg.model], "cpu", 0)
    bench = DeviceBench.start(cfg, prepared, OptimizeRequest((plan,)), time.monotonic() + 60)
    assert bench.free_cores() == 1  # 2 usable CPUs less 1.5 busy: 0.5 rounds to 1 (free_cores_of's floor)


def test_a_held_compiled_variant_keeps_its_graph_when_another_is_built(monkeypatch):
    """trial35: every compiled build reset Dynamo, so optimize's compile handle recompiled in its first round after
    compile+channels_last was built, and its compile workspace (35 MiB) became the stored recipe's peak memory."""
    from dataclasses import replace

    from torch import nn

    from surrobench.api.benchmark import sweep_plan
    from surrobench.execution.interleave import open_variant, time_round
    from surrobench.execution.runner import prepare_model

    torch.set_num_threads(1)
    real = torch.compile
    monkeypatch.setattr(torch, "compile", lambda module, **kw: real(module, backend="eager", dynamic=False))
    plan = sweep_plan(nn.Conv2d(3, 4, 3, padding=1), shapes=[8], device="cpu", threads=1)
    cfg = replace(plan.configs[0], mode="compile", input_sets=1)
    prepared = prepare_model(plan.surrogates[cfg.model], "cpu", 0)
    counters.clear()
    with room_for_compiled_variants():
        held = open_variant(cfg, prepared)
        open_variant(replace(cfg, channels_last=True), prepared)  # another stride: another graph
        built = counters["stats"]["unique_graphs"]
        time_round(held, 1, 2)
    assert counters["stats"]["unique_graphs"] == built  # the held variant ran its own graph, none compiled again
