"""The op events read from torch.profiler's raw Kineto events match torch's own ``FunctionEvent`` list
(``prof.events()``) and table (``key_averages()``): same ops, parents, counts, times and memory."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

from surrobench.collect.kineto_ops import ops_from_kineto
from surrobench.collect.child import module_ranges
from surrobench.workload.spec import ShapeSpec
from surrobench.workload.zoo import get_surrogate


class _Spectral(nn.Module):
    """A linear layer, an FFT, an einsum (copies and views inside it) and a nested range of one name (torch
    removes the inner one of a same-name pair with no sibling)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(8, 8, 4, dtype=torch.cfloat))

    def forward(self, x):
        with record_function("block"), record_function("block"):
            y = self.lin(x.transpose(1, 3)).transpose(1, 3)
        z = torch.fft.rfft2(y)
        z = torch.einsum("bixy,ioy->boxy", z, self.w)
        return torch.relu(torch.fft.irfft2(z, s=x.shape[-2:])) + torch.zeros_like(x)


def _capture(model, x):
    with (
        module_ranges(model),
        torch.inference_mode(),
        profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=0, warmup=1, active=1, repeat=1),
            record_shapes=True,
            profile_memory=True,
        ) as prof,
    ):
        for _ in range(2):
            model(*x)
            prof.step()
    return prof


def _rows(events, self_cpu, self_mem, parent):
    """A multiset of each op's identity and figures, rounded to the ns torch's floats carry."""
    return Counter(
        (
            e.name,
            parent(e),
            round(self_cpu(e), 3),
            e.cpu_memory_usage,
            self_mem(e),
            str(e.input_shapes),
        )
        for e in events
        if e.name != "[memory]"
    )


def _models():
    torch.manual_seed(0)
    fno = get_surrogate("fno2d")
    x = fno.example_inputs(1, ShapeSpec(size=8), generator=torch.Generator().manual_seed(0), device=torch.device("cpu"))
    return [(_Spectral(), (torch.randn(2, 8, 6, 6),)), (fno.build().eval(), x)]


@pytest.mark.parametrize("index", [0, 1], ids=["spectral", "zoo_fno2d"])
def test_raw_events_give_torchs_events_and_table(index):
    torch.set_num_threads(1)
    model, x = _models()[index]
    prof = _capture(model, x)
    ours = ops_from_kineto(prof.profiler.kineto_results, use_device=False)
    theirs = prof.events()

    def parent(e):
        return e.cpu_parent.name if e.cpu_parent is not None else None

    mine = _rows(ours, lambda e: e.self_cpu_time_total, lambda e: e.self_cpu_memory_usage, parent)
    torchs = _rows(theirs, lambda e: e.self_cpu_time_total, lambda e: e.self_cpu_memory_usage, parent)
    assert mine == torchs and sum(mine.values()) > 50
    if index == 0:  # the inner "block" removed, as torch does, and the step range renamed as torch does
        assert sum(e.name == "block" for e in ours) == 1 and sum(e.name == "ProfilerStep*" for e in ours) == 1
    table = {a.key: a for a in prof.key_averages()}
    for name in {e.name for e in ours}:
        same = [e for e in ours if e.name == name]
        assert len(same) == table[name].count
        assert sum(e.self_cpu_time_total for e in same) == pytest.approx(table[name].self_cpu_time_total, abs=1e-3)
        assert sum(e.duration_us for e in same) == pytest.approx(table[name].cpu_time_total, abs=1e-3)
        assert sum(e.self_cpu_memory_usage for e in same) == table[name].self_cpu_memory_usage
