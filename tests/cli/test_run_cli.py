"""``surrobench run`` end to end on the CPU: outputs, storage, and every bad input as one line + exit 2."""

from __future__ import annotations

import json
import os

import torch
from conftest import run_cli

from surrobench.records.run import RESULT_KEYS_V3
from surrobench.results.store import ResultStore

FAST = ["--warmup", "1", "--iters", "3", "--input-sets", "1"]


def test_run_stores_and_writes_run_json(tmp_path, capsys, monkeypatch):
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    monkeypatch.setattr("sys.argv", ["venv-not-on-path/bin/surrobench"])  # as the README's first command starts it
    code = run_cli(
        [
            "run",
            "--model",
            "fno2d",
            "--shape",
            "16",
            "--batch",
            "1,2",
            "--device",
            "cpu",
            "--db",
            str(db),
            "--json",
            str(out),
            "--tag",
            "t1",
            *FAST,
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    doc = json.loads(out.read_text())
    assert [r["model"] for r in doc["results"]] == ["fno2d", "fno2d"]
    assert f"{db} as run {doc['run_id']}" in " ".join(captured.out.split())  # where it is stored: database, run id
    # one model at one shape: the next steps on the same workload, as commands
    nxt = [line for line in captured.out.splitlines() if line.startswith("next: ")]
    assert len(nxt) == 1 and nxt[0].startswith("next: venv-not-on-path/bin/surrobench diagnose ")  # as invoked
    assert f"surrobench diagnose --model fno2d --shape 16 --batch 1,2 --device cpu --db {db}" in nxt[0]
    assert "venv-not-on-path/bin/surrobench optimize" in nxt[0]
    assert "warmup 1 (< 10)" in captured.err and "iters 3 (< 50)" in captured.err  # under the minimums
    assert doc["schema"] == "surrobench/run-v5" and doc["tag"] == "t1"
    assert doc["env"]["tf32_by_precision"] == {"fp32": False} and doc["env"]["cudnn_benchmark"] is False
    assert [r["input_shape"] for r in doc["results"]] == [[1, 3, 16, 16], [2, 3, 16, 16]]
    assert all(tuple(r) == RESULT_KEYS_V3 and r["status"] == "ok" and len(r["samples_ms"]) == 3 for r in doc["results"])
    with ResultStore(db) as store:
        stored = store.load_run(doc["run_id"])
    assert [r.latency_ms.median for r in stored.results] == [r["latency_ms"]["median"] for r in doc["results"]]


def test_no_next_steps_for_a_workload_they_would_not_measure(tmp_path, capsys):
    """diagnose and optimize start from fp32 eager with no setting: after a run with --threads 1 they would not
    measure the same thing, so no `next:` line is printed."""
    args = ["run", "--model", "fno2d", "--shape", "16", "--batch", "1", "--device", "cpu", "--threads", "1"]
    assert run_cli([*args, "--db", str(tmp_path / "r.db"), *FAST]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("next: ")]


def test_user_factory_model(tmp_path):
    module = tmp_path / "mymodel.py"
    module.write_text("import torch\ndef build():\n    return torch.nn.Conv2d(3, 2, 3, padding=1)\n")
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                f"{module}:build",
                "--shape",
                "1x3x8x8",
                "--batch",
                "2",
                "--device",
                "cpu",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["results"][0]["input_shape"] == [2, 3, 8, 8]


def _bad_inputs(tmp_path):
    corrupt = tmp_path / "broken.pt2"
    corrupt.write_bytes(b"not a zip archive")
    return [
        (["--model", "nosuchmodel"], "unknown"),
        (["--shape", "12x"], "--shape"),
        (["--shape", "abc"], "--shape"),
        (["--batch", "0"], "--batch"),
        (["--precision", "fp8"], "--precision"),
        (["--iters", "0"], "--iters"),
        (["--mode", "cudagraph", "--device", "cpu"], "cudagraph"),
        (["--seed", str(2**70)], "--seed"),
        (["--input-sets", "1000000000"], "--input-sets"),
        (["--shape", "1000000000"], "cannot be made"),
        (["--shape", "99999999999999999999999"], "beyond any tensor size"),
        (["--threads", "100000"], f"at most {os.cpu_count() or 1}"),
        (["--shape", "1x3x100000x100000"], "available"),
        (["--batch", "1000000000"], "available"),
        (["--model", str(corrupt)], "broken.pt2"),
        (["--model", "unet2d", "--shape", "12"], "8"),
        (["--json", str(tmp_path / "no" / "dir" / "x.json")], "--json"),
    ] + ([] if torch.cuda.is_available() else [(["--device", "cuda"], "cuda")])


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    for args, needle in _bad_inputs(tmp_path):
        code = run_cli(["run", "--db", str(tmp_path / "r.db"), "--device", "cpu", *FAST, *args])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("surrobench: error:")]
        assert code == 2, (args, err)
        assert len(lines) == 1 and needle in lines[0], (args, err)
        assert "Traceback" not in err


def test_nothing_measured_is_lost_when_a_config_fails(tmp_path):
    """A failing config (here: the model raises at batch 2) is recorded and later configs still run."""
    module = tmp_path / "flaky.py"
    module.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.shape[0] == 2:\n"
        "            raise torch.cuda.OutOfMemoryError('CUDA out of memory. Tried to allocate 80.00 GiB')\n"
        "        return x * 2\n"
        "def build():\n    return M()\n"
    )
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                f"{module}:build",
                "--shape",
                "1x3x8x8",
                "--batch",
                "1,2,4",
                "--device",
                "cpu",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 3
    )
    statuses = [(r["batch"], r["status"]) for r in json.loads(out.read_text())["results"]]
    assert statuses == [(1, "ok"), (2, "oom"), (4, "ok")]


def test_rounds_repeat_the_sweep_and_are_recorded(tmp_path):
    out = tmp_path / "run.json"
    assert (
        run_cli(
            [
                "run",
                "--model",
                "pinn-mlp",
                "--shape",
                "32",
                "--batch",
                "1,2",
                "--device",
                "cpu",
                "--rounds",
                "3",
                "--db",
                str(tmp_path / "r.db"),
                "--json",
                str(out),
                *FAST,
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc["env"]["rounds"] == 3
    assert [len(r["samples_ms"]) for r in doc["results"]] == [9, 9]
    assert run_cli(["run", "--rounds", "0", "--device", "cpu", "--db", str(tmp_path / "r.db")]) == 2


def test_usage_errors_of_the_cli_framework_are_one_line_too(capsys):
    for argv in (["run", "--iters", "abc"], ["run", "--bogus"], ["compare", "onlyone"]):
        assert run_cli(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("surrobench: error: ") and err.count("\n") == 1, (argv, err)


def test_a_failed_command_leaves_no_empty_json_file(tmp_path):
    out = tmp_path / "new.json"
    assert run_cli(["run", "--model", "nosuch", "--json", str(out), "--db", str(tmp_path / "r.db")]) == 2
    assert not out.exists()


def test_a_closed_stdout_pipe_still_writes_the_json_and_exits_0(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "run.json"
    cmd = [
        sys.executable,
        "-m",
        "surrobench",
        "run",
        "--model",
        "pinn-mlp",
        "--shape",
        "16",
        "--batch",
        "1,2,4",
        "--device",
        "cpu",
        *FAST,
        "--db",
        str(tmp_path / "r.db"),
        "--json",
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away at once, as `| head -0` would
    stderr = proc.communicate(timeout=120)[1].decode(errors="replace")
    assert proc.returncode == 0, stderr[-2000:]  # a failure says why (once seen at load 2.2, not reproduced)
    assert len(json.loads(out.read_text())["results"]) == 3


def _ctrl_c_at(monkeypatch, call: int) -> None:
    """Ctrl-C (KeyboardInterrupt) when the sweep measures its ``call``-th config (1-based, rounds included)."""
    from surrobench.execution import sweep

    calls = []
    real = sweep.run_config

    def interrupt(cfg, prepared, **limits):
        calls.append(cfg)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(cfg, prepared, **limits)

    monkeypatch.setattr(sweep, "run_config", interrupt)


def test_ctrl_c_mid_sweep_keeps_what_finished(tmp_path, capsys, monkeypatch):
    """The second config is interrupted: exit 130, the first is stored and in --json, the run is marked."""
    _ctrl_c_at(monkeypatch, 2)
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    code = run_cli(
        [
            "run",
            "--model",
            "pinn-mlp",
            "--shape",
            "32",
            "--batch",
            "1,2,4",
            "--device",
            "cpu",
            "--db",
            str(db),
            "--json",
            str(out),
            *FAST,
        ]
    )
    err = capsys.readouterr().err
    assert code == 130
    doc = json.loads(out.read_text())
    assert doc["run_id"] in err and "Traceback" not in err  # the line names the run kept
    assert [r["batch"] for r in doc["results"]] == [1] and doc["env"]["interrupted"] is True
    with ResultStore(db) as store:
        assert store.run_state(doc["run_id"]) == "interrupted" and len(store.load_run(doc["run_id"]).results) == 1


def test_ctrl_c_inside_a_configs_timed_calls_stores_the_calls_timed_before_it(tmp_path, capsys, monkeypatch):
    """Ctrl-C after 3 timed calls of the only config: stored ``interrupted`` with those 3, the line says so."""
    from surrobench.execution import sweep

    real, calls = sweep.run_config, []

    def before_each():
        calls.append(1)
        if len(calls) > 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "run_config", lambda cfg, prepared, **limits: real(cfg, prepared, before_each))
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    args = ["run", "--model", "pinn-mlp", "--shape", "32", "--batch", "1", "--device", "cpu", "--iters", "50"]
    assert run_cli([*args, "--warmup", "0", "--db", str(db), "--json", str(out)]) == 130
    (kept,) = json.loads(out.read_text())["results"]
    assert kept["status"] == "interrupted" and len(kept["samples_ms"]) == 3 and kept["rounds_planned"] is None
    run_id = json.loads(out.read_text())["run_id"]
    assert run_id in capsys.readouterr().err  # the interruption's line names the run kept
    with ResultStore(db) as store:
        (stored,) = store.load_run(run_id).results
        assert store.run_state(run_id) == "interrupted"
    assert stored.status == "interrupted" and stored.extra["timed_calls"] == 3


def test_a_signal_after_the_sweep_while_the_tables_print_keeps_the_json(tmp_path, monkeypatch):
    """The run is stored and complete; Ctrl-C (or SIGTERM) while its tables print must not lose --json."""
    from surrobench.cli import run as run_command

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "run_tables", interrupted)
    out = tmp_path / "run.json"
    args = ["run", "--model", "pinn-mlp", "--shape", "32", "--batch", "1", "--device", "cpu", "--json", str(out)]
    assert run_cli([*args, "--db", str(tmp_path / "r.db"), *FAST]) == 130
    assert [r["status"] for r in json.loads(out.read_text())["results"]] == ["ok"]


def test_ctrl_c_in_the_last_round_keeps_the_rounds_each_config_finished(tmp_path, capsys, monkeypatch):
    """``--rounds 2`` over three configs, interrupted at the second config of round 2: the first config is
    stored with both rounds, the other two with the round they finished, marked as short of the rounds asked."""
    _ctrl_c_at(monkeypatch, 5)
    db = tmp_path / "r.db"
    args = ["run", "--model", "pinn-mlp", "--shape", "32", "--batch", "1,2,4", "--rounds", "2", "--device", "cpu"]
    args += ["--db", str(db)]
    assert run_cli([*args, *FAST]) == 130
    with ResultStore(db) as store:
        (run_id,) = [r.run_id for r in store.list_runs()]
        results = store.load_run(run_id).results
    assert [r.batch for r in results] == [1, 2, 4]
    assert [r.extra.get("rounds_planned") for r in results] == [None, 2, 2]
    assert [len(r.samples_ms) for r in results] == [2 * results[1].iters, results[1].iters, results[2].iters]
    capsys.readouterr()
    shown = tmp_path / "shown.json"
    assert run_cli(["show", run_id, "--db", str(db), "--json", str(shown)]) == 0  # show says the stored run is short
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert [run_id in w for w in warnings][-1:] == [True] and sum(run_id in w for w in warnings) == 1  # after run's
    doc = json.loads(shown.read_text())
    assert doc["env"]["interrupted"] is True and [r["rounds_planned"] for r in doc["results"]] == [None, 2, 2]


def test_the_suggested_commands_name_surrobench_as_it_was_invoked(tmp_path, monkeypatch):
    from surrobench.cli.options import invoked_as

    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("surrobench", "python3.12"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    script, python = str(bin_dir / "surrobench"), str(bin_dir / "python3.12")
    main = "/somewhere/site-packages/surrobench/__main__.py"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert invoked_as("venv/bin/surrobench", python) == "venv/bin/surrobench"  # not on PATH: the path as typed
    assert invoked_as(main, python) == "venv/bin/python3.12 -m surrobench"
    monkeypatch.setenv("PATH", str(bin_dir))
    assert invoked_as(script, python) == "surrobench"  # on PATH: its name
    assert invoked_as(main, python) == "python3.12 -m surrobench"


def test_no_next_steps_when_no_config_ran(tmp_path, capsys):
    """A model whose forward fails once timing starts (the first call, the planning check, passes): every config
    ends ``error``, exit 3, and the run suggests no diagnose or optimize of it."""
    model = tmp_path / "flaky.py"
    model.write_text(
        "import torch\n"
        "class Flaky(torch.nn.Module):\n"
        "    calls = 0\n"
        "    def forward(self, x):\n"
        "        Flaky.calls += 1\n"
        "        if Flaky.calls > 1:\n"
        "            raise RuntimeError('boom')\n"
        "        return x\n"
        "def build():\n"
        "    return Flaky()\n"
    )
    argv = ["run", "--model", f"{model}:build", "--shape", "1x3", "--batch", "1", "--device", "cpu"]
    assert run_cli([*argv, "--db", str(tmp_path / "r.db"), "--json", str(tmp_path / "r.json"), *FAST]) == 3
    assert [r["status"] for r in json.loads((tmp_path / "r.json").read_text())["results"]] == ["error"]
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("next: ")]


def test_show_of_a_plain_run_prints_the_warnings_run_printed(tmp_path, capsys):
    """A fresh-user trial: run warned of a busy host (other processes used 1.4 of 2 CPUs) and a noisy config, and
    ``show`` of the stored run printed neither. show reads them from the stored fields (``other_cpus`` and
    ``usable_cpus`` of each result, its latency IQR, the run's torch threads), as run does."""
    from synthetic import config, latency_samples, run

    from surrobench.execution.env import sweep_warnings

    host = {"torch_threads": 1, "usable_cpus": 2, "load_1m": 7.0, "other_cpus": 1.4}
    noisy, quiet = config(latency_samples(10.0, 0.2), extra=host), config(latency_samples(10.0, 0.01), size=32)
    record = run("20261207-210655-81f4", [noisy, quiet], env={"torch_threads": 1, "cpu_count": 2})
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        store.begin_run(record)
        for result in record.results:
            store.add_result(record.run_id, result)
        store.finish_run(record.run_id)
    printed = sweep_warnings(list(record.results), record.env)  # what run printed under its table
    assert [w.split(":")[0] for w in printed] == ["busy host", "1 config(s) noisy, IQR over 10% of the median"]
    assert run_cli(["show", record.run_id, "--db", str(db)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert all(f"warning: {w}" in err for w in printed)
