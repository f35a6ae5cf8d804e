"""``surrobench perf`` end to end on the CPU with a user model whose forward spends its host time in a
slow pure-Python ``make_boundary_mask``: the function must be named among the host hot spots (issue 7).
Also ``--profile nsys`` where nsys is missing and the bad-input exits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from surrobench.collect.perf import PERF_INSTALL, PY_SPY_INSTALL, Tools
from surrobench.collect.perf_parse import perf_access

SLOW_MODEL = f"{Path(__file__).parent.parent / 'collect' / 'slow_mask_model.py'}:build"
TOOLS = Tools.find()
FAST = ["--batch", "1", "--device", "cpu", "--warmup", "1", "--iters", "5"]


@pytest.mark.skipif(
    not (TOOLS.perf and TOOLS.perf_control and TOOLS.py_spy),
    reason=f"needs perf >= 5.9 ({PERF_INSTALL}) and py-spy ({PY_SPY_INSTALL})",
)
def test_perf_names_the_slow_preprocessing_function(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    # One intra-op thread in the children: a 48x48 conv then costs ~0.03 ms against the mask's ~0.7 ms,
    # whereas two OpenMP threads on a busy 2-core VM spin for 1-14 ms (docs/benchmarks/cpu-perf.md).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out, flames = tmp_path / "perf.json", tmp_path / "flames"
    argv = [
        "perf",
        "-m",
        SLOW_MODEL,
        "--shape",
        "48",
        *FAST,
        "--perf-window-s",
        "0.6",
        "--db",
        str(tmp_path / "r.db"),
        "--json",
        str(out),
        "--flamegraph-out",
        str(flames),
    ]
    assert run_cli(argv) == 0
    stdout = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/perf-v1" and doc["run"]["schema"] == "surrobench/run-v5"
    (report,) = doc["perf"]
    assert report["status"] == "ok" and report["steps"] > 1
    system = report["system"]
    python = [h for h in system["hotspots"] if h["source"] == "py-spy"]
    mask = next((h for h in python if h["function"].startswith("make_boundary_mask (slow_mask_model.py)")), python)
    assert mask["share"] >= 0.5, python  # ~0.9 measured; the diagnosis names a host function from 0.10
    assert any(h["source"] == "perf" for h in system["hotspots"])
    assert system["task_clock_ms"] > 0 and system["wall_ms"] > 0
    assert system["cpu_utilization"] == pytest.approx(system["task_clock_ms"] / system["wall_ms"])
    assert system["counters"]["context-switches"] is not None
    if perf_access().virtualized and system["counters"]["cycles"] is None:
        assert "virtual machine" in system["unavailable"]["cycles"] and system["ipc"] is None
        assert stdout.count("virtual machine") == 1 and "as cycles" in stdout  # the one note, said once
    (svg,) = flames.iterdir()
    assert system["flamegraph"] == str(svg) and "make_boundary_mask" in svg.read_text()
    assert "make_boundary_mask" in stdout and "CPU utilization" in stdout and "task-clock" in stdout


@pytest.mark.skipif(shutil.which("nsys") is not None, reason="nsys is installed here")
@pytest.mark.parametrize("command", [["profile", "--profile", "nsys"], ["run", "--profile", "nsys"]])
def test_nsys_missing_is_one_line_with_the_command(tmp_path, capsys, command):
    traces = tmp_path / "traces"
    argv = [
        *command,
        "-m",
        "pinn-mlp",
        "--shape",
        "64",
        *FAST,
        "--profile-wait",
        "0",
        "--profile-warmup",
        "0",
        "--profile-active",
        "2",
        "--db",
        str(tmp_path / "r.db"),
        "--trace-out",
        str(traces),
    ]
    assert run_cli(argv) == 2
    (err,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("surrobench: error:")]
    assert "nsys is not on PATH" in err
    assert "nsys profile --trace=cuda,nvtx,osrt,cudnn,cublas" in err and "--profiler none" in err
    (config,) = traces.glob("*.config.json")
    assert str(config) in err and json.loads(config.read_text())["model"] == "pinn-mlp"
    assert not (tmp_path / "r.db").exists()  # nothing was timed


@pytest.mark.parametrize(
    "argv, where",
    [
        (["perf", "--perf-window-s", "0"], "--perf-window-s"),
        (["perf", "--host-top", "0"], "--host-top"),
        (["run", "--profile", "vtune"], "--profile"),
        (["profile", "--profile", "perf"], "--profile"),
    ],
)
def test_bad_perf_options_exit_2(tmp_path, capsys, argv, where):
    assert run_cli([*argv, "-m", "pinn-mlp", *FAST, "--db", str(tmp_path / "r.db")]) == 2
    assert where in capsys.readouterr().err


@pytest.mark.skipif(
    not (TOOLS.perf and TOOLS.perf_control and TOOLS.py_spy),
    reason=f"needs perf >= 5.9 ({PERF_INSTALL}) and py-spy ({PY_SPY_INSTALL})",
)
def test_diagnose_with_the_system_pass_names_the_slow_function(tmp_path, monkeypatch):
    """The three-tool workflow: diagnose --system runs perf/py-spy on the config. On a CPU the model's own
    forward is the compute: the slow function runs inside MaskedConv.forward (py-spy's stacks say so), so it is
    no cpu_preprocess finding (a GPU's host work inside the forward would be: the device waits for it). The
    system pass samples 0.6 s of steps, as ``perf --perf-window-s 0.6`` above, not diagnose's 2 s: py-spy's ~60
    samples name the function (the assertion below), and the two children take 2.8 s less."""
    import functools

    from surrobench.api import diagnose
    from surrobench.collect.profile_phase import PerfOptions

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # see the test above
    monkeypatch.setattr(diagnose, "PerfOptions", functools.partial(PerfOptions, window_s=0.6))
    out = tmp_path / "diagnosis.json"
    argv = [
        "diagnose",
        "-m",
        SLOW_MODEL,
        "--shape",
        "1x3x48x48",
        *FAST,
        "--profile-warmup",
        "1",
        "--profile-active",
        "2",
        "--system",
        "--measure-s",
        "0",  # the system pass is what is tested: no remedy measured
        "--db",
        str(tmp_path / "r.db"),
        "--trace-out",
        str(tmp_path / "traces"),
        "--json",
        str(out),
    ]
    assert run_cli(argv) == 0
    doc = json.loads(out.read_text())
    (system,) = doc["context"]["system"].values()  # the pass ran and its sampler saw the function
    assert any(h["source"] == "py-spy" and h["function"].startswith("make_boundary_mask") for h in system["hotspots"])
    findings = doc["findings"]
    assert not [f for f in findings if f["kind"] == "cpu_preprocess" and "make_boundary_mask" in f["summary"]]
