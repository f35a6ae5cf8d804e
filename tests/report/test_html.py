"""The HTML report: self-contained, escaped, sections present exactly when their data is given."""

from __future__ import annotations

import json
import re

import pytest
from kineto_synth import annotation, cpu_op, launch, write
from synthetic import config, latency_samples, run

from surrobench.cli import main
from surrobench.api.report import Report, build_report
from surrobench.errors import UsageError
from surrobench.report.html import report_page
from surrobench.trace import load_trace
from surrobench.results.compare import compare_runs

EVIL = "<script>alert(1)</script>"


def _runs(model="fno2d"):
    cfgs = [
        config(latency_samples(m, 0.02, seed=i), model=model, size=size, batch=batch)
        for i, (m, size, batch) in enumerate([(1.0, 64, 1), (1.6, 64, 4), (3.0, 128, 1), (5.0, 128, 4)])
    ]
    slower = [
        config(
            latency_samples(1.3 * r.latency_ms.median, 0.02, seed=9), model=model, size=r.input_shape[-1], batch=r.batch
        )
        for r in cfgs
    ]
    return run("base-1", cfgs), run("new-1", slower)


def _img_count(page: str) -> int:
    return len(re.findall(r'<img alt="[^"]*" src="data:image/png;base64,', page))


def test_one_run_has_table_and_three_plots_and_no_optional_sections():
    base, _ = _runs()
    page = report_page(Report(runs=(base,)))
    assert page.startswith("<!DOCTYPE html>") and "Run base-1" in page
    assert _img_count(page) == 3  # latency vs shape, throughput vs batch, distributions
    for optional in ("Comparison", "Operator breakdown", "Timeline", "Roofline", "Findings"):
        assert optional not in page


@pytest.fixture(scope="module")
def full_page(tmp_path_factory) -> str:
    """The page of two compared runs with an op breakdown and a timeline (a kernel and its launch in a profiled
    step): every section the tests below read (nine figures: rendered once for the module)."""
    base, new = _runs()
    step = [annotation("ProfilerStep#1", 0, 100), *launch(20, 5, 1, 30, 40)]
    return report_page(
        Report(
            runs=(base, new),
            comparison=compare_runs(base, new),
            op_tables={"fno2d 3x64x64 b1": {"aten::_fft_r2c": 0.4, "aten::mul": 0.1}},
            timeline=load_trace(write(tmp_path_factory.mktemp("trace") / "gpu.json", step)),
        )
    )


def test_all_sections_render_when_data_is_given(full_page):
    page = full_page
    for section in ("Comparison", "Operator breakdown", "Timeline of one profiled step"):
        assert f"<h2>{section}" in page
    # 3 plots per run, the ratio forest, op breakdown, timeline.
    assert _img_count(page) == 2 * 3 + 3
    assert page.count('<tr class="regressed">') == 4


def test_text_from_runs_and_models_is_escaped(tmp_path):
    base, new = _runs(model=EVIL)
    page = report_page(Report(runs=(base, new), comparison=compare_runs(base, new), op_tables={EVIL: {EVIL: 1.0}}))
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page


def test_report_is_self_contained(full_page):
    page = full_page  # every section, each figure an embedded image
    assert not re.search(r'(src|href)\s*=\s*"(?!data:|#)', page)
    assert "http://" not in page and "https://" not in page and "<link" not in page


def test_report_command_writes_one_file(tmp_path, capsys):
    base, new = _runs()
    paths = []
    for r in (base, new):
        paths.append(tmp_path / f"{r.run_id}.json")
        paths[-1].write_text(json.dumps(r.to_json()))
    out = tmp_path / "report.html"
    with pytest.raises(SystemExit) as info:
        main(["report", str(paths[0]), str(paths[1]), "-o", str(out)])
    assert info.value.code == 0
    page = out.read_text()
    assert "<h2>Comparison" in page and _img_count(page) == 7
    with pytest.raises(SystemExit) as info:
        main(["report", str(paths[0]), "-o", str(tmp_path / "missing_dir" / "r.html")])
    assert info.value.code == 2


def test_html_and_markdown_results_rows_share_their_cells():
    """One result_cells for both tables: the HTML row is its cells, the markdown row the same values."""
    from dataclasses import replace

    from surrobench.report.cells import result_cells
    from surrobench.report.run import results_markdown

    ok = config(latency_samples(1.0, 0.02), top_op={"name": "aten::mm", "share": 0.4})
    failed = replace(config([], status="oom", batch=4), error="CUDA out of memory")
    page = report_page(Report(runs=(run("r-1", [ok, failed]),)))
    md = results_markdown([ok, failed])
    for r in (ok, failed):
        cells = result_cells(r)
        left = ("model", "shape", "mode", "top_op", "status")
        keys = (
            "model",
            "shape",
            "batch",
            "precision",
            "mode",
            "median",
            "p95",
            "samples_per_s",
            "points_per_s",
            "peak_mib",
            "top_op",
            "status",
        )
        attrs = {k: 'class="l"' if k in left else "" for k in keys}
        row = "".join(f"<td {attrs[k]}>{cells[k]}</td>" for k in keys)
        assert row in page
        assert (
            "| "
            + " | ".join(
                cells[k]
                for k in (
                    "model",
                    "shape",
                    "batch",
                    "precision",
                    "mode",
                    "median",
                    "ci",
                    "p95",
                    "device",
                    "cold_start",
                    "samples_per_s",
                    "points_per_s",
                    "peak_mib",
                    "status",
                )
            )
            + " |"
            in md
        )
    assert "device ms" not in page  # a CPU run measures no device time: no column of "-" (a fresh-user trial)
    assert "device ms" in report_page(Report(runs=(run("r-2", [replace(ok, device_ms=ok.latency_ms)]),)))
    assert result_cells(ok)["top_op"] == "aten::mm 40%" and result_cells(failed)["status"] == (
        "oom: the config does not fit in device memory: a smaller batch or grid, lower precision, or chunked "
        "inference [CUDA out of memory]"
    )


def test_diagnosis_findings_are_in_the_run_section():
    from surrobench.records.findings import Evidence, Finding

    base, _ = _runs()
    finding = Finding(
        "launch_bound",
        "high",
        f"GPU idle {EVIL}",
        (Evidence("timeline", "idle 1.7 ms\nof 1.94"),),
        "CUDA graph",
        1.5,
        config="fno2d 1x3x64x64 b1 fp32 eager",
    )
    page = report_page(Report(runs=(base,), findings={"base-1": [finding]}))
    assert "<h3>Diagnosis</h3>" in page and "launch_bound" in page and EVIL not in page
    assert page.index("<h3>Diagnosis</h3>") > page.index("Run base-1")
    empty = report_page(Report(runs=(base,), findings={"base-1": []}))
    assert "<h3>Diagnosis</h3>" in empty and "no findings" in empty and "launch_bound" not in empty
    unjudged = {"label": "fno2d", "verdict": "cannot_judge", "reason": "timed, not profiled"}
    cannot = report_page(Report(runs=(base,), findings={"base-1": []}, evidence_checks={"base-1": {"c": unjudged}}))
    assert "cannot judge: fno2d" in cannot and "no findings" not in cannot  # not both (diagnose's exit 4)
    check = {"label": f"fno2d {EVIL}", "verdict": "unreliable", "reason": "profiled step 153.900 ms vs timed 0.934 ms"}
    ok = {"label": "unet2d", "verdict": "ok", "reason": ""}
    checks = {"base-1": {check["label"]: check, "unet2d": ok}}
    held = report_page(Report(runs=(base,), findings={"base-1": [finding]}, evidence_checks=checks))
    assert held.count("unreliable profile: fno2d") == 1 and "153.900 ms" in held and EVIL not in held
    assert held.index("unreliable profile") > held.index("<h3>Diagnosis</h3>") and "unet2d:" not in held


def test_a_run_timed_not_profiled_cannot_be_judged_in_the_report_as_diagnose_says(tmp_path):
    """A fresh-user trial: the report said "no findings above the report floor" under runs that ``diagnose --run``
    calls "cannot judge ... timed, not profiled" (exit 4): the same check, and no "no findings" line."""
    import surrobench

    db = tmp_path / "r.db"
    timed = surrobench.benchmark("fno2d", shapes=[8], batches=[1], device="cpu", warmup=1, iters=3, db=db)
    data = build_report([timed.run_id], db=db)
    (check,) = data.evidence_checks[timed.run_id].values()
    assert check["verdict"] == "cannot_judge" and check["problems"] == ["not_profiled"]
    assert "no findings above" not in report_page(data)  # its run-level findings, if any, are listed


def test_report_command_diagnoses_each_run(tmp_path, capsys):
    base, _ = _runs()
    path = tmp_path / "base.json"
    path.write_text(json.dumps(base.to_json()))
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(path), "-o", str(tmp_path / "r.html")])
    assert exit_info.value.code == 0
    assert "<h3>Diagnosis</h3>" in (tmp_path / "r.html").read_text()


def test_a_trace_with_nothing_the_timeline_draws_is_refused(tmp_path, capsys):
    """A CPU run's trace holds no kernel, copy or CUDA API call: refused (exit 2), not an empty strip left out."""
    base, _ = _runs()
    path = tmp_path / "base.json"
    path.write_text(json.dumps(base.to_json()))
    step = [annotation("ProfilerStep#1", 0, 100), cpu_op("aten::mm", 10, 50, 1)]
    cpu = write(tmp_path / "cpu.json", step, deviceProperties=[])
    with pytest.raises(UsageError, match="cpu.json"):
        build_report([str(path)], db=tmp_path / "none.db", trace=cpu)
    gpu = write(tmp_path / "gpu.json", [*step, *launch(20, 5, 1, 30, 40)])
    assert len(build_report([str(path)], db=tmp_path / "none.db", trace=gpu).timeline.kernels) == 1
    with pytest.raises(SystemExit) as info:
        main(["report", str(path), "--trace", str(cpu), "-o", str(tmp_path / "r.html")])
    assert info.value.code == 2 and not (tmp_path / "r.html").exists()


def test_more_than_two_runs_are_drawn_alone_and_said_uncompared(tmp_path, capsys):
    """A comparison takes two runs: of three none is compared, and the report names them all (no silent drop)."""
    base, new = _runs()
    third = run("third-1", list(base.results))
    paths = []
    for r in (base, new, third):
        paths.append(str(tmp_path / f"{r.run_id}.json"))
        (tmp_path / f"{r.run_id}.json").write_text(json.dumps(r.to_json()))
    built = build_report(paths, db=tmp_path / "none.db")
    assert built.comparison is None and built.uncompared == ("base-1", "new-1", "third-1")
    assert [r.run_id for r in built.runs] == ["base-1", "new-1", "third-1"]
    assert build_report(paths[:2], db=tmp_path / "none.db").uncompared == ()
    with pytest.raises(SystemExit) as info:
        main(["report", *paths, "-o", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert info.value.code == 0 and "warning:" in err and all(r in err for r in ("base-1", "new-1", "third-1"))


def test_op_times_carry_each_profile_overhead_beside_them():
    from surrobench.analysis.evidence_checks import check_step
    from surrobench.report import plots

    base, new = _runs()
    b, n = base.results[0], new.results[0]
    ops = {"base-1": ({"fft": 1.0}, 11.2), "new-1": ({"fft": 0.8}, 18.4)}  # ms per op, profiled step of a 10 ms one
    checks = {rid: {b.label(): check_step(b.label(), step, 10.0).to_json()} for rid, (_, step) in ops.items()}
    report = Report(
        runs=(base, new),
        comparison=compare_runs(base, new, base_ops={b.key(): ops["base-1"][0]}, new_ops={n.key(): ops["new-1"][0]}),
        op_tables={f"se-1 {b.label()}": ops["base-1"][0], f"ew-1 {n.label()}": ops["new-1"][0]},
        evidence_checks=checks,
    )
    assert report.op_overheads == pytest.approx({f"se-1 {b.label()}": 0.12, f"ew-1 {n.label()}": 0.84})
    assert "BASE +12%, NEW +84%)</h3>" in report_page(report)  # the overheads above, beside the op ratios
    fig = plots.op_breakdown(report.op_tables, overheads=report.op_overheads)
    assert [ax.get_xlabel().endswith("profiler overhead +12%)") for ax in fig.axes] == [True, False]
