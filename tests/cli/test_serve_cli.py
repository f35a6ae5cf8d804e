"""``surrobench serve`` end to end in its own process: the entry point, the exit code, the stored run and the
files it writes (the API is tested in-process in tests/api/test_serve.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import run_cli

from surrobench.records.serve import serve_from_json
from surrobench.results.serve_store import load_serve
from surrobench.results.store import ResultStore

SRC = str(Path(__file__).parents[2] / "src")


def test_serve_command_stores_the_run_and_writes_json_and_html(tmp_path, capsys, monkeypatch):
    db, out, page = tmp_path / "r.db", tmp_path / "s.json", tmp_path / "s.html"
    args = ["--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40", "--max-batch", "1,2", "--max-wait-ms", "1", "--duration-s", "0.5", "--warmup-s", "0.1"]
    args += ["--min-requests", "0"]  # exactly the 0.5 s: ~16 requests per policy
    args += ["--p99-ms", "1000", "--db", str(db), "--json", str(out), "--html", str(page)]
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}
    done = subprocess.run(
        [sys.executable, "-m", "surrobench", "serve", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/serve-v2" and doc["workload"]["model"] == "pinn-mlp"
    assert [p["policy"]["max_batch"] for p in doc["policies"]] == [1, 2]
    assert all(point["requests"] < 100 for p in doc["policies"] for point in p["points"])
    assert f"as run {doc['run_id']}" in done.stdout and "Traceback" not in done.stderr
    served = [line for line in done.stderr.splitlines() if line.startswith("served ")]  # piped: one per load point
    assert [line.split(": ")[0] for line in served] == ["served 1/2", "served 2/2"]
    assert (
        all(f"batch<={k} " in line and "40 rps" in line for k, line in zip((1, 2), served)) and ", passed" in served[1]
    )
    with ResultStore(db, read_only=True) as store:
        assert store.run_state(doc["run_id"]) == "complete"
        assert load_serve(store, doc["run_id"]) == serve_from_json(doc)
    assert '<img alt="latency vs throughput" src="data:image/png;base64,' in page.read_text()
    # show prints the run as serve did (tables, best policy, notes), under a line naming it; in this process (its
    # own start is tests/cli/test_startup.py's), at the serve process's 250 columns
    from surrobench.cli.options import console

    monkeypatch.setattr(console, "width", 250)
    capsys.readouterr()
    assert run_cli(["show", doc["run_id"], "--db", str(db)]) == 0
    served = done.stdout.splitlines()[:-1]  # less the line saying where it was stored
    assert capsys.readouterr().out.splitlines()[1:] == served and served


def test_the_min_requests_default_is_the_p99_bound():
    import inspect

    from surrobench.analysis.serve_load import P99_BOUNDING_REQUESTS
    from surrobench.cli.serve import serve

    assert inspect.signature(serve).parameters["min_requests"].default.default == P99_BOUNDING_REQUESTS


def test_ctrl_c_keeps_the_rates_that_finished_stored_and_written(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the second rate is offered (in-process: the signal's path is tests/cli/test_signals.py's):
    exit 130, the first rate stored and in --json and --html, the run marked interrupted."""
    from conftest import run_cli

    from surrobench.api import serve as api_serve

    calls, measured = [], api_serve.load_point

    def second_interrupts(*args, **kwargs):
        calls.append(kwargs.get("target_rps"))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return measured(*args, **kwargs)

    monkeypatch.setattr(api_serve, "load_point", second_interrupts)
    db, out, page = tmp_path / "r.db", tmp_path / "s.json", tmp_path / "s.html"
    args = ["--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40,80,160", "--duration-s", "0.3", "--warmup-s", "0.1", "--min-requests", "0"]
    assert run_cli(["serve", *args, "--db", str(db), "--json", str(out), "--html", str(page)]) == 130
    err = capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["run_id"] in err  # the line names the run kept
    assert "served 1/3: " in err and "served 2/3: " not in err and "Traceback" not in err
    assert [[p["target_rps"] for p in policy["points"]] for policy in doc["policies"]] == [[40.0]]
    assert doc["env"]["interrupted"] is True
    assert doc["notes"][-1] == "interrupted: batch<=8 wait<=2ms cut short after 1 load point(s)"
    assert '<img alt="latency vs throughput"' in page.read_text()
    with ResultStore(db, read_only=True) as store:
        assert store.run_state(doc["run_id"]) == "interrupted"
        assert load_serve(store, doc["run_id"]) == serve_from_json(doc)


def test_an_error_mid_run_exits_2_with_the_rates_that_finished_written(tmp_path, capsys, monkeypatch):
    from conftest import run_cli

    from surrobench.analysis.serve_load import NothingCompleted
    from surrobench.api import serve as api_serve

    calls, measured = [], api_serve.load_point

    def second_fails(*args, **kwargs):
        calls.append(kwargs.get("target_rps"))
        if len(calls) == 2:
            raise NothingCompleted("no request completed: 12 x HTTP 503")
        return measured(*args, **kwargs)

    monkeypatch.setattr(api_serve, "load_point", second_fails)
    db, out = tmp_path / "r.db", tmp_path / "s.json"
    args = ["--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40,80", "--duration-s", "0.3", "--warmup-s", "0.1", "--min-requests", "0"]
    assert run_cli(["serve", *args, "--db", str(db), "--json", str(out)]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("surrobench: error: ")]
    doc = json.loads(out.read_text())
    assert "12 x HTTP 503" in line and doc["run_id"] in line  # the failure's count and status, the run kept
    assert [[p["target_rps"] for p in policy["points"]] for policy in doc["policies"]] == [[40.0]]
    with ResultStore(db, read_only=True) as store:
        assert store.run_state(doc["run_id"]) == "interrupted"


def test_a_model_returning_nan_exits_3_with_the_run_stored_complete(tmp_path, capsys):
    """As ``run`` marks such a config ``nonfinite`` and exits 3: the policy ``nonfinite`` in --json, one line, no
    traceback."""
    from conftest import run_cli

    model = tmp_path / "nan_model.py"
    model.write_text(
        "import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        return torch.full(x.shape, float('nan'))\n\n\ndef build():\n    return M()\n"
    )
    db, out = tmp_path / "r.db", tmp_path / "s.json"
    args = ["--model", f"{model}:build", "--shape", "8", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40", "--duration-s", "0.3", "--min-requests", "0", "--db", str(db), "--json", str(out)]
    assert run_cli(["serve", *args]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err and sum("output is not finite" in line for line in err.splitlines()) == 1
    doc = json.loads(out.read_text())
    assert doc["policies"][0]["nonfinite"]["tensor"] == "output" and doc["policies"][0]["points"] == []
    with ResultStore(db, read_only=True) as store:
        assert store.run_state(doc["run_id"]) == "complete"


def test_serve_passes_every_setting_and_offers_no_per_config_limit(capsys):
    from surrobench.cli.options import WorkloadOptions

    # --matmul-precision was listed by serve --help and dropped on the way to the library
    assert WorkloadOptions(matmul_precision="high").settings()["matmul_precision"] == "high"
    assert run_cli(["serve", "--model", "pinn-mlp", "--rate", "10", "--timeout-s", "5"]) == 2
    assert "--timeout-s" in capsys.readouterr().err


def test_one_load_without_html_draws_no_page_and_reads_as_no_capacity(tmp_path, monkeypatch):
    """No --html: the page (and its plot) is never drawn, so a few-request point cannot fail the command after
    the run is stored; the JSON says no capacity was searched."""

    def no_page(record):
        raise AssertionError("drawn unasked")

    monkeypatch.setattr("surrobench.report.html.serve_page", no_page)
    db, out = tmp_path / "r.db", tmp_path / "s.json"
    args = ["--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40", "--duration-s", "0.3", "--warmup-s", "0.1", "--min-requests", "0", "--p99-ms", "1000"]
    assert run_cli(["serve", *args, "--db", str(db), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["find_max"] is False and doc["policies"][0]["capacity"] is None
    point = doc["policies"][0]["points"][0]
    assert 0 < point["goodput_rps"] <= point["achieved_rps"]
