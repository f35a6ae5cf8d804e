"""``surrobench optimize`` and the run flags it recommends, end to end on the CPU."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from surrobench.records.vocab import OPTIMIZE_VERDICTS as VERDICTS
from surrobench.report.optimize import off_device, off_line

FAST = ["--warmup", "1", "--iters", "3", "--input-sets", "1", "--device", "cpu"]
# optimize's fresh `surrobench run` processes (each imports torch again) are tested in tests/api/test_fresh.py
NO_PROCESSES = ["--processes", "0"]
CANDIDATE_KEYS = {"name", "verdict", "reason", "rel_l2", "max_abs", "setup_s"}


def test_optimize_writes_json_markdown_and_tables(tmp_path, capsys):
    out, md, db = tmp_path / "o.json", tmp_path / "o.md", tmp_path / "o.db"
    code = run_cli(
        [
            "optimize",
            "--model",
            "fno2d",
            "--shape",
            "8",
            "--batch",
            "1",
            "--rounds",
            "2",
            "--only",
            "channels_last,cudagraph",
            "--db",
            str(db),
            "--json",
            str(out),
            "--markdown",
            str(md),
            *FAST,
            *NO_PROCESSES,
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/optimize-v3" and doc["baseline_run_id"]
    (entry,) = doc["configs"]
    assert entry["input_shape"] == [1, 3, 8, 8] and entry["baseline"]["median_ms"] > 0
    names = [c["name"] for c in entry["candidates"]]
    assert names == ["cudagraph", "channels_last"]  # cheapest setup first
    for c in entry["candidates"]:
        assert CANDIDATE_KEYS <= set(c) and c["verdict"] in VERDICTS
    assert "speedup" in entry["candidates"][1] and set(entry["candidates"][1]["speedup"]) >= {"median", "ci95"}
    text = capsys.readouterr().out
    assert off_device(entry) == ["cudagraph"] and off_line(entry) in text and doc["optimize_id"] in text
    assert "cudagraph: needs CUDA" not in text  # the CUDA-only remedy is named once, in --markdown too
    assert md.read_text().startswith("### fno2d 1x3x8x8 b1 fp32 eager on cpu") and "| cudagraph |" not in md.read_text()
    assert off_line(entry) in md.read_text()
    # the baseline run is an ordinary stored run
    assert run_cli(["show", doc["baseline_run_id"], "--db", str(db)]) == 0
    # the optimization is shown by the id optimize printed, its document as stored
    capsys.readouterr()
    shown = tmp_path / "shown.json"
    assert run_cli(["show", doc["optimize_id"], "--db", str(db), "--json", str(shown)]) == 0
    assert json.loads(shown.read_text()) == doc and doc["optimize_id"] in capsys.readouterr().out
    # a prefix of the optimization and of its runs (they share its timestamp) names neither: exit 2
    common = doc["optimize_id"][: len("20261202-175120")]
    assert doc["baseline_run_id"].startswith(common) and run_cli(["show", common, "--db", str(db)]) == 2
    assert "matches optimization" in capsys.readouterr().err


def test_optimize_from_a_stored_run(tmp_path):
    db, run_json, out = tmp_path / "o.db", tmp_path / "run.json", tmp_path / "o.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                "pinn-mlp",
                "--shape",
                "64",
                "--batch",
                "1",
                "--db",
                str(db),
                "--json",
                str(run_json),
                *FAST,
            ]
        )
        == 0
    )
    run_id = json.loads(run_json.read_text())["run_id"]
    assert (
        run_cli(
            [
                "optimize",
                "--run",
                run_id,
                "--rounds",
                "2",
                "--only",
                "channels_last",
                "--db",
                str(db),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    (entry,) = json.loads(out.read_text())["configs"]
    assert entry["model"] == "pinn-mlp" and entry["candidates"][0]["verdict"] == "infeasible"
    assert "4-D" in entry["candidates"][0]["reason"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tolerance", "0"], "--tolerance"),
        (["--rounds", "1"], "--rounds 1"),
        (["--budget-s", "-1"], "--budget-s"),
        (["--only", "warp-drive"], "unknown remedy warp-drive"),
        (["--run", "nope"], "no run"),
        (["--verify", "1"], "--verify 1"),
        (["--processes", "-1"], "--processes -1: 0 (in-process windows only) to 20 pairs"),
    ],
)
def test_optimize_bad_input_is_one_line(tmp_path, capsys, args, message):
    workload = [] if "--run" in args else ["--model", "fno2d", "--shape", "8", *FAST]  # --run refuses them
    code = run_cli(["optimize", *workload, "--db", str(tmp_path / "o.db"), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_run_applies_and_records_the_recipe_flags(tmp_path):
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                "unet2d",
                "--shape",
                "16",
                "--batch",
                "1",
                "--threads",
                "1",
                "--channels-last",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["env"]["torch_threads"] == 1 and doc["env"]["cpu_count"] >= 1
    assert doc["results"][0]["status"] == "ok"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--compile-mode", "max-autotune"], "applies to the compile mode only"),
        (["--mode", "compile", "--compile-mode", "turbo"], "--compile-mode 'turbo'"),
        (["--compile-mode", "turbo"], "--compile-mode 'turbo': choose from"),  # the value first, then its place
        (["--threads", "0"], "--threads 0"),
    ],
)
def test_run_bad_recipe_flags(tmp_path, capsys, args, message):
    code = run_cli(["run", "--model", "fno2d", "--shape", "8", "--db", str(tmp_path / "r.db"), *FAST, *args])
    assert code == 2 and message in capsys.readouterr().err


def test_report_shows_the_optimization_with_its_speedup_vs_error_plot(tmp_path):
    db, out, html = tmp_path / "o.db", tmp_path / "o.json", tmp_path / "r.html"
    assert (
        run_cli(
            [
                "optimize",
                "--model",
                "unet2d",
                "--shape",
                "16",
                "--batch",
                "1",
                "--rounds",
                "2",
                "--only",
                "channels_last,bf16",
                "--db",
                str(db),
                "--json",
                str(out),
                *FAST,
                *NO_PROCESSES,
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert run_cli(["report", doc["baseline_run_id"], "--db", str(db), "-o", str(html)]) == 0
    page = html.read_text()
    assert doc["optimize_id"] in page
    assert 'alt="speedup vs relative L2 error per candidate"' in page and "data:image/png;base64," in page
    assert "channels_last" in page and "recommended:" in page


def test_workload_options_with_run_are_refused(tmp_path, capsys):
    code = run_cli(
        ["optimize", "--run", "whatever", "--model", "fno2d", "--channels-last", "--db", str(tmp_path / "o.db")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model" in err and "--channels-last" in err and "--run" in err
