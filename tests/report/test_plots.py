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


def test_throughput_plot_has_one_series_per_per_sample_shape_and_latency_ticks_name_no_batch():
    """The batch is part of the executed shape: keyed on it, each batch was its own one-point series."""
    rs = [config(latency_samples(1.0 * b, 0.01), batch=b, size=s) for b in (1, 2, 4) for s in (16, 32)]
    fig = plots.throughput_vs_batch(rs)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert sorted(labels) == ["3x16x16 fp32 eager", "3x32x32 fp32 eager"]
    assert all(len(line.get_xdata()) == 3 for line in fig.axes[0].get_lines())
    ticks = [t.get_text() for t in plots.latency_vs_shape(rs).axes[0].get_xticklabels()]
    assert ticks == ["256\n3x16x16", "1024\n3x32x32"]


def test_names_with_mathtext_render_as_text_and_cpu_op_charts_say_cpu():
    from surrobench.report.html import figure_to_data_uri

    bad = "$\\undefinedmacro{$"
    rs = [config(latency_samples(1.0, 0.01), model=bad, batch=b, size=s) for b in (1, 2) for s in (16, 32)]
    for fig in (plots.latency_vs_shape(rs), plots.throughput_vs_batch(rs), plots.latency_distributions(rs)):
        assert figure_to_data_uri(fig).startswith("data:image/png")  # a mathtext parse would raise here
    fig = plots.op_breakdown({bad: {bad: 1.0}, "gpu": {"k": 2.0}}, cpu_labels=frozenset({bad}))
    assert figure_to_data_uri(fig)
    assert fig.axes[0].get_xlabel().startswith("self CPU ms") and fig.axes[1].get_xlabel().startswith("self device ms")


def test_long_titles_wrap_instead_of_clipping():
    fig = plots.op_breakdown({"abcd " + "x" * 150: {"op": 1.0}})
    assert all(len(line) <= 48 for line in fig.axes[0].get_title().splitlines())
