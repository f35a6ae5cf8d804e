"""``surrobench profile`` and ``run --profile torch`` end to end on the CPU (real child processes), and
their bad-input exits."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import run_cli
from surrobench.results.store import ResultStore
from surrobench.results.profiles import load_op_table

# A small, fast config: the PINN MLP at 64 collocation points, a 1+1+2 step schedule within 8 iterations.
FAST = [
    "-m",
    "pinn-mlp",
    "--shape",
    "64",
    "--batch",
    "1",
    "--device",
    "cpu",
    "--warmup",
    "1",
    "--iters",
    "8",
    "--profile-wait",
    "1",
    "--profile-warmup",
    "1",
    "--profile-active",
    "2",
]


@pytest.mark.child_process  # the one test whose profiling child is a process of its own
def test_profile_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    db, out, traces = tmp_path / "r.db", tmp_path / "p.json", tmp_path / "traces"
    assert run_cli(["profile", *FAST, "--db", str(db), "--json", str(out), "--trace-out", str(traces)]) == 0
    stdout = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/profile-v3" and doc["run"]["schema"] == "surrobench/run-v5"
    (report,) = doc["profiles"]
    assert report["status"] == "ok" and report["op_table"]["ops"]
    assert report["op_table"]["active_steps"] == 2 and report["profiled_step_ms"] > 0
    assert report["overhead"] == pytest.approx(report["profiled_step_ms"] / report["unprofiled_ms"] - 1)
    assert report["readings"]["structure"]["expected"] == ["gemm/matmul/einsum"]
    assert report["readings"]["shapes"]["matches"] is True  # the (1, 64, 3) input reached the first layer
    top = doc["run"]["results"][0]["top_op"]
    assert top == {"name": report["op_table"]["ops"][0]["name"], "share": report["op_table"]["ops"][0]["share"]}
    assert top["name"] in stdout and "1. head vs structure" in stdout
    (trace,) = traces.iterdir()
    assert str(trace) == report["trace_path"] and trace.name.endswith(".json.gz")
    assert json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    with ResultStore(db) as store:
        (config_id,) = [r.config_id for r in store.load_run(doc["run"]["run_id"]).results]
        stored = load_op_table(store, config_id)
        assert store.load_run(doc["run"]["run_id"]).results[0].top_op == top
    assert stored.to_json()["ops"] == report["op_table"]["ops"]


def test_run_with_profile_torch_stores_top_op(tmp_path, capsys):
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    argv = ["run", *FAST, "--profile", "torch", "--db", str(db), "--json", str(out), "--trace-out", str(tmp_path)]
    assert run_cli(argv) == 0
    result = json.loads(out.read_text())["results"][0]
    assert result["top_op"]["name"].startswith("aten::") and 0 < result["top_op"]["share"] <= 1
    # the trace it wrote is named (a fresh-user trial had to list the folder to find it)
    traces = [w for line in capsys.readouterr().out.splitlines() if line.startswith("trace: ") for w in line.split()]
    assert any(w.startswith(str(tmp_path)) and Path(w).is_file() for w in traces)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--profile-active", "0"], "--profile-active 0"),
        (["--iters", "3"], "longer than --iters 3"),
        (["--trace-out", "FILE"], "--trace-out"),
        (["--top", "0"], "--top 0"),
    ],
)
def test_profile_bad_input_exits_2(tmp_path, capsys, extra, message):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    extra = [str(a_file) if e == "FILE" else e for e in extra]
    assert run_cli(["profile", *FAST, "--db", str(tmp_path / "r.db"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("surrobench: error:") and message in err


def test_run_unknown_profiler_exits_2(tmp_path, capsys):
    assert run_cli(["run", *FAST, "--db", str(tmp_path / "r.db"), "--profile", "vtune"]) == 2
    assert "--profile 'vtune'" in capsys.readouterr().err


def test_run_refuses_profiling_several_processes_before_planning_or_the_schedule(tmp_path, capsys, monkeypatch):
    from surrobench.cli.options import WorkloadOptions

    def no_plan(self):
        raise AssertionError("planned before profiling with several processes was refused")

    monkeypatch.setattr(WorkloadOptions, "plan", no_plan)
    traces = tmp_path / "traces"
    argv = ["run", *FAST, "--db", str(tmp_path / "r.db"), "--nproc", "2", "--profile", "torch", "--iters", "3"]
    assert run_cli([*argv, "--trace-out", str(traces)]) == 2
    assert capsys.readouterr().err.startswith("surrobench: error: --profile with --nproc 2: ") and not traces.exists()


def test_profile_takes_the_settings_of_an_optimize_recipe(tmp_path):
    """A recipe's ``run`` line (``--channels-last``, ``--threads``) can be profiled as it runs: the settings
    reach the timed run and the profiling child, and are stored with the config."""
    db, out = tmp_path / "r.db", tmp_path / "p.json"
    recipe = ["-m", "unet2d", "--shape", "16", *FAST[4:], "--channels-last", "--threads", "1"]
    assert run_cli(["profile", *recipe, "--db", str(db), "--json", str(out), "--profile", "torch"]) == 0
    doc = json.loads(out.read_text())
    assert doc["profiles"][0]["status"] == "ok" and doc["profiles"][0]["op_table"]["ops"]
    with ResultStore(db) as store:
        (result,) = store.load_run(doc["run"]["run_id"]).results
    assert result.extra["channels_last"] is True and result.extra["threads"] == 1
    # and named wherever the config is: its label, so titles, show, diagnose and compare say so
    assert result.label() == "unet2d 1x3x16x16 b1 fp32 eager channels_last threads=1"


@pytest.mark.parametrize("command", [["profile"], ["run", "--profile", "torch"]])
def test_ctrl_c_while_profiling_keeps_the_run_and_the_profiles_so_far(tmp_path, capsys, monkeypatch, command):
    """Ctrl-C in the second config's profiling child: every config timed and the first profile are stored and in
    --json, the run is marked interrupted (it stays ``running`` while profiling, so a kill leaves it abandoned)."""
    from surrobench.api import profile as api_profile

    db, out = tmp_path / "r.db", tmp_path / "p.json"
    spawn, states = api_profile.spawn, []

    def second_interrupts(cfg, *args, **kwargs):
        with ResultStore(db) as store:
            states.extend(r.state for r in store.list_runs())
        if len(states) == 2:
            raise KeyboardInterrupt
        return spawn(cfg, *args, **kwargs)

    monkeypatch.setattr(api_profile, "spawn", second_interrupts)
    argv = [*command, *FAST, "--batch", "1,2", "--db", str(db), "--json", str(out)]
    assert run_cli(argv) == 130
    err = capsys.readouterr().err
    doc = json.loads(out.read_text())
    run = doc.get("run", doc)  # profile writes profile-v2, run its run JSON
    assert run["run_id"] in err  # the line names the run kept
    assert "Traceback" not in err and states == ["running", "running"]
    assert run["env"]["interrupted"] is True and [r["top_op"] is not None for r in run["results"]] == [True, False]
    if command == ["profile"]:
        assert [p["batch"] for p in doc["profiles"]] == [1] and doc["profiles"][0]["op_table"]["ops"]
    with ResultStore(db) as store:
        assert store.run_state(run["run_id"]) == "interrupted"
        first, second = [r.config_id for r in store.load_run(run["run_id"]).results]
        assert load_op_table(store, first) is not None and load_op_table(store, second) is None
