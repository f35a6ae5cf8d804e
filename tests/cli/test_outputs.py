"""Outputs that cannot be written (a full disk, /dev/full, a closed standard output) are one line and exit 2,
with nothing stored lost and no empty file left; a reader that goes away (``| head -1``) is not an error."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from surrobench.results.store import ResultStore

SRC = str(Path(__file__).parents[2] / "src")
FAST = ["--warmup", "0", "--iters", "2", "--input-sets", "1", "--device", "cpu"]
FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this OS")


def _cli(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "surrobench", *args], env={**os.environ, "PYTHONPATH": SRC}, timeout=120, **kwargs
    )


@needs_dev_full
def test_json_on_a_full_device_is_one_line_and_the_run_is_kept(tmp_path, capsys):
    db = tmp_path / "r.db"
    assert (
        run_cli(
            ["run", "--model", "pinn-mlp", "--shape", "16", "--batch", "1", "--db", str(db), "--json", str(FULL), *FAST]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--json '/dev/full'" in err and os.strerror(errno.ENOSPC) in err and "Traceback" not in err
    with ResultStore(db) as store:
        (summary,) = store.list_runs()
        assert summary.n_configs == 1 and summary.state == "complete"
    assert f"stored as {summary.run_id}" in err and f"show {summary.run_id}" in err  # how to get it back
    assert run_cli(["show", summary.run_id, "--db", str(db), "--markdown", str(FULL)]) == 2


def test_a_failed_write_leaves_no_empty_file(tmp_path, capsys, monkeypatch):
    """A disk that fills mid-write: the target is never created (written beside it, renamed on success)."""
    run_json = tmp_path / "run.json"
    run_json.write_text(
        json.dumps(
            {"schema": "surrobench/run-v1", "run_id": "r1", "created": "now", "tag": None, "env": {}, "results": []}
        )
    )
    real_replace = os.replace

    def no_space(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    out = tmp_path / "t.md"
    assert run_cli(["show", str(run_json), "--markdown", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    monkeypatch.setattr(os, "replace", real_replace)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temp file left


@needs_dev_full
def test_full_or_closed_standard_output(tmp_path):
    run_json = tmp_path / "run.json"
    run_json.write_text(
        json.dumps(
            {"schema": "surrobench/run-v1", "run_id": "r1", "created": "now", "tag": None, "env": {}, "results": []}
        )
    )
    with open(FULL, "w") as full:
        done = _cli(["show", str(run_json)], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2 and done.stderr.strip().endswith(
        "cannot write to standard output (No space left on device); nothing stored was lost"
    )
    closed = subprocess.run(
        f"{sys.executable} -m surrobench show {run_json} >&-",
        shell=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        stderr=subprocess.PIPE,
        timeout=120,
    )
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr


def test_help_into_a_pipe_closed_after_one_line_exits_0():
    done = subprocess.run(
        f"{sys.executable} -m surrobench --help | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        env={**os.environ, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr


def test_an_output_gets_the_mode_open_would_give_it(tmp_path):
    """Not mkstemp's 0600: a new file gets 0666 less the umask, a replaced file keeps its own mode."""
    from surrobench.cli.options import write_json, write_output

    old = os.umask(0o022)
    try:
        write_json(tmp_path / "run.json", {"a": 1})
        write_output(tmp_path / "report.html", "<html></html>", "-o")
        assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o644
        assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o644
        os.umask(0o077)
        write_json(tmp_path / "private.json", {"a": 1})
        assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600
        (tmp_path / "run.json").chmod(0o640)
        write_json(tmp_path / "run.json", {"a": 2})
        assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o640
        assert json.loads((tmp_path / "run.json").read_text()) == {"a": 2}
    finally:
        os.umask(old)


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path):
    from surrobench.cli.options import write_json

    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.json"
    target.write_text("old")
    (tmp_path / "link.json").symlink_to(target)
    write_json(tmp_path / "link.json", {"a": 1})
    assert (tmp_path / "link.json").is_symlink() and json.loads(target.read_text()) == {"a": 1}


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="no /dev/stdout on this OS")
def test_json_to_dev_stdout_redirected_into_a_file_lands_after_the_table(tmp_path):
    """/dev/stdout then leads to a regular file the shell holds open: renaming onto it failed (a cross-device
    link), and renaming onto the file would have cut the table printed before it."""
    out = tmp_path / "both.txt"
    with open(out, "w") as stream:
        done = _cli(["models", "--json", "/dev/stdout"], stdout=stream, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "pinn-mlp" in text.split("{", 1)[0] and json.loads(text[text.index("{") :])["models"]
