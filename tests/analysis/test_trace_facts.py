"""Per-step trace facts: the model's own syncs and the GPU idle time they cause."""

from __future__ import annotations

import pytest
from kineto_synth import annotation, cpu_op, launch, runtime, write

from surrobench.analysis.gaps import MAX_LISTED_GAPS
from surrobench.analysis.timeline import analyze_timeline
from surrobench.analysis.trace_facts import trace_facts
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
        events += [cpu_op("aten::item", t + 12, 30, ext=1000 + i),
                   runtime("cudaStreamSynchronize", t + 14, 17, corr=2 * i + 2, ext=1000 + i)]  # ends at t+31
        gap = 30 + i
        t = t + 30 + gap - 10  # the next kernel starts at t+30+gap
        expected_us += gap
    events += launch(t, 5, 999, t + 10, 20)
    facts, report = _facts(tmp_path, events)
    assert n > MAX_LISTED_GAPS and len(report.gaps.longest) == MAX_LISTED_GAPS
    assert facts.model_syncs == n and facts.sync_op == "aten::item"
    assert facts.model_sync_gap_ms == pytest.approx(expected_us / 1e3)
