"""``surrobench analyze DIR`` and ``surrobench diagnose DIR`` on a folder of rank traces: per-rank rows and
the cross-rank findings in the terminal and in ``--json``."""

from __future__ import annotations

import json

from conftest import run_cli
from kineto_synth import allreduce_steps, write_ranks


def _straggler(tmp_path):
    arrivals = {0: 30_040.0, 1: 95_040.0}
    return write_ranks(
        tmp_path / "ranks", {0: allreduce_steps(0, arrivals), 1: allreduce_steps(1, arrivals, extra_us=65_000.0)}
    )


def test_diagnose_folder_reports_the_straggler_and_the_wait(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert run_cli(["diagnose", str(_straggler(tmp_path)), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    kinds = [f["kind"] for f in doc["findings"]]
    assert {"straggler", "comm_wait"} <= set(kinds) and "launch_bound" not in kinds
    rows = doc["context"]["cross_rank"]["rows"]
    assert [r["rank"] for r in rows] == [0, 1] and round(rows[0]["wait_ms"]) == 65
    printed = capsys.readouterr().out
    assert "straggler" in printed and "aten::mm" in printed and "2 ranks, 3 aligned steps" in printed


def test_analyze_folder_json_carries_the_per_rank_rows(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert run_cli(["analyze", str(_straggler(tmp_path)), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    cross = doc["cross_rank"]
    assert cross["schema"] == "surrobench/cross-rank-v1" and cross["ranks"] == [0, 1]
    assert round(cross["rows"][1]["late_ms"]) == 65 and cross["rows"][1]["extra_ops"][0]["name"] == "aten::mm"
    assert "Per rank" in capsys.readouterr().out


def test_single_trace_is_one_timeline_report(tmp_path):
    folder = _straggler(tmp_path)
    out = tmp_path / "a.json"
    assert run_cli(["analyze", str(folder / "rank0.json"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/timeline-v1" and "cross_rank" not in doc


def test_diagnose_a_list_of_rank_files_in_two_workers(tmp_path):
    folder, out = _straggler(tmp_path), tmp_path / "d.json"
    argv = ["diagnose", str(folder / "rank1.json"), str(folder / "rank0.json"), "--workers", "2", "--json", str(out)]
    assert run_cli(argv) == 0
    doc = json.loads(out.read_text())
    straggler = next(f for f in doc["findings"] if f["kind"] == "straggler")
    assert "rank 1" in straggler["summary"] and doc["context"]["cross_rank"]["ranks"] == [0, 1]


def test_rank_traces_with_a_system_view_or_a_missing_file_exit_2(tmp_path, capsys):
    folder = _straggler(tmp_path)
    view = tmp_path / "view.json"
    view.write_text("{}")
    assert run_cli(["diagnose", str(folder), "--system-view", str(view)]) == 2
    assert run_cli(["analyze", str(folder / "rank0.json"), str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("surrobench: error:") == 2 and "Traceback" not in err
