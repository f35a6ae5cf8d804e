"""Serve runs in ``history`` and ``show``: listed with their model, kind and counts, found by ``--model``,
shown as ``serve`` prints them, their serve-v1 JSON written with ``--json``."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

import pytest

from conftest import run_cli
from surrobench.api.compare import history, load_serve_run
from surrobench.api.serve import serve_policy, serve_request
from surrobench.records.serve import serve_from_json
from surrobench.report.history import contents
from surrobench.report.serve_tables import serve_markdown
from surrobench.records.run import created_now, created_utc
from surrobench.results.optimize import ConfigOptimization, OptimizeReport
from surrobench.results.optimize_store import add_optimization
from surrobench.results.serve_store import begin_serve, save_serve
from surrobench.results.store import ResultStore
from synthetic import PlantedService, config, latency_samples, run


def _record(run_id: str, created: str):
    """A serve run of pinn-mlp: two policies of two rates each over a planted 1 ms service."""
    request = serve_request(rates="100,200", max_batch="1,4", max_wait_ms=0, duration_s=1.0, p99_ms=50.0)
    policies = []
    for policy in request.policies:
        service = PlantedService(1.0)
        policies.append(serve_policy(request, policy, service, 0, service.new_clock))
    doc = {
        "schema": "surrobench/serve-v2",
        "run_id": run_id,
        "created": created,
        "tag": "serve-tag",
        "env": {"device_name": "cpu-x", "command_kind": "serve"},
        "workload": {"model": "pinn-mlp", "shape_label": "64", "precision": "fp32", "mode": "eager", "device": "cpu"},
        "url": None,
        "arrival": "poisson",
        "duration_s": 1.0,
        "warmup_s": 0.25,
        "seed": 0,
        "target_p99_ms": 50.0,
        "policies": [],
        "notes": ["a note"],
    }
    return replace(serve_from_json(doc), policies=tuple(policies))


@pytest.fixture
def db(tmp_path):
    """A serve run (complete), a serve run begun and never finished, and an ordinary fno2d run."""
    path = tmp_path / "r.db"
    with ResultStore(path) as store:
        done = _record("20261201-100000-serv", "2026-12-01T10:00:00")
        begin_serve(store, done, "surrobench serve ...")
        save_serve(store, done)
        begin_serve(store, replace(_record("20261201-110000-runn", "2026-12-01T11:00:00"), policies=()), None)
        ordinary = run(
            "20261201-090000-plai", [config(latency_samples(1.0, 0.01, seed=1))], created="2026-12-01T09:00:00"
        )
        store.begin_run(ordinary)
        store.add_result(ordinary.run_id, ordinary.results[0])
        store.finish_run(ordinary.run_id)
    return path


def test_history_lists_a_serve_run_with_its_model_and_what_it_holds(db):
    runs = {r.run_id: r for r in history(db)}
    served, begun, plain = runs["20261201-100000-serv"], runs["20261201-110000-runn"], runs["20261201-090000-plai"]
    assert (served.kind, served.models, served.n_policies, served.n_points) == ("serve", ("pinn-mlp",), 2, 4)
    assert (begun.kind, begun.models, begun.n_policies, begun.state) == ("serve", ("pinn-mlp",), 0, "running")
    assert (plain.kind, plain.models, plain.n_configs) == ("run", ("fno2d",), 1)
    assert contents(served) == "2 policies, 4 loads" and contents(plain) == "1 config"
    assert [r.run_id for r in history(db, model="pinn-mlp")] == ["20261201-110000-runn", "20261201-100000-serv"]
    assert [r.run_id for r in history(db, model="fno2d")] == ["20261201-090000-plai"]
    assert [r.run_id for r in history(db, model="pinn-mlp", tag="serve-tag", since="2026-12-01T10:30")] == [
        "20261201-110000-runn"
    ]


def test_history_json_carries_the_kind_and_counts(db, tmp_path):
    out = tmp_path / "h.json"
    assert run_cli(["history", "--db", str(db), "--model", "pinn-mlp", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [(r["kind"], r["models"], r["n_policies"], r["n_points"]) for r in doc["runs"]] == [
        ("serve", ["pinn-mlp"], 0, 0),
        ("serve", ["pinn-mlp"], 2, 4),
    ]


def test_show_of_a_serve_run_prints_its_tables_and_writes_its_serve_json(db, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    out, md = tmp_path / "s.json", tmp_path / "s.md"
    assert run_cli(["show", "20261201-100000", "--db", str(db), "--json", str(out), "--markdown", str(md)]) == 0
    printed = capsys.readouterr()
    record = load_serve_run("20261201-100000-serv", db)
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/serve-v2" and serve_from_json(doc) == record
    assert printed.out.count("offered rps") == 2  # one table per policy, as serve prints them
    assert "a note" in printed.err
    assert md.read_text() == serve_markdown(record)
    assert md.read_text().count("| offered rps |") == 2
    # the written file shows the same
    assert run_cli(["show", str(out)]) == 0
    assert capsys.readouterr().out.count("offered rps") == 2


def test_show_of_a_serve_run_still_running_says_no_load_was_measured(db, capsys):
    assert run_cli(["show", "20261201-110000", "--db", str(db)]) == 0
    assert "offered rps" not in capsys.readouterr().out


def _optimization(store: ResultStore) -> str:
    """An optimization of fno2d tagged ``mine`` (its baseline run ``mine:baseline``), stored as optimize stores it."""
    base = config(latency_samples(2.0, 0.01))
    baseline = run("20261201-103000-base", [base], created="2026-12-01T10:30:00+00:00", tag="mine:baseline")
    store.begin_run(baseline)
    store.add_result(baseline.run_id, base)
    store.finish_run(baseline.run_id)
    entry = ConfigOptimization(baseline=base, candidates=())
    env = {"device_name": "cpu-x"}
    report = OptimizeReport(
        "20261201-103000-opti", "2026-12-01T10:30:00+00:00", env, 0.01, 60.0, 2, baseline.run_id, None, (entry,)
    )
    add_optimization(store, report.to_json())
    return report.optimize_id


def test_history_lists_an_optimization_by_its_id_and_every_time_in_one_format(db):
    with ResultStore(db) as store:
        optimize_id = _optimization(store)
    runs = history(db)
    (optimized,) = [r for r in runs if r.kind == "optimize"]
    assert (optimized.run_id, optimized.models, optimized.tag, optimized.n_configs) == (
        optimize_id,
        ("fno2d",),
        "mine",
        1,
    )
    assert optimized.n_recipes == 0  # nothing recommended: searched, not "1 config optimized" (a fresh-user trial)
    assert contents(optimized) == "1 config searched, 0 recipes"
    assert contents(replace(optimized, n_recipes=1)) == "1 config optimized"
    # runs (UTC, with offset) and serve runs (stored as local time without one) in one format, newest first
    assert all(dt.datetime.fromisoformat(r.created).utcoffset() == dt.timedelta(0) for r in runs)
    assert [r.created for r in runs] == sorted((r.created for r in runs), reverse=True)
    assert [r.run_id for r in history(db, tag="mine")] == [optimize_id]
    assert optimize_id in [r.run_id for r in history(db, model="fno2d")]
    assert optimize_id not in [r.run_id for r in history(db, model="pinn-mlp")]


def test_created_is_written_in_one_format_and_read_in_both():
    assert dt.datetime.fromisoformat(created_now()).utcoffset() == dt.timedelta(0)
    assert created_utc("2026-12-01T10:00:00+01:00") == "2026-12-01T09:00:00+00:00"
    local = dt.datetime(2026, 12, 1, 10, 0, 0)  # an older serve run's datetime.now(), no offset
    assert created_utc(local.isoformat()) == local.astimezone(dt.timezone.utc).isoformat(timespec="seconds")
