"""``surrobench diagnose``, ``calibrate`` and ``scenarios`` end to end: exit codes, JSON, stored ceilings."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from surrobench.results.store import ResultStore, load_ceilings

FNO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


def test_diagnose_trace_writes_findings_json_and_markdown(tmp_path):
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    assert run_cli(["diagnose", str(FNO), "--json", str(out), "--markdown", str(md)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/diagnosis-v1" and doc["findings"][0]["kind"] == "launch_bound"
    assert "| launch_bound | high |" in md.read_text()


def test_diagnose_bad_inputs_exit_2(tmp_path, capsys):
    assert run_cli(["diagnose", str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[[")
    assert run_cli(["diagnose", str(FNO), "--config", str(bad)]) == 2
    assert run_cli(["diagnose", "--run", "nope", "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("surrobench: error:") == 3 and "Traceback" not in err


def test_calibrate_on_cpu_is_stored_and_read_back(tmp_path, capsys):
    db = tmp_path / "c.db"
    assert run_cli(["calibrate", "--device", "cpu", "--db", str(db), "--matmul-n", "256", "--copy-mib", "16",
                    "--iters", "3", "--json", str(tmp_path / "c.json")]) == 0
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["schema"] == "surrobench/ceilings-v1"
    with ResultStore(db) as store:
        stored = load_ceilings(store, written["device_name"])
    assert stored is not None and stored.copy_gbps == written["copy_gbps"] > 0
    assert set(stored.matmul_tflops) == {"fp32", "fp16", "bf16"}  # no tf32 on the CPU: the switch is CUDA's
    out = capsys.readouterr().out
    assert "memory copy (read + write)" in out and "device-to-device" not in out and "tf32" not in out
    assert load_ceilings(ResultStore(db), "no such device") is None


def test_diagnose_live_then_stored_run_on_cpu(tmp_path):
    db, out = tmp_path / "r.db", tmp_path / "live.json"
    argv = ["--model", "scenario:groupnorm-large", "--shape", "32", "--batch", "1", "--device", "cpu", "--db", str(db),
            "--iters", "17", "--warmup", "1", "--trace-out", str(tmp_path / "tr")]
    assert run_cli(["diagnose", *argv, "--json", str(out)]) == 0
    live = json.loads(out.read_text())
    assert live["findings"][0]["kind"] == "memory_bound"
    # CPU op times are self CPU times under the profiler: the finding says how they relate to the real step
    assert any("profiler overhead" in e["text"] for e in live["findings"][0]["evidence"])
    assert run_cli(["diagnose", "--run", live["context"]["run_id"], "--db", str(db), "--json", str(out)]) == 0
    stored = json.loads(out.read_text())["findings"][0]
    assert stored["kind"] == "memory_bound" and any("profiler overhead" in e["text"] for e in stored["evidence"])


def test_scenarios_control_passes_on_cpu_and_unknown_name_is_usage_error(tmp_path):
    out = tmp_path / "s.json"
    assert run_cli(["scenarios", "--only", "gemm-bf16,tiny-mlp", "--device", "cpu", "--db", str(tmp_path / "s.db"),
                    "--iters", "17", "--warmup", "1", "--trace-out", str(tmp_path / "tr"), "--json", str(out)]) == 0
    outcomes = {o["scenario"]: o for o in json.loads(out.read_text())["outcomes"]}
    assert outcomes["gemm-bf16"]["passed"] is True and outcomes["gemm-bf16"]["false_alarms"] == []
    assert outcomes["tiny-mlp"]["passed"] is None  # launch-bound needs a GPU
    assert run_cli(["scenarios", "--only", "nope"]) == 2


def test_scenario_models_resolve_but_stay_out_of_the_zoo():
    from surrobench.workload.loader import resolve_model
    from surrobench.workload.zoo import surrogate_names

    assert resolve_model("scenario:tiny-mlp").info.name == "scenario:tiny-mlp"
    assert not any(n.startswith("scenario:") for n in surrogate_names())
