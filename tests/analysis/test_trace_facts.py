"""Per-step trace facts: the model's own syncs and the GPU idle time they cause."""

from __future__ import annotations

import pytest
from kineto_synth import annotation, cpu_op, launch, runtime, write

from surrobench.analysis.gaps import MAX_LISTED_GAPS
from surrobench.analysis.timeline import analyze_timeline
from surrobench.analysis.timeline import trace_facts
from surrobench.trace import load_trace


def _facts(tmp_path, events):
    tl = load_trace(write(tmp_path / "t.json", events))
    report = analyze_timeline(tl)
    return trace_facts(tl, report), report


def test_every_model_sync_gap_counts_not_only_the_listed_longest(tmp_path):
    n = 80  # more than MAX_LISTED_GAPS host_sync gaps, each 30 + i us long
    events, t = [annotation("ProfilerStep#1", 0, 100_000), annotation("surrobench::forward", 0, 90_000)], 0
    expected_us = 0.0
    for i in range(n):
        events += launch(t, 5, 2 * i + 1, t + 10, 20)  # kernel [t+10, t+30)
        events += [
            cpu_op("aten::item", t + 12, 30, ext=1000 + i),
            runtime("cudaStreamSynchronize", t + 14, 17, corr=2 * i + 2, ext=1000 + i),
        ]  # ends at t+31
        gap = 30 + i
        t = t + 30 + gap - 10  # the next kernel starts at t+30+gap
        expected_us += gap
    events += launch(t, 5, 999, t + 10, 20)
    facts, report = _facts(tmp_path, events)
    assert n > MAX_LISTED_GAPS and len(report.gaps.longest) == MAX_LISTED_GAPS
    assert facts.model_syncs == n and facts.sync_op == "aten::item"
    assert facts.model_sync_gap_ms == pytest.approx(expected_us / 1e3)


def test_a_sync_is_the_models_only_inside_a_forward_range_of_its_own_rank(tmp_path):
    # rank 1's forward range ends at 300 and rank 0's starts later (5) and runs to 1000: rank 1's harness
    # sync at 500 is outside its own forward range, rank 0's sync at 600 inside.
    syncs = {0: 600, 1: 500}
    for rank, fwd in ((0, (5, 995)), (1, (0, 300))):
        events = [
            annotation("ProfilerStep#1", 0, 1000),
            annotation("surrobench::forward", *fwd),
            *launch(1, 2, 1, 10, 20),
            runtime("cudaDeviceSynchronize", syncs[rank], 50, corr=2),
            *launch(700, 2, 3, 710, 20),
        ]
        write(tmp_path / f"rank{rank}.json", events, distributedInfo={"rank": rank})
    tl = load_trace(tmp_path)
    facts = trace_facts(tl, analyze_timeline(tl))
    assert tl.meta.ranks == (0, 1) and facts.steps == 2
    assert facts.model_syncs * facts.steps == 1  # rank 0's sync only


def test_a_sync_on_another_thread_than_the_forward_range_is_not_the_models(tmp_path):
    events = [
        annotation("ProfilerStep#1", 0, 1000),
        annotation("surrobench::forward", 0, 900, tid=1),
        annotation("surrobench::forward", 100, 50, tid=3),  # a short range started later elsewhere
        *launch(1, 2, 1, 10, 20),
        runtime("cudaStreamSynchronize", 400, 50, corr=2, tid=2),  # another thread: harness-like
        runtime("cudaStreamSynchronize", 500, 50, corr=3, tid=1),  # the model's
        *launch(700, 2, 4, 710, 20),
    ]
    facts, _ = _facts(tmp_path, events)
    assert facts.model_syncs == 1
