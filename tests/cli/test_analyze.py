"""``surrobench analyze``: exit codes, JSON output, one-line errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_cli
from kineto_synth import annotation, cpu_op, launch

FNO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


@pytest.fixture
def run(capsys):
    """``surrobench analyze ARGS`` in-process: its exit code and what it printed (the pipe test below is the
    end-to-end one, in a process of its own)."""

    def analyze(*args):
        code = run_cli(["analyze", *map(str, args)])
        printed = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=printed.out, stderr=printed.err)

    return analyze


def test_analyze_fixture_writes_json(tmp_path, run):
    out = tmp_path / "r.json"
    done = run(FNO, "--json", out, "--gap-threshold-us", "50")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "ok" and doc["gaps"]["threshold_us"] == 50.0
    assert all(g["dur_us"] > 50 for g in doc["gaps"]["longest"])
    assert "launch_bound" in done.stdout


def test_analyze_bad_file_is_one_line_exit_2(tmp_path, run):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    done = run(bad)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid JSON" in done.stderr and "Traceback" not in done.stderr


def test_unwritable_json_path_fails_before_the_analysis(tmp_path, run):
    done = run(FNO, "--json", tmp_path / "missing" / "r.json")
    assert done.returncode == 2 and "--json" in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""  # nothing analyzed or printed


def test_names_with_markup_and_lone_surrogates_print_literally(tmp_path, run):
    events = [annotation("[/]", 0, 40), annotation("[bold]x\ud800", 0, 40)]
    events += [e for i in range(5) for e in launch(10 * i, 2, i + 1, 10 * i + 5, 3, name="[/]k\ud800")]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    done = run(path, "--json", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    assert "[/]" in done.stdout and "[bold]x" in done.stdout and "Traceback" not in done.stderr
    json.loads((tmp_path / "r.json").read_text())


def test_empty_and_cpu_only_traces_print_no_gpu_tables(tmp_path, run):
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    done = run(empty)
    assert done.returncode == 0 and "holds no events" in done.stdout and "GPU busy" not in done.stdout
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps({"traceEvents": [cpu_op("aten::mm", 0, 10, 1)]}))
    done = run(cpu)
    assert done.returncode == 0 and "CPU-only" in done.stdout and "GPU busy" not in done.stdout


def test_gap_threshold_must_be_finite(tmp_path, run):
    for value in ("inf", "nan", "1e300"):
        done = run(FNO, "--gap-threshold-us", value)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_pipe_of_a_gzip_trace(tmp_path):
    script = (
        f'{sys.executable} -c "import sys; from surrobench.cli import main; main(sys.argv[1:])" analyze <(cat {FNO})'
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "launch_bound" in done.stdout


def test_the_early_start_knows_which_analyze_options_take_a_value():
    import typer

    from surrobench.cli import _ANALYZE_VALUE_OPTIONS, _register
    from surrobench.cli.app import app

    _register()
    command = typer.main.get_command(app).commands["analyze"]
    valued = {o for p in command.params if p.param_type_name == "option" and not p.is_flag for o in p.opts}
    assert valued == _ANALYZE_VALUE_OPTIONS


def test_one_large_plain_trace_is_read_by_workers_started_before_the_commands_import(tmp_path, monkeypatch, run):
    """``analyze`` starts the workers of its one trace first (kineto_split.prestart); the read takes them, and
    prints what one process prints. A command that fails before reading leaves no worker running."""
    from surrobench.trace import kineto, kineto_split

    plain = tmp_path / "fno.json"
    plain.write_bytes(gzip.decompress(FNO.read_bytes()))
    one_process = run(plain).stdout  # 1 MB: below SPLIT_MIN_BYTES
    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 0)
    for module in (kineto, kineto_split):
        monkeypatch.setattr(module, "usable_cpus", lambda: 2)
    started, real = [], kineto_split._start_split
    monkeypatch.setattr(kineto_split, "_start_split", lambda *a: started.append(a) or real(*a))
    done = run("--json", tmp_path / "r.json", plain)
    assert done.returncode == 0, done.stderr
    assert started == [(plain, 2)] and not kineto_split._STARTED  # started once, before the read, and taken
    assert done.stdout == one_process
    assert run(plain, "--gap-threshold-us", "-1").returncode == 2  # refused before any read
    assert len(started) == 2 and not kineto_split._STARTED  # its workers were started, then stopped
