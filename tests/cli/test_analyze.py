"""``surrobench analyze``: exit codes, JSON output, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FNO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


def run(*args):
    code = "import sys; from surrobench.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, "analyze", *map(str, args)], capture_output=True, text=True)


def test_analyze_fixture_writes_json(tmp_path):
    out = tmp_path / "r.json"
    done = run(FNO, "--json", out, "--gap-threshold-us", "50")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "ok" and doc["gaps"]["threshold_us"] == 50.0
    assert all(g["dur_us"] > 50 for g in doc["gaps"]["longest"])
    assert "launch_bound" in done.stdout


def test_analyze_bad_file_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    done = run(bad)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid JSON" in done.stderr and "Traceback" not in done.stderr


def test_unwritable_json_path_fails_before_the_analysis(tmp_path):
    done = run(FNO, "--json", tmp_path / "missing" / "r.json")
    assert done.returncode == 2 and "--json" in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""  # nothing analyzed or printed
