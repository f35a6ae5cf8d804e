"""The optimize renderers on a planted optimize document: rows, recipe lines, markdown and the plot."""

from __future__ import annotations

from pathlib import Path

from surrobench.report.optimize import (
    SPEEDUP_HEADER,
    optimize_markdown,
    optimize_renderables,
    recipe_lines,
    rows,
    speedup_note,
)
from surrobench.report.plots import speedup_vs_error
from synthetic import optimize_doc


def _doc(with_recipe: bool = True) -> dict:
    cand = {
        "name": "cudagraph",
        "verdict": "accepted",
        "reason": "4.00x [3.90, 4.10] over the baseline",
        "speedup": {"median": 4.0, "ci95": [3.9, 4.1], "noise_floor": 0.01},
        "rel_l2": 1e-7,
        "max_abs": 1e-6,
        "setup_s": 0.5,
        "break_even_calls": 12.0,
        "median_ms": 0.3,
        "baseline_ms": 4.4,
        "p95_ms": 0.35,
        "peak_mem_bytes": 2**20,
        "top_op": {"name": "aten::mm", "share": 0.4},
    }
    slow = {
        "name": "channels_last",
        "verdict": "rejected_slower",
        "reason": "slower: 0.66x",
        "rel_l2": 2e-7,
        "max_abs": 1e-6,
        "setup_s": 0.1,
        "break_even_calls": None,
        "median_ms": 1.8,
        "p95_ms": 2.0,
        "peak_mem_bytes": None,
        "top_op": None,
        "speedup": {"median": 0.66, "ci95": [0.6, 0.7], "noise_floor": 0.01},
    }
    entry = {
        "model": "fno2d",
        "input_shape": [1, 3, 128, 128],
        "batch": 1,
        "precision": "fp32",
        "device": "cuda",
        "mode": "eager",
        "error": None,
        "baseline": {"median_ms": 1.2, "p95_ms": 1.4, "peak_mem_bytes": 2**21, "top_op": None, "setup_s": 0.2},
        "candidates": [cand, slow],
        "recommended": ["cudagraph"] if with_recipe else [],
        "recipe": {
            "code": ["g = torch.cuda.CUDAGraph()"],
            "run_command": "surrobench run --mode cudagraph",
            "baseline_command": "surrobench run",
        },
        "not_tried": [{"name": "compile", "reason": "budget of 120 s spent"}],
        "notes": ["FFTs at 128x128"],
    }
    return optimize_doc({"recipe_run_id": "r1" if with_recipe else None, "configs": [entry]})


def test_rows_and_recipe_lines():
    entry = _doc()["configs"][0]
    table = rows(entry)
    assert [r["name"] for r in table] == ["baseline", "cudagraph", "channels_last"]
    assert table[1]["speedup"] == "4.00x [3.90, 4.10]" and table[1]["peak_mib"] == "1.0"
    assert table[1]["top_op"] == "aten::mm 40%" and table[2]["break_even"] == "-"
    assert table[1]["break_even"] == "12"
    entry["candidates"][1]["break_even_calls"] = 989842.0  # an older document's, for a candidate not faster
    assert rows(entry)[2]["break_even"] == "-"
    # each candidate's own window's baseline, absent ("-") in reports written before it was kept
    assert table[0]["baseline_ms"] == "1.200" and table[1]["baseline_ms"] == "4.400" and table[2]["baseline_ms"] == "-"
    entry["recipe"] |= {"speedup": entry["candidates"][0]["speedup"], "window_speedups": [4.0], "windows": 1}
    lines = recipe_lines(entry)
    assert lines[0] == "recommended: cudagraph (4.00x [3.90, 4.10] over 1 timing window in this process)"
    command = entry["recipe"]["run_command"]  # surrobench run --mode cudagraph
    assert "run it: " + command in lines
    assert "run it: .venv/bin/" + command in recipe_lines(entry, program=".venv/bin/surrobench")
    (tried,) = [line for line in lines if line.startswith("not tried: ")]
    assert all(t["name"] in tried and t["reason"] in tried for t in entry["not_tried"])
    assert ["note: " + n for n in entry["notes"]] == [line for line in lines if line.startswith("note: ")]
    # a document with the pooled recipe speedup shows that one, and over how many windows
    entry["recipe"] |= {"speedup": {"median": 3.8, "ci95": [3.6, 4.05], "noise_floor": 0.01}, "windows": 3}
    assert (
        recipe_lines(entry)[0]
        == "recommended: cudagraph (3.80x [3.60, 4.05] ratio of the medians pooled over 3 timing windows in this process)"
    )
    # with each window's own speedup, the range they spanned; none in fresh processes: all in this one
    entry["recipe"] |= {"window_speedups": [3.95, 3.62, 3.81], "process_windows": 0}
    assert recipe_lines(entry)[0].endswith(
        "ratio of the medians pooled over 3 timing windows in this process, 3.62x to 3.95x window by window)"
    )
    # the last two windows in fresh processes: what each process read (this one as one unit, the geometric mean
    # of its windows), as the PINN at 16,384 points pooled 3.09x while new processes read about 2.2x
    entry["recipe"] |= {"window_speedups": [3.6, 3.4, 2.2, 2.1], "windows": 4, "process_windows": 2}
    first = recipe_lines(entry)[0]
    assert "4 timing windows" in first and "(2 in this process" in first and "2 in pairs of fresh" in first
    assert recipe_lines(entry)[0].endswith("by process 3.50x in this one, 2.20x, 2.10x in fresh ones)")
    entry["recipe"] |= {"window_speedups": [3.6, 2.2], "windows": 2, "process_windows": 1}
    first = recipe_lines(entry)[0]
    assert "2 timing windows" in first and "(1 in this process" in first and "1 in a pair of fresh" in first
    assert recipe_lines(entry)[0].endswith("by process 3.60x in this one, 2.20x in a fresh one)")
    entry["recipe"] |= {"window_speedups": [3.6], "windows": 1, "process_windows": 0}
    assert recipe_lines(entry)[0].endswith("(3.80x [3.60, 4.05] over 1 timing window in this process)")
    # an accepted candidate, yet no recipe: the pooled windows did not bear it out
    assert "did not hold" in recipe_lines({**entry, "recommended": []})[0]


def test_markdown_names_the_pair_to_compare():
    md = optimize_markdown(_doc())
    assert md.startswith("### fno2d 1x3x128x128 b1 fp32 eager on cuda")
    assert "surrobench compare b1 r1 --ignore-field mode" in md
    # a database other than the default joins the command, quoted for the shell
    assert "compare b1 r1 --ignore-field mode --db 'my runs.db'" in optimize_markdown(_doc(), "my runs.db")
    # report matches the pair the same way (without --ignore-field it finds no config in both runs)
    assert "surrobench report b1 r1 --ignore-field mode --db 'my runs.db' -o report.html" in optimize_markdown(
        _doc(), "my runs.db"
    )
    assert "recommended: nothing" in optimize_markdown(_doc(with_recipe=False))


def test_the_rows_speedup_is_labelled_as_their_own_window_in_the_terminal_and_markdown():
    """A row's interval (one window, its rounds) and the recommended line's (pooled over windows) differ: the
    speedup column's footnote says what a row's is drawn over, with the document's rounds per window."""
    doc = {**_doc(), "rounds": 4}
    note = speedup_note(doc["rounds"])
    assert SPEEDUP_HEADER in note and "own timing window" in note and "4 rounds" in note
    group, _ = optimize_renderables(doc, width=160)
    tables = [r for r in group.renderables if hasattr(r, "columns")]
    assert [t.caption for t in tables if SPEEDUP_HEADER in [c.header for c in t.columns]] == [note]
    assert all(t.caption is None for t in tables if SPEEDUP_HEADER not in [c.header for c in t.columns])
    assert note in optimize_markdown(doc).splitlines()
    assert "its rounds" in speedup_note(None)  # a document without its rounds


def test_speedup_vs_error_plot():
    assert speedup_vs_error(_doc()) is not None
    doc = _doc()
    for c in doc["configs"][0]["candidates"]:
        c["speedup"] = None
    assert speedup_vs_error(doc) is None


def test_command_lines_stay_whole_when_the_terminal_output_is_narrow(monkeypatch):
    """Piped output is drawn at a fixed width; a compare line longer than it must still paste as one line."""
    import io

    from rich.console import Console

    from surrobench.cli import options

    buf = io.StringIO()
    monkeypatch.setattr(options, "console", Console(file=buf, width=60))
    monkeypatch.setattr(options, "err_console", Console(file=buf, width=60))  # stdout and stderr, in order
    monkeypatch.setattr(options, "invoked_as", lambda: "surrobench")  # as when it is on PATH
    db = "/a/rather/long/folder/name/for/the/results/of/this/project/optimize.db"
    options.optimization_out({**_doc(), "warnings": ["host busy: load 3.1 on 2 cores"]}, None, None, Path(db))
    lines = buf.getvalue().splitlines()
    assert f"before/after: surrobench compare b1 r1 --ignore-field mode --db {db}" in lines
    assert f"HTML: surrobench report b1 r1 --ignore-field mode --db {db} -o report.html" in lines
    # the warnings come before where it was stored, as in `run`
    warned = lines.index("warning: host busy: load 3.1 on 2 cores")
    assert warned < next(i for i, line in enumerate(lines) if line.startswith("stored as optimization o1"))


def test_nothing_timed_is_not_called_nothing_faster():
    entry = _doc(with_recipe=False)["configs"][0]
    infeasible = {**entry["candidates"][0], "verdict": "infeasible", "speedup": None}
    lines = recipe_lines({**entry, "recommended": [], "candidates": [infeasible], "not_tried": []})
    assert lines[0] == "recommended: nothing (no candidate could be timed here: see each one's reason)"
    untried = {**entry, "recommended": [], "candidates": [], "not_tried": [{"name": "tf32", "reason": "budget"}]}
    assert recipe_lines(untried)[0].startswith("recommended: nothing (the budget was spent before a candidate")


def test_a_baseline_that_could_not_run_is_one_line_not_tables_of_dashes():
    from rich.table import Table

    entry = _doc(with_recipe=False)["configs"][0]
    failed = {**entry, "error": "model m.py:build: factory build() raised RuntimeError: no weights", "candidates": []}
    (group, _stored) = optimize_renderables({**_doc(with_recipe=False), "configs": [failed]})
    parts = list(group.renderables)
    assert not any(isinstance(p, Table) for p in parts)
    assert [str(p) for p in parts if "raised RuntimeError" in str(p)] == [
        "recommended: nothing (the baseline could not run: model m.py:build: factory build() raised RuntimeError: no weights)"
    ]


def test_a_baseline_that_could_not_run_shows_no_speedup_or_error_of_its_own():
    entry = _doc(with_recipe=False)["configs"][0]
    failed = {
        **entry,
        "error": "CUDA out of memory",
        "candidates": [],
        "baseline": {**entry["baseline"], "median_ms": None},
    }
    (row,) = rows(failed)
    assert (row["speedup"], row["rel_l2"], row["reason"]) == ("-", "-", "CUDA out of memory")
    assert rows(entry)[0]["speedup"] == "1" and rows(entry)[0]["rel_l2"] == "0"  # a baseline that ran
    assert recipe_lines(failed)[0] == "recommended: nothing (the baseline could not run: CUDA out of memory)"


def test_the_config_title_carries_the_baseline_settings_and_a_failed_baseline_its_asked_shape():
    from dataclasses import replace

    from conftest import exec_config

    from surrobench.execution.runner import failed_result
    from surrobench.report.optimize import config_title
    from surrobench.results.optimize import ConfigOptimization
    from surrobench.workload.spec import ShapeSpec

    entry = _doc()["configs"][0]
    assert config_title(entry) == "fno2d 1x3x128x128 b1 fp32 eager on cuda"  # no settings: the bare mode
    cfg = exec_config(model="fno2d", shape=ShapeSpec(size=128), device="cuda")
    own = replace(
        failed_result(replace(cfg, threads=2, channels_last=True), "error", RuntimeError("x")),
        input_shape=(1, 3, 128, 128),
    )
    threads = ConfigOptimization(baseline=own).to_json()
    assert config_title(threads) == "fno2d 1x3x128x128 b1 fp32 eager channels_last threads=2 on cuda"
    assert threads["settings"] == {"threads": 2, "channels_last": True}
    failed = ConfigOptimization(baseline=failed_result(cfg, "error", RuntimeError("x"))).to_json()  # no input built
    assert config_title(failed) == "fno2d 128 b1 fp32 eager on cuda"


def test_the_stored_line_starts_its_commands_as_surrobench_was_invoked():
    from surrobench.report.optimize import stored_line

    doc = optimize_doc({"recipe_run_id": "r1"})
    lines = stored_line(doc, None, ".venv/bin/surrobench").splitlines()
    assert lines[1].startswith("before/after: .venv/bin/surrobench compare b1 r1")
    # a recipe of threads alone changes neither precision nor mode: nothing to ignore (a fresh-user trial read it)
    threads = optimize_doc({"recipe_run_id": "r1", "configs": [{"recommended": ["threads=1"]}]})
    assert stored_line(threads).splitlines()[1] == "before/after: surrobench compare b1 r1"
    bf16 = optimize_doc({"recipe_run_id": "r1", "configs": [{"recommended": ["bf16", "compile"]}]})
    assert stored_line(bf16).splitlines()[1].endswith("b1 r1 --ignore-field precision,mode")
    assert lines[2].startswith("HTML: .venv/bin/surrobench report b1 r1")
