"""Every input's shape and dtype is part of a config's identity: in its label, its key, compare's pairing, the
run JSON (run-v2 ``inputs``) and the database; run-v1 documents and older databases still read, identified by
their primary input alone."""

from __future__ import annotations

import json
from dataclasses import replace
import sqlite3

import torch
from torch import nn

import surrobench
from surrobench.tune.plans import measured_for
from surrobench.records import schemas
from surrobench.records.config import InputSpec
from surrobench.records.run import run_from_json
from surrobench.results.compare import LEGACY_PAIRING_NOTE, compare_runs
from surrobench.results.optimize import ConfigOptimization
from surrobench.results.store import ResultStore
from surrobench.results.optimize_store import add_optimization

SMALL = {"batches": [1], "device": "cpu", "warmup": 1, "iters": 3, "input_sets": 1}


class BranchTrunk(nn.Module):
    """DeepONet-like: sensors ``u: (B, 100)`` first, query points ``y: (N, 2)`` second; output ``(B, N)``."""

    def __init__(self) -> None:
        super().__init__()
        self.branch, self.trunk = nn.Linear(100, 4), nn.Linear(2, 4)

    def forward(self, u: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.branch(u) @ self.trunk(y).T

    @staticmethod
    def example_inputs(batch: int, shape) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(batch, 100), torch.randn(shape, 2)


def _run(shapes):
    return surrobench.benchmark(BranchTrunk(), shapes=shapes, **SMALL)


def test_configs_that_differ_only_in_a_later_input_are_two_configs():
    run = _run([16, 64])
    first, second = run.results
    assert first.input_shape == second.input_shape == (1, 100)  # the primary input alone cannot tell them apart
    assert first.inputs == (InputSpec((1, 100), "float32"), InputSpec((16, 2), "float32"))
    assert second.inputs[1] == InputSpec((64, 2), "float32")
    assert first.key() != second.key()
    assert first.label() != second.label() and "16x2" in first.shape_text()


def test_compare_pairs_each_config_with_its_own_inputs():
    base, new = _run([16, 64]), _run([64, 16])
    cmp = compare_runs(base, new)
    assert [(c.base.inputs, c.new.inputs) for c in cmp.configs] == [(b.inputs, b.inputs) for b in base.results]
    assert not cmp.only_base and not cmp.only_new
    assert all(LEGACY_PAIRING_NOTE not in c.notes for c in cmp.configs)


def test_compare_json_names_every_input_of_each_entry():
    base, new = _run([16, 64]), _run([64, 256])
    doc = json.loads(json.dumps(compare_runs(base, new).to_json()))
    assert doc["schema"] == schemas.COMPARE == "surrobench/compare-v2"
    (entry,) = doc["configs"]
    assert entry["inputs"]["base"] == entry["inputs"]["new"] == [spec.to_json() for spec in base.results[1].inputs]
    # one side only: the primary inputs agree, so the entries differ in their inputs alone
    (gone,), (added,) = doc["only_base"], doc["only_new"]
    assert gone["input_shape"] == added["input_shape"] == [1, 100]
    assert gone["inputs"][1] == {"shape": [16, 2], "dtype": "float32"}
    assert added["inputs"][1] == {"shape": [256, 2], "dtype": "float32"}
    assert entry["verdict"] in doc["verdict_counts"]


def test_run_json_carries_every_input_and_reads_back():
    run = _run([16])
    doc = json.loads(json.dumps(run.to_json()))
    assert doc["schema"] == schemas.RUN == "surrobench/run-v5"
    assert doc["results"][0]["inputs"] == [
        {"shape": [1, 100], "dtype": "float32"},
        {"shape": [16, 2], "dtype": "float32"},
    ]
    assert run_from_json(doc).results[0].key() == run.results[0].key()


def test_a_run_v1_document_reads_with_its_primary_input_and_pairs_on_it():
    run = surrobench.benchmark("fno2d", shapes=[8], **SMALL)
    doc = json.loads(json.dumps(run.to_json()))
    doc["schema"] = schemas.RUN_V1
    for entry in doc["results"]:
        del entry["inputs"]
    old = run_from_json(doc)
    assert old.results[0].inputs == (InputSpec(run.results[0].input_shape, None),)
    cmp = compare_runs(old, run)
    assert len(cmp.configs) == 1 and LEGACY_PAIRING_NOTE in cmp.configs[0].notes
    inputs = cmp.to_json()["configs"][0]["inputs"]  # each side as it was recorded
    assert inputs["base"] == [{"shape": list(run.results[0].input_shape), "dtype": None}]
    assert inputs["new"] == [spec.to_json() for spec in run.results[0].inputs]


def test_the_database_keeps_every_input_and_migrates_old_rows_with_their_primary_input(tmp_path):
    db = tmp_path / "r.db"
    run = surrobench.benchmark(BranchTrunk(), shapes=[16], db=db, **SMALL)
    with ResultStore(db) as store:
        assert store.load_run(run.run_id).results[0].inputs == run.results[0].inputs
    conn = sqlite3.connect(db)  # back to schema 2: no inputs column
    conn.execute("ALTER TABLE configs DROP COLUMN inputs_json")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with ResultStore(db) as store:
        (old,) = store.load_run(run.run_id).results
    assert old.inputs == (InputSpec((1, 100), None),)
    assert old.label() == run.results[0].label().replace(",16x2", "")


def test_deeponet_of_the_zoo_names_both_inputs():
    (result,) = surrobench.benchmark("deeponet", shapes=[32], **SMALL).results
    assert [spec.shape for spec in result.inputs] == [(32, 2), (1, 100)]
    assert result.shape_text() == "32x2,1x100"


def _store_optimization(store, run_id, result, recipe, created, *, v1=False):
    """An optimize report of one config, ``result``, whose recipe is ``recipe`` (an optimize-v1 one: no inputs)."""
    entry = ConfigOptimization(baseline=result, recommended=(recipe,)).to_json()
    if v1:
        del entry["inputs"]
    report = {"schema": schemas.OPTIMIZE_V1 if v1 else schemas.OPTIMIZE, "optimize_id": recipe, "created": created}
    report |= {"baseline_run_id": run_id, "recipe_run_id": None}
    add_optimization(store, {**report, "configs": [entry]})


def test_diagnose_cites_the_optimization_of_its_own_inputs_only(tmp_path):
    db = tmp_path / "r.db"
    run = surrobench.benchmark(BranchTrunk(), shapes=[16, 64], db=db, **SMALL)
    n16, n64 = run.results
    with ResultStore(db) as store:
        _store_optimization(store, run.run_id, n16, "threads=1", "2026-12-01T00:00:00+00:00")
        _store_optimization(store, run.run_id, n64, "compile", "2026-12-02T00:00:00+00:00")  # newer, same primary
        measured = measured_for(store, run.results)
    assert measured[n16.label()]["recommended"] == ["threads=1"]
    assert measured[n64.label()]["recommended"] == ["compile"]
    assert measured[n64.label()]["inputs"] == [spec.to_json() for spec in n64.inputs]


def test_diagnose_cites_the_optimization_of_its_own_settings_only(tmp_path):
    """A fresh-user trial: a ``--threads 1`` diagnose cited the optimization of the default-threads config (its
    "threads=1 1.005x" among them): two optimizations of one workload differing only in threads each belong to
    their own config, and a config of another precision or mode has none."""
    db = tmp_path / "r.db"
    run = surrobench.benchmark("fno2d", shapes=[8], db=db, **SMALL)
    (timed,) = run.results
    plain = replace(timed, extra=timed.extra | {"torch_threads": 2})  # torch's default here: 2 threads
    one = replace(plain, extra=plain.extra | {"threads": 1, "torch_threads": 1})
    with ResultStore(db) as store:
        _store_optimization(store, run.run_id, plain, "threads=1", "2026-12-01T00:00:00+00:00")
        _store_optimization(store, run.run_id, one, "compile", "2026-12-02T00:00:00+00:00")  # newer
        assert [e["recommended"] for e in measured_for(store, (plain,)).values()] == [["threads=1"]]
        assert [e["recommended"] for e in measured_for(store, (one,)).values()] == [["compile"]]
        assert measured_for(store, (replace(plain, precision="bf16"), replace(one, mode="compile"))) == {}


def test_an_optimize_v1_entry_is_cited_for_a_single_input_config_only(tmp_path):
    db = tmp_path / "r.db"
    multi = surrobench.benchmark(BranchTrunk(), shapes=[16], db=db, **SMALL)
    single = surrobench.benchmark("fno2d", shapes=[8], db=db, **SMALL)
    with ResultStore(db) as store:
        _store_optimization(store, multi.run_id, multi.results[0], "compile", "2026-12-01T00:00:00+00:00", v1=True)
        _store_optimization(store, single.run_id, single.results[0], "threads=1", "2026-12-01T00:00:00+00:00", v1=True)
        # the v1 entry knows the primary (1, 100) alone: it cannot say which N it measured
        assert measured_for(store, multi.results) == {}
        assert measured_for(store, single.results)[single.results[0].label()]["recommended"] == ["threads=1"]


def test_a_run_v3_document_keeps_each_results_settings_and_a_run_v2_one_still_reads():
    """run-v3 carries the settings outside the config key and the rounds, so a run read back from its file keeps
    its label and compare can name what differs; a run-v2 document, without them, reads as before."""
    run = surrobench.benchmark("fno2d", shapes=[8], **SMALL)
    (result,) = run.results
    short = replace(result, extra={**result.extra, "channels_last": True, "rounds": 1, "rounds_planned": 3})
    doc = json.loads(json.dumps(replace(run, results=(short,)).to_json()))
    entry = doc["results"][0]
    assert entry["settings"] == {"channels_last": True} and (entry["rounds"], entry["rounds_planned"]) == (1, 3)
    back = run_from_json(doc).results[0]
    assert back.label() == short.label() and back.extra["rounds_planned"] == 3
    assert compare_runs(run, run_from_json(doc)).configs[0].notes[0].startswith("settings differ")
    for key in ("settings", "rounds", "rounds_planned"):
        del entry[key]
    doc["schema"] = schemas.RUN_V2
    assert run_from_json(doc).results[0].key() == result.key()
