"""Plot helpers whose input needs checking beyond "a figure came out"."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import config, latency_samples

from surrobench.report import plots

FIXTURE = Path(__file__).parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


def test_single_point_series_give_no_scaling_plots():
    one = [config(latency_samples(1.0, 0.01))]
    assert plots.latency_vs_shape(one) is None and plots.throughput_vs_batch(one) is None
    assert plots.latency_distributions(one) is not None
    assert plots.latency_distributions([config((), status="oom")]) is None


def test_spans_of_one_profiled_step_from_a_real_h200_trace():
    trace = pytest.importorskip("surrobench.trace")
    if not FIXTURE.is_file():
        pytest.skip("trace fixture missing")
    tl = trace.load_trace(FIXTURE)
    spans = plots.spans_from_timeline(tl)
    window_ns = int(tl.steps.start_ns[1] - tl.steps.start_ns[0])
    kernels = [s for s in spans if s.kind == "kernel"]
    assert kernels and all(s.lane.startswith("stream ") for s in kernels)
    assert any(s.kind == "api" and s.lane == "host: CUDA API" for s in spans)
    assert all(0 <= s.start_ns < window_ns and s.dur_ns >= 0 for s in spans)
    # One step of three: fewer kernels than in the whole trace.
    assert len(kernels) < len(tl.kernels)
    assert plots.timeline_strip(spans) is not None
