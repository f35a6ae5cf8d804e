"""Everyday use: --version, command order, flags that would be silently ignored or wrong, duplicates, the
git state recorded with a run, the default --iters against the P95 bar, the per-factory inputs hook."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import run_cli

FAST = ["--warmup", "0", "--iters", "2", "--input-sets", "1", "--device", "cpu"]


def test_version(capsys):
    from surrobench import __version__

    assert run_cli(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"surrobench {__version__}"


def test_commands_listed_in_workflow_order(capsys):
    assert run_cli(["--help"]) == 0
    out = capsys.readouterr().out
    order = ["run", "show", "history", "compare", "report", "profile", "analyze", "diagnose", "perf", "calibrate"]
    positions = [out.index(f"│ {name} ") for name in order]
    assert positions == sorted(positions), out


def test_every_command_help_flows_to_the_terminal_width(capsys):
    """A command's help is its docstring with no line break inside a paragraph, so --help wraps it at any width;
    the first paragraph, what the command list shows, is one sentence."""
    from surrobench.cli.app import app

    assert run_cli(["--help"]) == 0
    capsys.readouterr()
    helps = {info.callback.__name__: info.help for info in app.registered_commands}
    assert len(helps) >= 13 and all(helps.values())
    for name, text in helps.items():
        paragraphs = text.split("\n\n")
        assert not any("\n" in p for p in paragraphs), name
        assert paragraphs[0].count(". ") == 0, name


def test_tf32_on_the_cpu_is_refused(tmp_path, capsys):
    assert run_cli(["run", "--precision", "tf32", "--db", str(tmp_path / "r.db"), *FAST]) == 2
    assert "--precision tf32" in capsys.readouterr().err


def test_diagnose_trace_refuses_workload_options(tmp_path, capsys):
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    assert run_cli(["diagnose", str(trace), "--model", "unet2d"]) == 2
    assert "--model" in capsys.readouterr().err
    assert run_cli(["diagnose", "--run", "x", "--shape", "32", "--db", str(tmp_path / "r.db")]) == 2
    assert "--shape" in capsys.readouterr().err


def test_a_model_named_twice_runs_once(tmp_path):
    """(A shape or batch given twice is exit 2: tests/cli/test_usage_errors.py.)"""
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                "pinn-mlp,pinn-mlp",
                "--shape",
                "8",
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
    assert len(json.loads(out.read_text())["results"]) == 1


def test_git_commit_and_dirty_state_of_the_working_tree_are_recorded(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    repo.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-C", str(repo)]
    try:
        subprocess.run([*git, "init", "-q"], check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git not available")
    (repo / "m.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "m.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "m"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(repo)
    out = tmp_path / "run.json"
    args = ["run", "--model", "pinn-mlp", "--shape", "8", "--batch", "1", "--db", str(tmp_path / "r.db"), *FAST]
    assert run_cli([*args, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["env"]["git"] == {"commit": head, "dirty": False}
    (repo / "m.py").write_text("x = 2\n")
    assert run_cli([*args, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["env"]["git"] == {"commit": head, "dirty": True}


def test_default_iters_meet_the_p95_bar():
    from surrobench.cli.options import ItersOpt
    from surrobench.records.stats import MIN_SAMPLES_FOR_P95

    assert ItersOpt.default >= MIN_SAMPLES_FOR_P95


def test_one_inputs_hook_per_factory(tmp_path):
    module = tmp_path / "two.py"
    module.write_text(
        "import torch\n"
        "def bilinear():\n    return torch.nn.Bilinear(4, 5, 2)\n"
        "bilinear.example_inputs = lambda batch, shape: (torch.randn(batch, 4), torch.randn(batch, 5))\n"
        "def conv():\n    return torch.nn.Conv2d(3, 1, 1)\n"
    )
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                f"{module}:bilinear,{module}:conv",
                "--shape",
                "1x3x8x8",
                "--batch",
                "2",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    shapes = [r["input_shape"] for r in json.loads(out.read_text())["results"]]
    assert shapes == [[2, 4], [2, 3, 8, 8]]


def test_the_inputs_hook_is_documented_in_help(capsys):
    assert run_cli(["run", "--help"]) == 0
    assert "example_inputs(batch, shape)" in " ".join(capsys.readouterr().out.replace("│", " ").split())


def test_a_long_warning_is_one_line_when_piped(capsys):
    """A warning on a captured or piped stderr is never broken in two (a log is read line by line)."""
    from surrobench.cli.options import print_warnings

    print_warnings(["the median and P95 will be less reliable " * 8])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: ")
