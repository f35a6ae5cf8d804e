"""A capacity optimization is stored as an optimization (on completion and when interrupted), listed by
``history``, read back by ``load``/``show`` as its capacity-v1 document; a latency optimization beside it reads as
before. Through the API on a tiny model, the search's candidates and loads planted."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
from conftest import run_cli
from synthetic import config, latency_samples, run

from surrobench.analysis.accuracy import AccuracyVerdict
from surrobench.api import capacity as api_capacity
from surrobench.api.capacity import Evaluated
from surrobench.api.compare import history, load
from surrobench.api.optimize import optimize
from surrobench.errors import Interrupted
from surrobench.execution.remedies import Remedy
from surrobench.records import schemas
from surrobench.records.serve import Capacity, CapacityOptimization, PolicyResult, UnloadedLatency
from surrobench.report.optimize import capacity_lines
from surrobench.results.optimize import ConfigOptimization, OptimizeReport
from surrobench.results.optimize_store import add_optimization, find_optimization, optimizations_of_runs
from surrobench.results.store import ResultStore

ARGS = dict(shapes="64", device="cpu", threads=1, warmup=1, max_batch=1, max_wait_ms=0.0)


def _planted(monkeypatch, *, cut: bool = False) -> None:
    """The search of "fast" (half the baseline's service time, predicted twice its capacity) on planted unloaded
    latencies, the baseline verified as serve run "run-base" (300 rps) and "fast" as "run-top" (600 rps), or cut
    by Ctrl-C while "fast" is verified (its serve run "run-cut")."""
    search = api_capacity.capacity_search
    monkeypatch.setattr(api_capacity, "predict_capacity", lambda u, p, *a: 200.0 / u[1].back_to_back_ms[0])

    def evaluate(recipe):
        ms = 2.0 if not recipe.remedies else 1.0
        unloaded = UnloadedLatency(1, 1.0, (ms,) * 8, tuple(ms + 0.001 * i for i in range(40)))
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "planted", 0.0, 0.0), {1: unloaded})

    def verify(recipe, settings, policy):
        if not recipe.remedies:
            return "run-base", PolicyResult(policy, (), Capacity(8.0, 300.0, 330.0, ()))
        if cut:
            raise Interrupted("interrupted: stored as run run-cut", SimpleNamespace(run_id="run-cut"))
        return "run-top", PolicyResult(policy, (), Capacity(8.0, 600.0, 660.0, ()))

    fast = Remedy("fast", (("precision", "fast"),), ("cpu",), "fast", ())
    monkeypatch.setattr(
        api_capacity,
        "capacity_search",
        lambda _, policies, target, *__, **options: search([fast], policies, target, evaluate, verify, **options),
    )


def _base_run(db) -> None:
    """The baseline's serve run as a stored run on device "cpu-x" (its device named in history)."""
    with ResultStore(db) as store:
        store.begin_run(run("run-base", [], device_name="cpu-x", tag="capacity:baseline baseline"))
        store.finish_run("run-base")


def test_a_capacity_optimization_is_stored_listed_and_shown(tmp_path, monkeypatch, capsys):
    _planted(monkeypatch)
    db, out, md = tmp_path / "r.db", tmp_path / "c.json", tmp_path / "c.md"
    _base_run(db)
    found = optimize("pinn-mlp", objective="capacity", p99_ms=8.0, db=db, **ARGS)
    assert found.recipe == "fast" and found.optimize_id and found.created
    doc = json.loads(json.dumps(found.to_json()))
    with ResultStore(db) as store:
        assert find_optimization(store, found.optimize_id) == doc
        row = store.conn.execute("SELECT optimize_id, baseline_run_id, recipe_run_id FROM optimizations").fetchall()
        assert row == [(found.optimize_id, "run-base", "run-top")]
        assert optimizations_of_runs(store, ["run-base", "run-top"]) == []  # not an optimize report
    (listed,) = [r for r in history(db) if r.kind == "optimize"]
    assert (listed.run_id, listed.models, listed.n_configs, listed.n_failed) == (found.optimize_id, ("pinn-mlp",), 1, 0)
    assert (listed.state, listed.device_name, listed.tag) == ("complete", "cpu-x", None)
    assert [r.run_id for r in history(db, model="pinn-mlp") if r.kind == "optimize"] == [found.optimize_id]
    assert [r for r in history(db, model="fno2d") if r.kind == "optimize"] == []
    assert load(found.optimize_id[:-1], db) == doc
    assert run_cli(["show", found.optimize_id, "--db", str(db), "--json", str(out), "--markdown", str(md)]) == 0
    shown = capsys.readouterr().out
    assert found.optimize_id in shown and "recipe: fast" in shown
    assert CapacityOptimization.from_json(json.loads(out.read_text())) == found  # show --json round-trips
    assert md.read_text().splitlines()[1:-1] == capacity_lines(found)


def test_an_interrupted_capacity_optimization_is_stored_partial(tmp_path, monkeypatch):
    _planted(monkeypatch, cut=True)
    db = tmp_path / "r.db"
    with pytest.raises(Interrupted) as info:
        optimize("pinn-mlp", objective="capacity", p99_ms=8.0, db=db, **ARGS)
    partial = info.value.partial
    assert isinstance(partial, CapacityOptimization) and partial.recipe is None and partial.optimize_id
    assert any(line.endswith(f"stored as optimization {partial.optimize_id}") for line in capacity_lines(partial))
    with ResultStore(db) as store:
        assert find_optimization(store, partial.optimize_id) == json.loads(json.dumps(partial.to_json()))
    (listed,) = [r for r in history(db) if r.kind == "optimize"]
    assert (listed.run_id, listed.state, listed.device_name) == (partial.optimize_id, "interrupted", None)


def test_a_capacity_optimization_whose_baseline_failed_is_listed_failed_not_interrupted(tmp_path):
    from surrobench.records.serve import CapacityCandidate

    db = tmp_path / "r.db"
    failed = CapacityCandidate("baseline", {}, None, "RuntimeError: planted")
    record = CapacityOptimization({"model": "fno2d"}, 5.0, 0.01, (failed,), "baseline", None, 1.0)
    with ResultStore(db) as store:
        add_optimization(store, record.to_json() | {"optimize_id": "c1", "created": "2026-12-01T11:00:00+00:00"})
        cut = replace(record, candidates=(replace(failed, accurate=True, accuracy="planted"),))
        add_optimization(store, cut.to_json() | {"optimize_id": "c2", "created": "2026-12-01T12:00:00+00:00"})
    listed = {r.run_id: (r.state, r.n_configs, r.n_failed) for r in history(db)}
    assert listed == {"c1": ("complete", 1, 1), "c2": ("interrupted", 1, 0)}


def test_a_latency_optimization_beside_a_capacity_one_reads_as_before(tmp_path):
    db = tmp_path / "r.db"
    base = config(latency_samples(2.0, 0.01))
    report = OptimizeReport(
        "o1", "2026-12-01T10:30:00+00:00", {"device_name": "cpu-x"}, 0.01, 60.0, 2, "b1", None,
        (ConfigOptimization(baseline=base, candidates=()),),
    ).to_json()  # fmt: skip
    with ResultStore(db) as store:  # an older database: optimize reports alone
        add_optimization(store, report)
        assert find_optimization(store, "o1") == report and optimizations_of_runs(store, ["b1"]) == [report]
    before = history(db)
    capacity = CapacityOptimization({"model": "fno2d"}, 5.0, 0.01, (), "baseline", "baseline", 1.0, "b1")
    with ResultStore(db) as store:
        add_optimization(store, capacity.to_json() | {"optimize_id": "c1", "created": "2026-12-01T11:00:00+00:00"})
        assert find_optimization(store, "o1") == report and optimizations_of_runs(store, ["b1"]) == [report]
        assert find_optimization(store, "c1")["schema"] == schemas.CAPACITY
    after = history(db)
    assert [r.run_id for r in after] == ["c1", "o1"] and after[1:] == before
    assert load("o1", db) == report


def test_a_capacity_optimization_the_database_did_not_take_is_kept_and_imported(tmp_path, monkeypatch):
    from surrobench.api.compare import import_run
    from surrobench.errors import StoreWriteError, Unsaved

    _planted(monkeypatch)
    db = tmp_path / "r.db"
    _base_run(db)

    def full(store, report):
        raise StoreWriteError("disk full", path=str(db), cause="disk full")

    monkeypatch.setattr(api_capacity, "add_optimization", full)
    with pytest.raises(Unsaved) as cut:
        optimize("pinn-mlp", objective="capacity", p99_ms=8.0, db=db, **ARGS)
    doc = cut.value.document
    assert doc["schema"] == schemas.CAPACITY and doc["recipe"] == "fast" and cut.value.record_id == doc["optimize_id"]
    (tmp_path / "kept.json").write_text(json.dumps(doc))
    imported = import_run(tmp_path / "kept.json", db=db)
    assert (imported.record_id, imported.added) == (doc["optimize_id"], 1)
    with ResultStore(db) as store:
        assert find_optimization(store, doc["optimize_id"]) == doc


def test_history_says_an_interrupted_optimization_searched_not_optimized():
    from dataclasses import replace as with_

    from surrobench.report.history import contents
    from surrobench.results.store import RunSummary

    row = RunSummary("o", "2026-12-06T00:00:00+00:00", None, "cpu", ("m",), 1, 0, kind="optimize", n_recipes=1)
    assert contents(row).endswith("optimized") and contents(with_(row, state="interrupted")).endswith("1 recipe")
