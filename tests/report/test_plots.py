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


def _drawn_tick_labels(fig) -> list[str]:
    """Every non-empty tick label of ``fig``'s log axes after an Agg draw (labels are made when drawn)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    with plots.plain_text():
        FigureCanvasAgg(fig).draw()
    return [
        t.get_text()
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        if axis.get_scale() == "log"
        for t in axis.get_majorticklabels() + axis.get_minorticklabels()
        if t.get_text()
    ]


def test_log_axes_label_their_ticks_as_plain_numbers():
    """Matplotlib's default log formatter writes mathtext ('$\\mathdefault{10^{2}}$'), printed raw with mathtext off."""
    rs = [config(latency_samples(0.3 * b * s, 0.01), batch=b, size=s) for b in (1, 2, 4) for s in (16, 64)]
    candidate = {"name": "fp16", "verdict": "accepted", "rel_l2": 3e-4, "speedup": {"median": 1.8, "ci95": [1.7, 1.9]}}
    exact = {
        "name": "cudnn",
        "verdict": "rejected_slower",
        "rel_l2": 0.0,
        "speedup": {"median": 0.98, "ci95": [0.9, 1]},
    }
    doc = {"tolerance": 1e-2, "configs": [{"model": "fno2d", "input_shape": [1, 3, 64, 64], "device": "cpu",
                                           "candidates": [candidate, exact]}]}  # fmt: skip
    figs = [plots.latency_vs_shape(rs), plots.throughput_vs_batch(rs), plots.latency_distributions(rs)]
    for fig in [*figs, plots.speedup_vs_error(doc)]:
        labels = _drawn_tick_labels(fig)
        numeric = [t for t in labels if "\n" not in t]  # latency_vs_shape's x ticks: "256\n3x16x16"
        assert labels and not [t for t in labels if "$" in t or "mathdefault" in t]
        assert all(float(t.replace("\N{MINUS SIGN}", "-")) > 0 for t in numeric)
