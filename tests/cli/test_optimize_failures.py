"""``surrobench optimize`` when the model itself fails, and on Ctrl-C: nothing measured is lost, the exit
code says what happened (docs/cli.md's table of exit codes)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from surrobench.tune import plans as api
from surrobench.errors import EXIT_CONFIGS_FAILED, EXIT_INTERRUPTED
from surrobench.report.optimize import stored_line
from surrobench.results.store import ResultStore

# --processes 0: fresh `surrobench run` processes (each imports torch again) are tested in tests/api/test_fresh.py
FAST = ["--warmup", "1", "--iters", "3", "--input-sets", "1", "--device", "cpu", "--rounds", "2", "--budget-s", "5"]
FAST += ["--processes", "0"]

MODELS = """
import torch


class Returns(torch.nn.Module):
    def __init__(self, what):
        super().__init__()
        self.what = what

    def forward(self, x):
        if self.what == "none":
            return None
        if self.what == "nan":
            return x * float("nan")
        raise ValueError("forward exploded")


def build_none():
    return Returns("none")


def build_nan():
    return Returns("nan")


def build_boom():
    return Returns("boom")


def boom():
    raise RuntimeError("factory exploded")
"""


@pytest.mark.parametrize("factory, words", [("none", "returned NoneType"), ("nan", "NaN/Inf"), ("boom", "exploded")])
def test_a_baseline_that_fails_is_an_error_and_exit_3(tmp_path, capsys, factory, words):
    (tmp_path / "bad.py").write_text(MODELS)
    out = tmp_path / "o.json"
    args = ["--model", f"{tmp_path / 'bad.py'}:build_{factory}", "--shape", "8", "--batch", "1", "--json", str(out)]
    code = run_cli(["optimize", *args, "--db", str(tmp_path / "o.db"), *FAST])
    capsys.readouterr()
    assert code == EXIT_CONFIGS_FAILED
    (entry,) = json.loads(out.read_text())["configs"]
    assert words in entry["error"] and entry["candidates"] == [] and entry["recommended"] == []


def test_a_raising_factory_is_an_error_config_and_the_finished_searches_are_kept(tmp_path, capsys):
    """The second model's factory raises: the first model's search is stored, the second is an error config,
    the run completes, exit 3 (as ``run`` does); the factory name ``boom`` is printed as written (no emoji)."""
    (tmp_path / "bad.py").write_text(MODELS)
    out, db = tmp_path / "o.json", tmp_path / "o.db"
    models = f"pinn-mlp,{tmp_path / 'bad.py'}:boom"
    args = ["--model", models, "--shape", "64", "--batch", "1", "--only", "channels_last", "--json", str(out)]
    code = run_cli(["optimize", *args, "--db", str(db), *FAST])
    printed = capsys.readouterr().out
    assert code == EXIT_CONFIGS_FAILED
    first, second = json.loads(out.read_text())["configs"]
    assert first["error"] is None and [c["name"] for c in first["candidates"]] == ["channels_last"]
    assert "factory exploded" in second["error"] and second["candidates"] == []
    # exit 3 is a config that failed: the label is the model's failure, naming the type its factory raised
    assert "RuntimeError" in second["error"] and "UsageError" not in second["error"]
    assert "UsageError" not in printed
    assert "bad.py:boom" in printed and "\N{COLLISION SYMBOL}" not in printed
    assert second["recommended"] == [] and "factory exploded" in printed  # the failure, in the recipe's place
    with ResultStore(db) as store:
        doc = json.loads(out.read_text())
        assert store.run_state(doc["baseline_run_id"]) == "complete"
        ok, failed = store.load_run(doc["baseline_run_id"]).results
        assert (ok.status, failed.status) == ("ok", "error")
        assert "RuntimeError" in failed.error and "UsageError" not in failed.error


def test_ctrl_c_keeps_the_finished_configs_and_their_documents(tmp_path, capsys, monkeypatch):
    calls = []
    search = api.optimize_config

    def second_interrupts(cfg, prepared, request, **kw):
        calls.append(cfg)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return search(cfg, prepared, request, **kw)

    monkeypatch.setattr(api, "optimize_config", second_interrupts)
    out, md, db = tmp_path / "o.json", tmp_path / "o.md", tmp_path / "o.db"
    args = ["--model", "pinn-mlp", "--shape", "64", "--batch", "1,2", "--only", "threads=1", "--json", str(out)]
    code = run_cli(["optimize", *args, "--markdown", str(md), "--db", str(db), *FAST])
    err = capsys.readouterr().err
    assert code == EXIT_INTERRUPTED and "interrupted" in err  # 1 of 2 configs: the document below
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and len(doc["configs"]) == 1 and doc["configs"][0]["batch"] == 1
    first = stored_line(doc).splitlines()[0]  # rendered from the fields above
    assert first.startswith("interrupted") and first in md.read_text()
    with ResultStore(db) as store:
        assert store.run_state(doc["baseline_run_id"]) == "interrupted"
        assert len(store.load_run(doc["baseline_run_id"]).results) == 1


def test_ctrl_c_during_the_fresh_check_keeps_the_recipe_and_the_finished_processes(tmp_path, capsys, monkeypatch):
    from surrobench.tune import fresh

    launched = []

    def one_run(command, tag, db, out):
        launched.append(tag)
        if len(launched) == 2:
            raise KeyboardInterrupt
        return [1.0, 1.1, 0.9], f"run-{len(launched)}"

    monkeypatch.setattr(fresh, "_one_run", one_run)
    found = api.optimize_config

    def with_recipe(cfg, prepared, request, **kw):  # a recipe, whatever this host's timing says
        from dataclasses import replace

        from surrobench.records.paired import Speedup

        entry = found(cfg, prepared, request, **kw)
        won = replace(entry.candidates[0], verdict="accepted", speedup=Speedup(1.5, (1.4, 1.6), 0.01))
        return replace(
            entry,
            candidates=(won,),
            recommended=("channels_last",),
            run_command="surrobench run --channels-last",
            recipe_result=entry.baseline,
            fresh_configs=(cfg.to_json(), cfg.to_json()),
        )

    monkeypatch.setattr(api, "optimize_config", with_recipe)
    out, db = tmp_path / "o.json", tmp_path / "o.db"
    # FAST's --processes 0: the search's own fresh processes would be launched by the same patched _one_run
    args = ["--model", "pinn-mlp", "--shape", "64", "--only", "channels_last", "--verify", "2"]
    args += ["--json", str(out)]
    code = run_cli(["optimize", *args, "--db", str(db), *FAST])
    printed = capsys.readouterr().out
    assert code == EXIT_INTERRUPTED and launched == ["fresh:baseline", "fresh:recipe"]
    (entry,) = json.loads(out.read_text())["configs"]
    assert entry["recommended"] == ["channels_last"]
    assert entry["fresh"]["verdict"] == "interrupted" and entry["fresh"]["run_ids"] == ["run-1"]
    assert entry["fresh"]["reason"] in printed


def test_a_finished_optimize_marks_its_runs_complete_and_says_when_nothing_was_left_to_verify(tmp_path, capsys):
    out, db = tmp_path / "o.json", tmp_path / "o.db"
    args = ["--model", "pinn-mlp", "--shape", "64", "--only", "channels_last", "--verify", "2", "--json", str(out)]
    code = run_cli(["optimize", *args, "--db", str(db), *FAST])
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert code == 0 and doc["verify"] == 2 and doc["configs"][0]["fresh"] is None
    assert "no recipe to check" in printed
    with ResultStore(db) as store:
        assert store.run_state(doc["baseline_run_id"]) == "complete"


def test_verify_is_bounded_and_the_busy_host_hint_fits_the_thread_count(tmp_path, capsys):
    code = run_cli(["optimize", "--model", "pinn-mlp", "--shape", "64", "--verify", "100000", *FAST])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("surrobench: error: --verify 100000: ") and "Traceback" not in err
    from surrobench.execution.env import busy_host_warning

    assert "1 thread," not in busy_host_warning(9.0, 2, 1) and "1 thread," in busy_host_warning(9.0, 2, 2)
