"""The compact counters table of ``profile --counters`` / ``diagnose --counters`` and the report's roofline of
measured and estimated points, on the real H200 capture of one patch-transformer step
(tests/fixtures/ncu/README.md)."""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path

import pytest
import torch
from rich.console import Console
from rich.table import Table
from synthetic import config

from surrobench.analysis.counters import measure_all
from surrobench.analysis.op_flops import count_op_costs
from surrobench.analysis.op_readings import read_table
from surrobench.analysis.roofline import roofline
from surrobench.api.profile import ProfileReport
from surrobench.collect.ncu_parse import parse_raw_csv
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters, CounterProblem
from surrobench.records.kernels import KernelRows
from surrobench.records.ops import OpStat, OpTable
from surrobench.report.kernel_tables import COUNTER_COLUMNS, counter_rows, counters_renderables
from surrobench.report.kernel_tables import MAX_KERNEL_ROWS, short_kernel_name
from surrobench.report.op_tables import profile_renderables
from surrobench.report.plots import ESTIMATED_LABEL, MEASURED_LABEL, roofline_figure, roofline_points

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"
#: `surrobench calibrate` on the same H200 (docs/benchmarks/h200-counters.md)
H200 = Ceilings("NVIDIA H200", 4102.0, {"fp32": 51.0, "tf32": 407.6, "fp16": 754.3, "bf16": 784.3})


@pytest.fixture(scope="module")
def counters() -> ConfigCounters:
    trace = json.loads(gzip.open(FIXTURES / "transformer_256_b8_fp32_h200_trace.json.gz").read())
    rows = KernelRows()
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel":
            rows.add(event["name"], event["dur"], [], None, lost="no_op")
    launches = parse_raw_csv((FIXTURES / "transformer_step_raw.csv").read_text())
    kernels = measure_all(launches, rows.finish(active_steps=2, source="trace"), H200)
    passes = sum(k.counters.passes for k in kernels)
    return ConfigCounters(kernels, selected=("a",), covered_share=0.93, passes=passes, ncu_wall_s=41.25)


def _tables(out) -> list[Table]:
    return [r for r in out if isinstance(r, Table)]


def test_rows_are_the_longest_launches_with_their_class_shares_and_verdict(counters):
    doc = counters.to_json()
    rows = counter_rows(doc)
    assert len(counters.kernels) > MAX_KERNEL_ROWS and len(rows) == MAX_KERNEL_ROWS
    longest = sorted(counters.kernels, key=lambda k: -k.counters.duration_ns)[:MAX_KERNEL_ROWS]
    cells = [dict(zip(COUNTER_COLUMNS, row)) for row in rows]
    assert [c["kernel"] for c in cells] == [short_kernel_name(k.counters.name) for k in longest]
    assert [float(c["ncu us"]) for c in cells] == [round(k.counters.duration_ns / 1e3, 1) for k in longest]
    for c, k in zip(cells, longest):
        assert c["class"] == k.kernel_class
        assert c["verdict"].startswith(f"{k.bound} ({k.limiter}")
        assert (k.cause is not None) == (";" in c["verdict"])
        assert c["DRAM %"] == f"{k.counters.dram_of_peak:.0%}"
        assert c["occupancy"] == f"{k.counters.achieved_occupancy:.0%}/{k.counters.theoretical_occupancy:.0%}"
    attention = [c for c in cells if c["class"] == "attention"]
    assert attention and attention[0]["kernel"].startswith("fmha_cutlassF_f32_aligned_64x64_rf_sm80")


def test_the_terminal_gets_one_table_and_the_replay_cost_per_measured_config(counters):
    refused = ConfigCounters(problem=CounterProblem("permission", "ERR_NVGPUCTRPERM"))
    out = counters_renderables({"tf 256 b8": counters.to_json(), "other": refused.to_json()}, width=120)
    (table,) = _tables(out)
    assert [c.header for c in table.columns] == list(COUNTER_COLUMNS)  # nothing dropped at 120 columns
    assert table.row_count == MAX_KERNEL_ROWS and "tf 256 b8" in str(table.title)
    (cost,) = [str(r) for r in out if not isinstance(r, Table)]
    assert f"{len(counters.kernels)} kernel launches" in cost and f"{counters.passes} passes" in cost
    assert f"{counters.ncu_wall_s:.1f} s under ncu" in cost  # 41.2 s
    console = Console(width=120, record=True, file=io.StringIO())
    for r in out:
        console.print(r)
    assert max(len(line) for line in console.export_text().splitlines()) <= 120


def test_the_profile_prints_the_counters_after_the_kernels(counters):
    table = OpTable((), "device", 1000.0, 2, "profiler")
    result = dataclasses.replace(config([3.9] * 5, model="patch-transformer"), device="cuda")
    readings = read_table(table, "patch-transformer", result.input_shape)
    report = ProfileReport(result, 1, "ok", None, table, readings, 4.0, 0.05, counters=counters).to_json()
    tables = _tables(profile_renderables([report], top_n=5, width=120))
    assert [c.header for c in tables[-1].columns] == list(COUNTER_COLUMNS)
    assert not _tables(profile_renderables([{**report, "counters": None}], top_n=5, width=120))[1:]


def _estimated() -> dict:
    """The estimated roofline of a 256x256 matmul then a relu, 10 us each per step (FLOP counts)."""
    costs = count_op_costs(lambda: (torch.randn(256, 256) @ torch.randn(256, 256)).relu())
    stats = (
        OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 0.5, 10.0),
        OpStat("aten::relu", "elementwise/activation", 1, 10.0, 10.0, 0.5, 10.0),
    )
    return roofline(OpTable(stats, "device", 20.0, 1, "profiler"), costs, H200, "fp32").to_json()


def _series(fig) -> dict[str, object]:
    """``{legend label: its scatter collection}`` of the figure's one panel."""
    (ax,) = fig.axes
    return {c.get_label(): c for c in ax.collections}


def test_the_roofline_draws_measured_and_estimated_points_apart(counters):
    measured = {"tf": counters.to_json()}
    fig = roofline_figure(measured, {"mm": _estimated()}, H200)
    series = _series(fig)
    assert set(series) == {f"{MEASURED_LABEL}: tf", f"{ESTIMATED_LABEL}: mm"}
    points = series[f"{MEASURED_LABEL}: tf"]
    assert len(points.get_offsets()) == len(roofline_points(measured["tf"]["kernels"], "arithmetic_intensity")) > 0
    assert points.get_facecolors()[0][3] > 0  # filled
    assert len(series[f"{ESTIMATED_LABEL}: mm"].get_facecolors()) == 0  # hollow: another marker face
    assert fig.axes[0].get_xscale() == "log"
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"memory copy {H200.copy_gbps:.0f} GB/s" in legend and any(t.startswith("tf32 ") for t in legend)


def test_the_roofline_has_only_the_series_that_exist(counters):
    assert set(_series(roofline_figure({"tf": counters.to_json()}, {}, None))) == {f"{MEASURED_LABEL}: tf"}
    assert roofline_figure({"tf": ConfigCounters().to_json()}, {}, H200) is None
