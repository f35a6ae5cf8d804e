"""``surrobench perf`` end to end on the CPU with a user model whose forward spends its host time in a
slow pure-Python ``make_boundary_mask``: the function must be named among the host hot spots (issue 7).
Also ``--profile nsys`` where nsys is missing and the bad-input exits."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import run_cli
from surrobench.collect.perf import PERF_INSTALL, PY_SPY_INSTALL, Tools, system_pass
from surrobench.collect.perf_parse import perf_access

SLOW_MODEL = f"{Path(__file__).parent.parent / 'collect' / 'slow_mask_model.py'}:build"
TOOLS = Tools.find()
FAST = ["--batch", "1", "--device", "cpu", "--warmup", "1", "--iters", "5"]


NEEDS_TOOLS = pytest.mark.skipif(
    not (TOOLS.perf and TOOLS.perf_control and TOOLS.py_spy),
    reason=f"needs perf >= 5.9 ({PERF_INSTALL}) and py-spy ({PY_SPY_INSTALL})",
)


@pytest.fixture(scope="module")
def perf_command(tmp_path_factory):
    """``surrobench perf`` of the slow-mask model, once for the module: its exit code, stdout, --json document,
    flame graph folder and each system pass it made (``(cfg, SystemPass)``), which the diagnose test below plants
    rather than running perf and py-spy again (two children importing torch: docs/benchmarks/test-suite.md)."""
    from surrobench.api import perf as api_perf
    from surrobench.results.ceilings import CACHE_ENV

    tmp_path = tmp_path_factory.mktemp("perf")
    out, flames, passes = tmp_path / "perf.json", tmp_path / "flames", []

    def recorded(cfg, *args, **kwargs):
        passes.append((cfg, system_pass(cfg, *args, **kwargs)))
        return passes[-1][1]

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
    with pytest.MonkeyPatch.context() as monkeypatch, contextlib.redirect_stdout(io.StringIO()) as stdout:
        monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))  # conftest's per-test cache, for this module fixture
        monkeypatch.setenv("COLUMNS", "250")
        # One intra-op thread in the children: a 48x48 conv then costs ~0.03 ms against the mask's ~0.7 ms,
        # whereas two OpenMP threads on a busy 2-core VM spin for 1-14 ms (docs/benchmarks/cpu-perf.md).
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        monkeypatch.setattr(api_perf, "system_pass", recorded)
        code = run_cli(argv)
    return SimpleNamespace(code=code, stdout=stdout.getvalue(), doc=out, flames=flames, passes=passes)


@NEEDS_TOOLS
def test_perf_names_the_slow_preprocessing_function(perf_command):
    assert perf_command.code == 0
    stdout, flames = perf_command.stdout, perf_command.flames
    doc = json.loads(perf_command.doc.read_text())
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


@NEEDS_TOOLS
def test_diagnose_with_the_system_pass_names_the_slow_function(perf_command, tmp_path, monkeypatch):
    """The three-tool workflow: diagnose --system takes a system pass (perf/py-spy) of the config. On a CPU the
    model's own forward is the compute: the slow function runs inside MaskedConv.forward (py-spy's stacks say so),
    so it is no cpu_preprocess finding (a GPU's host work inside the forward would be: the device waits for it).
    The pass is the perf command's of the same model and input (``perf_command``: the tools' run is tested there),
    planted; diagnose's window is that command's 0.6 s of steps, not its 2 s, so that the pass's steps are
    what diagnose would have sampled."""
    import functools

    from surrobench.api import diagnose
    from surrobench.api import perf as api_perf
    from surrobench.collect.profile_phase import PerfOptions

    ((measured_cfg, measured),) = perf_command.passes
    asked = []

    def planted(cfg, *args, **kwargs):
        asked.append(cfg)
        return measured

    monkeypatch.setattr(api_perf, "system_pass", planted)
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
    (cfg,) = asked  # diagnose asked for the pass of its one config, the one the perf command measured
    assert (cfg.model, cfg.batch, cfg.device) == (measured_cfg.model, measured_cfg.batch, measured_cfg.device)
    doc = json.loads(out.read_text())
    (system,) = doc["context"]["system"].values()  # the pass ran and its sampler saw the function
    assert any(h["source"] == "py-spy" and h["function"].startswith("make_boundary_mask") for h in system["hotspots"])
    findings = doc["findings"]
    assert not [f for f in findings if f["kind"] == "cpu_preprocess" and "make_boundary_mask" in f["summary"]]
