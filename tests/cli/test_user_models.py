"""User models that misbehave are recorded with their cause and the sweep goes on; the exit code says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

FAST = ["--warmup", "1", "--iters", "3", "--input-sets", "1", "--device", "cpu"]
SRC = str(Path(__file__).parents[2] / "src")

MODELS = """
import sys, threading, time, torch

class Returns(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value
    def forward(self, x):
        return self.value(x)

def none():
    return Returns(lambda x: None)

def text():
    return Returns(lambda x: "done")

def generator():
    return Returns(lambda x: (t for t in [x]))

def exits():
    return Returns(lambda x: sys.exit(3))

def two_inputs():
    return torch.nn.Bilinear(8, 8, 2)

def broken():
    raise RuntimeError("weights missing")

def not_a_module():
    return 42

def leaves_a_thread():
    threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    return torch.nn.Identity()
"""


def _models(tmp_path) -> Path:
    path = tmp_path / "user_models.py"
    path.write_text(MODELS)
    return path


def _errors(out: Path) -> dict[str, str]:
    return {
        r["model"].rsplit(":", 1)[1]: r["error"] for r in json.loads(out.read_text())["results"] if r["status"] != "ok"
    }


def test_bad_outputs_and_sys_exit_are_errors_with_their_cause(tmp_path, capsys):
    path, out = _models(tmp_path), tmp_path / "run.json"
    specs = [f"{path}:{name}" for name in ("none", "text", "generator", "exits", "two_inputs")]
    code = run_cli(
        [
            "run",
            "--model",
            ",".join(["fno2d", *specs]),
            "--shape",
            "1x3x8x8",
            "--batch",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            "--json",
            str(out),
            *FAST,
        ]
    )
    assert code == 3, capsys.readouterr().err
    errors = _errors(out)
    assert set(errors) == {"none", "text", "generator", "exits", "two_inputs"}  # fno2d ran ok
    assert "returned NoneType" in errors["none"] and "returned str" in errors["text"]
    assert "returned generator" in errors["generator"]
    assert "sys.exit(3)" in errors["exits"]
    assert "example_inputs" in errors["two_inputs"]  # the hook that would take the second input


def test_a_factory_failing_mid_list_is_recorded_and_the_sweep_goes_on(tmp_path, capsys):
    path, out = _models(tmp_path), tmp_path / "run.json"
    code = run_cli(
        [
            "run",
            "--model",
            f"fno2d,{path}:broken,{path}:not_a_module,pinn-mlp",
            "--shape",
            "16",
            "--batch",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            "--json",
            str(out),
            *FAST,
        ]
    )
    assert code == 3, capsys.readouterr().err
    results = json.loads(out.read_text())["results"]
    assert [r["status"] for r in results] == ["ok", "error", "error", "ok"]
    assert "weights missing" in results[1]["error"] and "not an nn.Module" in results[2]["error"]
    # the model's failure, labelled with the type its factory raised, not as a usage error (exit 2's label)
    assert "RuntimeError" in results[1]["error"] and "UsageError" not in results[1]["error"]


def test_a_leftover_non_daemon_thread_does_not_hang_the_process(tmp_path):
    path = _models(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "surrobench",
            "run",
            "--model",
            f"{path}:leaves_a_thread",
            "--shape",
            "1x3x8x8",
            "--batch",
            "1",
            "--db",
            str(tmp_path / "r.db"),
            *FAST,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "left 1 thread(s) running" in done.stderr


def test_a_package_of_the_current_folder_is_importable_from_the_installed_command(tmp_path):
    """The console script (``entry``) does not get the current folder on sys.path the way ``python -m`` does;
    ``-P`` starts Python without it, as the installed command starts."""
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text("import torch\ndef build():\n    return torch.nn.Conv2d(3, 1, 1)\n")
    code = (
        "import sys; from surrobench.cli import entry; sys.argv = ['surrobench', 'run', '--model', "
        "'mypkg.models:build', '--shape', '1x3x8x8', '--batch', '1', '--db', 'r.db', '--warmup', '0', "
        "'--iters', '2', '--input-sets', '1', '--device', 'cpu']; entry()"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "mypkg.models:build" in done.stdout


def test_a_model_path_that_is_rich_markup_runs_and_shows(tmp_path, capsys):
    """``[/]`` in a model name crashed ``run`` at its progress bar and final table, after the commit."""
    folder = tmp_path / "a[" / "]b"
    folder.mkdir(parents=True)
    (folder / "m.py").write_text("import torch\ndef build():\n    return torch.nn.Conv2d(3, 1, 1)\n")
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                f"{folder}/m.py:build",
                "--shape",
                "1x3x8x8",
                "--batch",
                "1",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    # the name is kept whole in the record; where the terminal table wraps it depends on the temporary path
    assert json.loads(out.read_text())["results"][0]["model"] == f"{folder}/m.py:build"
    assert run_cli(["show", str(out)]) == 0  # rendered, not refused as rich markup


def test_threads_of_torch_compile_worker_pool_are_not_blamed_on_the_model():
    from concurrent.futures import ThreadPoolExecutor

    from torch._inductor.async_compile import AsyncCompile, get_compile_threads

    from surrobench.cli import stray_threads

    if get_compile_threads() < 2:
        pytest.skip("Inductor compiles in this process (one CPU): it starts no worker pool")
    AsyncCompile.pool().submit(int).result()  # what torch.compile does: starts the pool's worker thread
    with ThreadPoolExecutor(1, thread_name_prefix="users-pool") as users:
        users.submit(int).result()
        stray = stray_threads()
        names = [t.name for t in stray]
        assert any(name.startswith("users-pool") for name in names), names
        assert not set(AsyncCompile.pool()._threads) & set(stray), names


def test_profile_names_why_a_config_failed_as_diagnose_does(tmp_path, capsys):
    """profile's tables show only the configs that ran: a config whose timing failed gets its own ``failed:``
    line with the exception its factory raised, not only its status in the closing warning."""
    path = _models(tmp_path)
    code = run_cli(
        ["profile", "--model", f"{path}:broken,pinn-mlp", "--shape", "16", "--batch", "1"]
        + ["--db", str(tmp_path / "p.db"), *FAST]
        + ["--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "1"]  # one recorded step
    )
    captured = capsys.readouterr()
    out = captured.out
    assert code == 3, captured.err
    failed = [line for line in out.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "RuntimeError" in " ".join(out.split())
