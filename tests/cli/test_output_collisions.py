"""An output path that is a path the command reads (the database, a trace, a run file, a model's file) or another
output is refused with exit 2 before anything runs, for every output option of every command: nothing read is
replaced (``run --db same.db --json same.db`` once turned a database into a JSON file)."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from surrobench.records.run import run_from_json
from surrobench.results.store import ResultStore

TRACE = Path(__file__).parents[1] / "fixtures" / "traces" / "h200_tiny_mlp_b1.json.gz"
RUN = {"schema": "surrobench/run-v1", "run_id": "r1", "created": "now", "tag": None, "env": {}, "results": []}
TINY = ["--model", "pinn-mlp", "--shape", "16", "--batch", "1", "--device", "cpu", "--warmup", "0", "--iters", "2"]


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """A folder holding a database with run r1, that run as a JSON file, a trace, a thresholds file and a model."""
    monkeypatch.chdir(tmp_path)
    Path("run.json").write_text(json.dumps(RUN))
    with ResultStore("r.db") as store:
        store.add_run(run_from_json(RUN))
    shutil.copy(TRACE, "t.json.gz")
    Path("th.toml").write_text("")
    Path("m.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(3, 3)\n")
    return tmp_path


#: (command line, the output flag, the option or argument it collides with); each names the same file twice.
CASES = [
    (["run", *TINY, "--db", "r.db", "--json", "r.db"], "--json", "--db"),
    (["run", "--model", "m.py:build", "--shape", "1x3", "--json", "m.py"], "--json", "--model"),
    (["run", *TINY, "--profile", "torch", "--db", "r.db", "--trace-out", "r.db"], "--trace-out", "--db"),
    (["profile", *TINY, "--db", "r.db", "--json", "r.db"], "--json", "--db"),
    (["perf", *TINY, "--db", "r.db", "--flamegraph-out", "r.db"], "--flamegraph-out", "--db"),
    (["diagnose", *TINY, "--db", "r.db", "--markdown", "r.db"], "--markdown", "--db"),
    (["diagnose", "t.json.gz", "--json", "t.json.gz"], "--json", "TRACES"),
    (["diagnose", "t.json.gz", "--config", "th.toml", "--markdown", "th.toml"], "--markdown", "--config"),
    (["optimize", *TINY, "--db", "r.db", "--json", "r.db"], "--json", "--db"),
    (["optimize", *TINY, "--markdown", "out.md", "--json", "out.md"], "--markdown", "--json"),
    (
        [
            "serve",
            "--model",
            "pinn-mlp",
            "--shape",
            "16",
            "--device",
            "cpu",
            "--rate",
            "10",
            "--duration-s",
            "0.2",
            "--db",
            "r.db",
            "--html",
            "r.db",
        ],
        "--html",
        "--db",
    ),
    (["show", "r1", "--db", "r.db", "--markdown", "r.db"], "--markdown", "--db"),
    (["show", "run.json", "--json", "run.json"], "--json", "RUN"),
    (["history", "--db", "r.db", "--json", "r.db"], "--json", "--db"),
    (["compare", "run.json", "r1", "--db", "r.db", "--json", "run.json"], "--json", "BASE"),
    (["compare", "r1", "r1", "--db", "r.db", "--markdown", "r.db"], "--markdown", "--db"),
    (["report", "run.json", "run.json", "-o", "run.json"], "--output", "RUNS"),
    (["report", "r1", "r1", "--db", "r.db", "--trace", "t.json.gz", "-o", "t.json.gz"], "--output", "--trace"),
    (["analyze", "t.json.gz", "--json", "t.json.gz"], "--json", "PATHS"),
    (["perf", *TINY, "--db", "r.db", "--json", "r.db"], "--json", "--db"),
    (["diagnose", *TINY, "--db", "r.db", "--trace-out", "r.db"], "--trace-out", "--db"),
    (
        ["serve", "--model", "pinn-mlp", "--shape", "16", "--rate", "10", "--db", "r.db", "--json", "r.db"],
        "--json",
        "--db",
    ),
    (
        ["serve", "--model", "pinn-mlp", "--rate", "10", "--arrivals", "th.toml", "--html", "th.toml"],
        "--html",
        "--arrivals",
    ),
    (["scenarios", "--only", "none", "--db", "r.db", "--markdown", "r.db"], "--markdown", "--db"),
    (["scenarios", "--only", "none", "--db", "r.db", "--json", "r.db"], "--json", "--db"),
]


def _contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(("argv", "output", "collides"), CASES, ids=[" ".join(c[0][:1] + [c[1]]) for c in CASES])
def test_an_output_that_is_an_input_is_refused_before_anything_runs(inputs, capsys, argv, output, collides):
    before = _contents(inputs)
    assert run_cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{output} " in err and f"same file as {collides} " in err
    assert _contents(inputs) == before  # nothing written: the check comes before the command's work


def test_a_symbolic_link_a_relative_path_and_a_hard_link_to_the_database_are_the_database(inputs, capsys):
    os.symlink("r.db", "link.db")
    os.link("r.db", "hard.db")
    Path("sub").mkdir()
    for out in ("link.db", "hard.db", "sub/../r.db", str(inputs / "r.db")):
        assert run_cli(["history", "--db", "r.db", "--json", out]) == 2
        assert "same file as --db" in capsys.readouterr().err
    assert Path("link.db").is_symlink() and ResultStore("r.db").list_runs()[0].run_id == "r1"


def test_distinct_outputs_and_appended_devices_pass(inputs, capsys):
    assert run_cli(["history", "--db", "r.db", "--json", "h.json"]) == 0
    assert json.loads(Path("h.json").read_text())["runs"][0]["run_id"] == "r1"
    if Path("/dev/null").exists():  # appended to, never replaced: two outputs may share it
        assert run_cli(["show", "run.json", "--json", "/dev/null", "--markdown", "/dev/null"]) == 0


@pytest.mark.parametrize(
    ("output", "problem"),
    [("out/", "is a folder"), ("run.json/x.json", "is a file, not a folder"), ("no/such/x.json", "does not exist")],
)
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(inputs, capsys, output, problem):
    before = _contents(inputs)
    assert run_cli(["run", *TINY, "--db", "new.db", "--json", output]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"surrobench: error: --json {output!r}: ") and problem in err
    assert _contents(inputs) == before and not Path("new.db").exists()  # nothing ran


@pytest.mark.parametrize(
    "command",
    [["run", *TINY], ["serve", "--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--rate", "10"], ["history"]],
)
def test_a_database_path_naming_a_folder_is_refused_before_anything_runs(inputs, capsys, command):
    before = _contents(inputs)
    assert run_cli([*command, "--db", "newdir/"]) == 2
    assert capsys.readouterr().err.strip() == "surrobench: error: --db 'newdir/': is a folder; give a file path"
    assert _contents(inputs) == before and not Path("newdir").exists()


def test_an_output_inside_a_folder_the_command_reads_is_refused(inputs, capsys):
    Path("ranks").mkdir()
    shutil.copy(TRACE, "ranks/rank0.json.gz")
    assert run_cli(["analyze", "ranks", "--json", "ranks/summary.json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--json 'ranks/summary.json' is inside the folder TRACE" in err.replace(
        "PATHS", "TRACE"
    )
    assert not Path("ranks/summary.json").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only folder")
def test_an_output_in_a_folder_that_cannot_be_written_is_refused_before_the_run(inputs, capsys):
    Path("locked").mkdir(mode=0o555)
    assert run_cli(["run", *TINY, "--db", "new.db", "--json", "locked/r.json"]) == 2
    err = capsys.readouterr().err
    assert "--json 'locked/r.json'" in err and os.strerror(errno.EACCES) in err and not Path("new.db").exists()


def test_a_trace_in_the_default_trace_folder_diagnoses(tmp_path, monkeypatch):
    # `diagnose surrobench-traces/` was refused: "--trace-out 'surrobench-traces' is inside the folder TRACES",
    # though no --trace-out was given and a trace diagnosed writes none
    from kineto_synth import allreduce_steps, write_ranks

    monkeypatch.chdir(tmp_path)
    arrivals = {0: 30_040.0, 1: 95_040.0}
    write_ranks(tmp_path / "surrobench-traces", {r: allreduce_steps(r, arrivals) for r in (0, 1)})
    assert run_cli(["diagnose", "surrobench-traces"]) == 0
    assert run_cli(["diagnose", "surrobench-traces", "--trace-out", "surrobench-traces"]) == 2  # given: checked
