"""The profile's compact top-kernels view (terminal) and the report's kernel-class breakdown (HTML)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from rich.table import Table
from synthetic import config, run

from surrobench.analysis.op_readings import read_table
from surrobench.api.profile import ProfileReport
from surrobench.api.report import build_report
from surrobench.records.config import InputSpec
from surrobench.records.kernels import KernelRows
from surrobench.records.ops import OpTable
from surrobench.api.report import Report
from surrobench.report.html import report_page
from surrobench.report.kernel_tables import NAME_WIDTH, kernel_rows, short_kernel_name
from surrobench.report.op_tables import profile_renderables
from surrobench.results.store import ResultStore
from surrobench.results.profiles import add_kernel_table

FIXTURES = Path(__file__).parents[1] / "fixtures"
OP_TABLE = json.loads((FIXTURES / "op_table_transformer_fp32_h200.json").read_text())
REAL_NAMES = [
    r["name"] for f in sorted(FIXTURES.glob("kernel_names_*.json")) for r in json.loads(f.read_text())["names"]
]
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>(cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4::Params)"
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
    "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


def _kernel_table():
    rows = KernelRows()
    rows.add(GEMM, 300.0, ["aten::view", "aten::_transformer_encoder_layer_fwd"], "encoder.layers.0", calls=4)
    rows.add(ADD, 100.0, ["aten::add"], "encoder.norm")
    rows.add("triton_poi_fused_add_mul_0", 50.0, [], None, lost="graph_replay")
    return rows.finish(active_steps=2, source="profiler")


def test_short_names_drop_the_return_type_namespaces_and_parameters_and_keep_the_templates():
    assert short_kernel_name(GEMM) == "Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>"
    assert short_kernel_name(ADD).startswith("vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, array<")
    assert short_kernel_name("at::cuda::(anonymous namespace)::spin_kernel(long)") == "spin_kernel"
    assert short_kernel_name("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD (Device -> Device)"
    for name in REAL_NAMES:
        short = short_kernel_name(name)
        assert 0 < len(short) <= NAME_WIDTH and not short.startswith(("void ", "std::")), name


def test_the_rows_carry_class_share_op_and_module_and_say_where_the_op_was_lost():
    rows = kernel_rows(_kernel_table().to_json())
    assert [r[1] for r in rows] == ["gemm", "elementwise", "elementwise"]
    assert [r[2] for r in rows] == ["66.7%", "22.2%", "11.1%"]
    assert rows[0][5:] == ("aten::_transformer_encoder_layer_fwd", "encoder.layers.0")  # not aten::view
    assert rows[2][5:] == ("- (graph_replay)", "-")


def _profile_report(kernels) -> dict:
    table = OpTable.from_json(OP_TABLE["op_table"])
    result = dataclasses.replace(config([OP_TABLE["unprofiled_ms"]] * 5), device="cuda")
    readings = read_table(table, "transformer", result.input_shape)
    return ProfileReport(result, 1, "ok", None, table, readings, 4.0, 0.05, kernel_table=kernels).to_json()


def test_the_profile_prints_the_top_kernels_and_the_attribution_notes_on_a_gpu_run():
    out = profile_renderables([_profile_report(_kernel_table())], top_n=5, width=200)
    tables = [r for r in out if isinstance(r, Table)]
    assert len(tables) == 2  # the op table, then the kernels
    kernels = {c.header: list(c.cells) for c in tables[1].columns}
    assert kernels["class"] == ["gemm", "elementwise", "elementwise"]
    assert kernels["op"][0] == "aten::_transformer_encoder_layer_fwd"
    assert "gemm 66.7%" in str(tables[1].title)
    notes = [str(r) for r in out if str(r).startswith("attribution: ")]
    assert any("metadata_op_recredited aten::view → aten::_transformer_encoder_layer_fwd" in n for n in notes)


def test_a_cpu_run_prints_no_kernel_view():
    out = profile_renderables([_profile_report(None)], top_n=5, width=200)
    assert len([r for r in out if isinstance(r, Table)]) == 1
    assert not any(str(r).startswith("attribution: ") for r in out)


def test_the_report_breaks_stored_kernel_time_down_by_class(tmp_path):
    db = tmp_path / "r.db"
    result = dataclasses.replace(config([1.0] * 20), device="cuda")
    record = run("20261201-000000-hhhh", [result])
    with ResultStore(db) as store:
        store.begin_run(record)
        add_kernel_table(store, store.add_result(record.run_id, result), _kernel_table())
    report = build_report([record.run_id], db=db)
    assert report.kernel_classes == {f"hhhh {result.label()}": {"gemm": 2 / 3, "elementwise": 1 / 3}}
    page = report_page(Report(runs=report.runs, kernel_classes=report.kernel_classes))
    assert "<h2>Kernel classes</h2>" in page
    section = page[page.index("<h2>Kernel classes</h2>") :]
    assert re.findall(r"<th [^>]*>([^<]*)</th>", section) == ["config", "gemm", "elementwise"]
    assert re.findall(r"<td [^>]*>([^<]*)</td>", section)[1:] == ["66.7%", "33.3%"]
    assert "Kernel classes" not in report_page(Report(runs=report.runs))


def test_the_op_table_is_titled_with_every_input_of_its_config_as_the_run_labels_it():
    inputs = (InputSpec((64, 2), "float32"), InputSpec((1, 100), "float32"))  # DeepONet's query points, branch input
    result = dataclasses.replace(config([1.0] * 5, model="deeponet"), input_shape=(64, 2), inputs=inputs)
    table = OpTable.from_json(OP_TABLE["op_table"])
    report = ProfileReport(result, 1, "ok", None, table, read_table(table, "deeponet", (64, 2)), 1.1, 0.1).to_json()
    title = str(profile_renderables([report], top_n=5, width=200)[0].title)
    assert report["label"] == result.label() == "deeponet 64x2,1x100 b1 fp32 eager"
    assert title.startswith(f"{result.label()} {result.device}\n")


def test_a_config_whose_profiling_failed_says_why_in_one_line():
    failed = {**_profile_report(None), "status": "error", "error": "RuntimeError: CUDA error: out of memory"}
    out = profile_renderables([failed, _profile_report(None)], top_n=5, width=200)
    lines = [str(r) for r in out if str(r).startswith("not profiled: ")]
    assert len(lines) == 1 and lines[0].endswith(": error: RuntimeError: CUDA error: out of memory")
    assert len([r for r in out if isinstance(r, Table)]) == 1  # the config that ran keeps its op table


def test_an_op_table_on_a_cpu_basis_has_no_device_time_columns():
    report = _profile_report(None)
    gpu = {c.header for c in profile_renderables([report], top_n=5, width=200)[0].columns}
    report["op_table"]["basis"] = "cpu"
    cpu = {c.header for c in profile_renderables([report], top_n=5, width=200)[0].columns}
    assert {"self dev us", "total dev us"} <= gpu and not {"self dev us", "total dev us"} & cpu
    assert "self CPU us" in cpu and gpu - cpu == {"self dev us", "total dev us"}


def test_a_busy_hosts_profile_does_not_lay_the_whole_gap_on_the_profiler():
    """A fresh-user trial on 2 CPUs: other processes kept 1.1 busy and the profile read "profiler overhead +329%"
    (a re-run +53%); the report records the busy CPUs by run's busy-host rule and its line says the host was busy."""
    from surrobench.report.op_tables import summary_line

    table = OpTable.from_json(OP_TABLE["op_table"])

    def report(others: float) -> dict:
        result = config([OP_TABLE["unprofiled_ms"]] * 5, extra={"other_cpus": others, "usable_cpus": 2})
        readings = read_table(table, "transformer", result.input_shape)
        return ProfileReport(result, 1, "ok", None, table, readings, 4.0, 3.29).to_json()

    busy, quiet = report(1.1), report(0.1)
    assert (busy["busy_others"], quiet["busy_others"]) == (1.1, None)
    assert "busy host" in summary_line(busy) and "busy host" not in summary_line(quiet)
    assert summary_line(quiet).endswith("profiler overhead +329%")


def test_a_profiled_step_faster_than_the_timed_one_is_no_negative_profiler_overhead():
    """A fresh-user trial's HNN: mean profiled step 7.863 ms vs timed median 95.713 ms read "profiler overhead
    ... -92%"; a profiler cannot make a step 12x shorter: the line gives the ratio to the timed step instead."""
    from surrobench.report.op_tables import summary_line

    table = OpTable.from_json(OP_TABLE["op_table"])
    result = config([OP_TABLE["unprofiled_ms"]] * 5, extra={"other_cpus": 0.1, "usable_cpus": 2})
    readings = read_table(table, "transformer", result.input_shape)
    faster = ProfileReport(result, 1, "ok", None, table, readings, 0.08 * OP_TABLE["unprofiled_ms"], -0.92).to_json()
    line = summary_line(faster)
    assert "profiler overhead" not in line and "-92%" not in line and "0.08x timed" in line
