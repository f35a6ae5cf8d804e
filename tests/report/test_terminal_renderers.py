"""The terminal renderers the commands print: a run's tables, the judgment table, the models and ceilings
tables (moved out of the commands; the CLI tests check the printed output end to end)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from synthetic import config, multi_rank_rows, run

from surrobench.records.ceilings import Ceilings
from surrobench.records.findings import Finding
from surrobench.report.ceilings import ceilings_table
from surrobench.report.findings import (
    NO_FINDINGS,
    NO_FINDINGS_FAILED,
    findings_renderables,
    findings_section_markdown,
)
from surrobench.report.models import models_table
from surrobench.report.run import run_markdown, run_tables


def test_a_run_has_its_results_table_and_a_multi_rank_run_also_its_scaling_table():
    single = run_tables(run("r1", [config([1.0, 2.0])]), "one", width=120)
    multi = run_tables(run("r2", multi_rank_rows([2.0] * 3, [[3.0] * 3, [2.0] * 3], samples_per_step=1)), "two")
    assert [t.title for t in single] == ["one"]
    assert [t.title for t in multi] == ["two", "scaling: one device (rank 0 alone) vs all ranks together"]
    multi_md = run_markdown(run("r2", multi_rank_rows([2.0] * 3, [[3.0] * 3, [2.0] * 3], samples_per_step=1)))
    assert "| ranks | model" in multi_md and "| config | N |" in multi_md
    assert "| config |" not in run_markdown(run("r1", [config([1.0, 2.0])]))


def test_an_empty_judgment_says_so_and_its_title_is_text_not_markup():
    heading, note = findings_renderables([], "diagnosis of [bold]x[/]")
    assert note == NO_FINDINGS and heading.plain == "diagnosis of [bold]x[/]: 0 findings"
    finding = Finding("launch_bound", "high", "many small kernels", (), "use a CUDA graph", 1.5, "m 8 b1")
    assert NO_FINDINGS not in findings_renderables([finding], "t")
    assert findings_renderables([], "t", any_failed=True)[1] == NO_FINDINGS_FAILED  # not "nothing above the floor"
    assert NO_FINDINGS_FAILED not in findings_renderables([finding], "t", any_failed=True)
    failed = [{"label": "m 8 b1", "status": "error", "error": "ValueError: boom", "cause": None}]
    md = findings_section_markdown([], "t", failed)  # the file names the failure, as the terminal does
    (line,) = [line for line in md.splitlines() if line.startswith("Failed: ")]
    assert all(failed[0][key] in line for key in ("label", "status", "error"))
    assert findings_section_markdown([finding], "a | b").startswith("### a \\| b\n\n| kind")


def test_models_and_ceilings_tables():
    row = {
        "name": "fno2d",
        "paper": "p",
        "layout": "l",
        "parameters": 1234567,
        "point_kind": "grid",
        "default_size": 64,
    }
    table = models_table([row])
    assert [c.header for c in table.columns][3] == "parameters" and list(table.columns[3].cells) == ["1,234,567"]
    ceilings = Ceilings("Test CPU", 20.0, {"fp32": 1.0, "fp16": 0.0}, "", "measured")
    cells = list(ceilings_table(ceilings, "cpu").columns[1].cells)
    assert cells[0] == "20.0 GB/s" and cells[-1] == "not usable (zero or non-finite ceiling)"


def test_the_step_table_lists_the_first_steps_and_counts_the_rest():
    from rich.console import Console

    from surrobench.analysis.timeline import StepBusy
    from surrobench.api.analyze import analyze
    from surrobench.report.timeline import MAX_STEP_ROWS, render_timeline
    from surrobench.trace import load_trace

    report = analyze(load_trace(Path(__file__).parents[1] / "fixtures" / "traces" / "h200_tiny_mlp_b1.json.gz"))
    many = replace(report, steps=tuple(StepBusy(0, k, 1.0, 0.5, 0.5, 0.5) for k in range(MAX_STEP_ROWS + 7)))
    console = Console(width=120, record=True, file=io.StringIO())
    for steps in (report, many):
        console.print(render_timeline(steps))
    text = console.export_text()
    assert text.count("Per profiled step") == 2 and "and 7 more steps" in text  # the rows left out, counted
    assert f"│    0 │   {MAX_STEP_ROWS - 1} │" in text and f"│    0 │   {MAX_STEP_ROWS} │" not in text


def test_a_nonfinite_config_keeps_its_timings_but_shows_no_rate():
    from surrobench.report.cells import result_cells

    ok = config([2.0, 2.1, 2.2])
    nan = replace(ok, status="nonfinite", error="output 0 holds NaN")
    assert result_cells(ok)["samples_per_s"] != "-"
    cells = result_cells(nan)
    assert cells["samples_per_s"] == "-" and cells["points_per_s"] == "-" and cells["median"] != "-"


def test_a_cpu_trace_shows_no_gpu_columns():
    """A CPU trace's ranges read 0.000 GPU busy and launched ms: the columns are left out there, kept on a GPU's."""
    from rich.console import Console

    from surrobench.api.analyze import analyze
    from surrobench.report.timeline import render_timeline
    from surrobench.trace import load_trace

    report = analyze(load_trace(Path(__file__).parents[1] / "fixtures" / "traces" / "h200_tiny_mlp_b1.json.gz"))
    assert report.ranges and report.status == "ok"
    for status, shown in (("ok", True), ("cpu_only", False)):
        console = Console(width=160, record=True, file=io.StringIO())
        console.print(render_timeline(replace(report, status=status)))
        text = console.export_text()
        assert "User / NVTX ranges" in text and ("GPU busy ms" in text) is shown
