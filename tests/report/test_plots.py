"""Plot helpers whose input needs checking beyond "a figure came out"."""

from __future__ import annotations

import functools
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


LONG_MODEL = "examples/layout_long_name.py:build_a_very_long_surrogate_model_name_for_layout_tests"


def _serve_record(service_ms: float):
    """A serve record of one policy at two rates over a planted service (P99 near ``service_ms``)."""
    from dataclasses import replace

    from surrobench.api.serve import serve_policy, serve_request
    from surrobench.records.serve import serve_from_json
    from synthetic import PlantedService

    request = serve_request(rates="10,20", max_batch="1,4", max_wait_ms=0, duration_s=1.0, p99_ms=50.0)
    policies = []
    for policy in request.policies:
        service = PlantedService(service_ms)
        policies.append(serve_policy(request, policy, service, 0, service.new_clock))
    doc = {
        "schema": "surrobench/serve-v1", "run_id": "r", "created": "2026-12-01T10:00:00+00:00", "tag": None,
        "env": {"device_name": "cpu-x"}, "url": None, "arrival": "poisson", "duration_s": 1.0, "warmup_s": 0.25,
        "seed": 0, "target_p99_ms": 50.0, "policies": [], "notes": [],
        "workload": {"model": LONG_MODEL, "shape_label": "16", "precision": "fp32", "mode": "eager", "device": "cpu"},
    }  # fmt: skip
    return replace(serve_from_json(doc), policies=tuple(policies))


def test_the_serve_curve_labels_its_latency_ticks_as_plain_numbers_under_a_decade():
    """15-30 ms spans less than a decade: matplotlib labels the minor ticks, in mathtext by default."""
    from surrobench.report.plots import latency_throughput

    labels = _drawn_tick_labels(latency_throughput(_serve_record(18.0)))
    assert labels and not [t for t in labels if "$" in t or "mathdefault" in t]


def _laid_out(fig):
    """``fig`` drawn by Agg (constrained layout runs at draw time) with its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    with plots.plain_text():
        canvas.draw()
    return canvas.get_renderer()


def _drawn_labels(axis, renderer):
    """The extents of ``axis``'s tick labels drawn (its ticks inside the view limits), major and minor."""
    lo, hi = sorted(axis.get_view_interval())
    pairs = [*zip(axis.get_majorticklocs(), axis.get_majorticklabels()),
             *zip(axis.get_minorticklocs(), axis.get_minorticklabels())]  # fmt: skip
    return [t.get_window_extent(renderer) for loc, t in pairs if lo <= loc <= hi and t.get_text().strip()]


@functools.lru_cache(maxsize=1)
def _long_name_figures():
    from surrobench.report.plots import latency_throughput
    from surrobench.results.compare import compare_runs
    from synthetic import run

    rs = [
        config(latency_samples(0.3 * b * s, 0.01, seed=b * s), model=m, batch=b, size=s)
        for m in (LONG_MODEL, "fno2d")
        for b in (1, 2)
        for s in (16, 32)
    ]
    new = [config(latency_samples(0.27 * r.batch * r.input_shape[-1], 0.01, seed=7), model=r.model, batch=r.batch,
                  size=r.input_shape[-1]) for r in rs]  # fmt: skip
    cmp = compare_runs(run("a", rs), run("b", new))
    candidates = [
        {"name": n, "verdict": "accepted", "rel_l2": e, "speedup": {"median": s, "ci95": [s - 0.02, s + 0.02]}}
        for n, e, s in (("channels_last", 1e-7, 1.23), ("threads=2", 1.1e-7, 1.2), ("bf16", 5e-3, 0.5))
    ]
    doc = {"tolerance": 1e-2, "configs": [{"model": LONG_MODEL, "input_shape": [1, 3, 16, 16], "device": "cpu",
                                           "candidates": candidates}]}  # fmt: skip
    ops = {r.label(): {"aten::convolution": 1.0, "aten::gelu": 0.5} for r in rs[:4]}
    return {
        "latency_vs_shape": plots.latency_vs_shape(rs),
        "throughput_vs_batch": plots.throughput_vs_batch(rs),
        "latency_distributions": plots.latency_distributions(rs),
        "ratio_forest": plots.ratio_forest(cmp),
        "speedup_vs_error": plots.speedup_vs_error(doc),
        "op_breakdown": plots.op_breakdown(ops),
        "serve": latency_throughput(_serve_record(3.0)),
    }


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


@pytest.mark.parametrize("name", list(_long_name_figures()))
def test_with_a_long_model_name_every_text_stays_inside_its_figure_and_labels_do_not_overlap(name):
    fig = _long_name_figures()[name]
    renderer = _laid_out(fig)
    drawn = fig.get_tightbbox(renderer)  # inches: every drawn artist, its texts included
    width, height = fig.get_size_inches()
    assert drawn.x0 >= -0.01 and drawn.y0 >= -0.01 and drawn.x1 <= width + 0.01 and drawn.y1 <= height + 0.01
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            ticks = _drawn_labels(axis, renderer)
            assert not [(a, b) for i, a in enumerate(ticks) for b in ticks[i + 1 :] if _overlap(a, b)]
        notes = [t.get_window_extent(renderer) for t in ax.texts]
        assert not [(a, b) for i, a in enumerate(notes) for b in notes[i + 1 :] if _overlap(a, b)]
        if ax.axison:  # the plot keeps a readable share of its figure beside long labels
            assert ax.get_position().width >= 0.3 / len(fig.axes) ** 0.5, name
