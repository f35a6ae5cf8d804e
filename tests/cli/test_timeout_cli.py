"""``run --timeout-s``: the config over it is stored as ``timeout`` and the sweep goes on to the next (exit 3)."""

from __future__ import annotations

import json

from conftest import run_cli

from surrobench.results.store import ResultStore

# the forward sleeps 50 ms per sample of the batch: batch 1 fits the limit, batch 8 does not
SLOW_BY_BATCH = """
import time
import torch


class SlowByBatch(torch.nn.Module):
    def forward(self, x):
        time.sleep(0.05 * x.shape[0])
        return x * 2


def build():
    return SlowByBatch()
"""


def test_a_config_over_the_limit_is_stored_as_timeout_and_the_sweep_goes_on(tmp_path):
    model, db, out = tmp_path / "slow.py", tmp_path / "r.db", tmp_path / "run.json"
    model.write_text(SLOW_BY_BATCH)
    argv = ["run", "--model", f"{model}:build", "--shape", "4", "--batch", "8,1", "--device", "cpu"]
    argv += ["--warmup", "0", "--iters", "3", "--input-sets", "1", "--timeout-s", "1", "--db", str(db)]
    assert run_cli([*argv, "--json", str(out)]) == 3
    doc = json.loads(out.read_text())
    assert [(r["batch"], r["status"]) for r in doc["results"]] == [(8, "timeout"), (1, "ok")]
    assert "--timeout-s" in doc["results"][0]["error"]
    with ResultStore(db) as store:
        stored = store.load_run(doc["run_id"])
        assert [r.status for r in stored.results] == ["timeout", "ok"] and store.run_state(doc["run_id"]) == "complete"


def test_a_multi_process_run_refuses_a_limit(tmp_path, capsys):
    argv = ["run", "--model", "pinn-mlp", "--nproc", "2", "--timeout-s", "5", "--db", str(tmp_path / "r.db")]
    assert run_cli(argv) == 2 and "--timeout-s" in (err := capsys.readouterr().err) and "multi-process" in err
