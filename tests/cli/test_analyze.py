"""``surrobench analyze``: exit codes, JSON output, one-line errors."""

from __future__ import annotations

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
