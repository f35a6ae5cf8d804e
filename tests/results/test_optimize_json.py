"""An optimize document read back from the database is checked key by key: a v2 document needs every key, a
v1 one the keys v1 began with; a wrong type or a missing key is one line naming it."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import replace

import pytest
from synthetic import config, latency_samples

from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.config import InputSpec
from surrobench.records.schemas import DocumentError
from surrobench.results.optimize import (
    DOCUMENTS,
    CandidateResult,
    ConfigOptimization,
    FreshCheck,
    HeadToHead,
    OptimizeReport,
    Unconfirmed,
    config_from_json,
)
from surrobench.records.paired import Speedup
from surrobench.results.store import ResultStore
from surrobench.results.optimize_store import add_optimization, find_optimization, optimized_configs

SPEED = Speedup(2.0, (1.9, 2.1), 0.01)


def _base():
    return replace(config(latency_samples(2.0, 0.01)), inputs=(InputSpec((1, 3, 64, 64), "float32"),))


def _doc() -> dict:
    """A v2 document with every optional part filled: a timed and an untimed candidate, a head to head, a fresh
    check."""
    base = _base()
    timed = CandidateResult(
        "threads=1", "accepted", "planted", speedup=SPEED, result=config(latency_samples(1.0, 0.01))
    )
    entry = ConfigOptimization(
        baseline=base,
        candidates=(timed, CandidateResult("cudagraph", "infeasible", "needs CUDA")),
        recommended=("threads=1",),
        recipe_speedup=SPEED,
        recipe_window_speedups=(2.0, 1.9),
        head_to_head=HeadToHead("threads=1", "bf16", SPEED, "bf16"),
        unconfirmed=Unconfirmed("threads=1+bf16", Speedup(1.1, (0.9, 1.3), 0.02), 5),
        fresh=FreshCheck(2, "reproduced", "planted", SPEED, (2.0, 2.1), (1.0, 1.1), ("r1", "r2")),
        not_tried=(("compile", "budget of 1 s spent"),),
    )
    report = OptimizeReport("o1", "2026-12-01T00:00:00+00:00", {}, 0.01, 120.0, 6, "b1", "r1", (entry,), 2)
    return report.to_json()


def test_a_written_document_reads_back_whole():
    doc = _doc()
    schemas.check(doc, DOCUMENTS)
    assert doc["schema"] == schemas.OPTIMIZE and doc["configs"][0]["candidates"][1].get("speedup") is None


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("configs", 0, "batch"), "1", "configs[0].batch: expected a whole number >= 0, got '1'"),
        (("configs", 0, "candidates", 0, "verdict"), "won", "configs[0].candidates[0].verdict: 'won' is not one of"),
        (("configs", 0, "candidates", 0, "speedup", "ci95"), [1.9], "candidates[0].speedup.ci95: expected [low, high]"),
        (("configs", 0, "recipe", "windows"), -1, "configs[0].recipe.windows: expected a whole number >= 0"),
        (("configs", 0, "head_to_head", "kept"), None, "configs[0].head_to_head.kept: expected a string, got NoneType"),
        (("configs", 0, "fresh", "verdict"), "maybe", "configs[0].fresh.verdict: 'maybe' is not one of reproduced"),
        (("configs", 0, "inputs", 0, "shape"), "1x3", "configs[0].inputs[0].shape: expected a list, got str"),
        (("interrupted",), "no", "interrupted: expected true or false, got str"),
        (("tolerance",), None, "tolerance: expected a number, got NoneType"),
        (("schema",), "surrobench/optimize-v9", "schema: 'surrobench/optimize-v9' is not 'surrobench/optimize-v3'"),
    ],
)
def test_a_wrong_type_is_named_by_its_key_path(path, value, message):
    doc = _doc()
    *parents, key = path
    target = doc
    for p in parents:
        target = target[p]
    target[key] = value
    with pytest.raises(DocumentError, match=re.escape(message)):
        schemas.check(doc, DOCUMENTS)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("verify",), "top level: missing key(s) verify"),
        (("configs", 0, "inputs"), "configs[0]: missing key(s) inputs"),
        (("configs", 0, "recipe", "process_speedups"), "configs[0].recipe: missing key(s) process_speedups"),
        (("configs", 0, "candidates", 0, "baseline_ms"), "configs[0].candidates[0]: missing key(s) baseline_ms"),
    ],
)
def test_a_v2_document_needs_every_key(path, message):
    doc = _doc()
    *parents, key = path
    target = doc
    for p in parents:
        target = target[p]
    del target[key]
    with pytest.raises(DocumentError, match=f"^{re.escape(message)}$"):
        schemas.check(doc, DOCUMENTS)


def _v1(doc: dict) -> dict:
    """The document as an early optimize-v1 one: no inputs, none of the keys added during v1."""
    old = copy.deepcopy(doc) | {"schema": schemas.OPTIMIZE_V1}
    for key in ("verify", "interrupted", "warnings"):
        del old[key]
    for entry in old["configs"]:
        for key in ("inputs", "settings", "label", "head_to_head", "cut_short", "fresh"):
            del entry[key]
        entry["recipe"] = {k: entry["recipe"][k] for k in ("code", "run_command")}
        for c in entry["candidates"]:
            del c["baseline_ms"]
    return old


def test_an_optimize_v1_document_still_reads_and_its_later_keys_are_still_checked():
    old = _v1(_doc())
    schemas.check(old, DOCUMENTS)
    old["configs"][0]["fresh"] = {"pairs": "2"}  # a key added during v1 is checked where it is present
    with pytest.raises(DocumentError, match=r"^configs\[0\]\.fresh: missing key\(s\) verdict"):
        schemas.check(old, DOCUMENTS)
    del old["configs"][0]["fresh"], old["configs"][0]["notes"]  # a key v1 began with is required
    with pytest.raises(DocumentError, match=r"^configs\[0\]: missing key\(s\) notes$"):
        schemas.check(old, DOCUMENTS)


def test_the_database_checks_what_it_reads_and_says_which_key_is_wrong(tmp_path):
    doc, old = _doc(), _v1(_doc()) | {"optimize_id": "o0", "created": "2026-11-01T00:00:00+00:00"}
    with ResultStore(tmp_path / "o.db") as store:
        add_optimization(store, old)
        add_optimization(store, doc)
        assert (
            find_optimization(store, "o0") == OptimizeReport.from_json(old).to_json()
            and find_optimization(store, "o1") == doc
        )
        (entry,) = doc["configs"]
        base = _base()
        got = optimized_configs(store, base)
        assert got[0] == entry | {"optimize_id": "o1", "tolerance": doc["tolerance"]}  # newest first
        assert [e["optimize_id"] for e in got] == ["o1", "o0"]
        bad = copy.deepcopy(doc)
        bad["configs"][0]["batch"] = "one"
        store.conn.execute("UPDATE optimizations SET report_json = ? WHERE optimize_id = 'o1'", (json.dumps(bad),))
        store.conn.execute(
            "UPDATE optimize_configs SET config_json = ? WHERE optimize_id = 'o1'", (json.dumps(bad["configs"][0]),)
        )
        with pytest.raises(UsageError, match=r"configs\[0\]\.batch: expected a whole number >= 0, got 'one'"):
            find_optimization(store, "o1")
        with pytest.raises(UsageError, match=r"config\.batch: expected a whole number >= 0, got 'one'"):
            optimized_configs(store, base)


def test_the_newest_complete_optimization_is_the_one_cited(tmp_path):
    """A newer optimization cut short (Ctrl-C, or one still running) is not the config's measured remedies."""
    doc = _doc()
    cut = copy.deepcopy(doc) | {"optimize_id": "o2", "created": "2026-12-02T00:00:00+00:00", "interrupted": True}
    cut["configs"][0]["recommended"] = ["bf16"]
    base = _base()
    with ResultStore(tmp_path / "o.db") as store:
        add_optimization(store, doc)
        add_optimization(store, cut)
        (got,) = optimized_configs(store, base)
        assert got["recommended"] == ["threads=1"]
        add_optimization(store, cut | {"interrupted": False})  # once it finished, it is the newest
        got = optimized_configs(store, base)
        assert [(e["optimize_id"], e["recommended"]) for e in got] == [("o2", ["bf16"]), ("o1", ["threads=1"])]
        failed = copy.deepcopy(doc) | {"optimize_id": "o3", "created": "2026-12-03T00:00:00+00:00"}
        failed["configs"][0] |= {"error": "ValueError: the factory raised", "candidates": [], "recommended": []}
        failed["configs"][0]["baseline"] |= {"median_ms": None, "p95_ms": None, "setup_s": None}
        add_optimization(store, failed)  # a baseline that never ran: nothing measured to cite
        got = optimized_configs(store, base)
        assert [e["optimize_id"] for e in got] == ["o2", "o1"]


def test_not_faster_is_its_own_verdict_from_v3_and_a_v2_document_still_reads():
    """v3 tells a candidate inside the noise (``rejected_not_faster``) from one slower by the rule; a v2 document,
    whose ``rejected_slower`` held both, reads as written and may not hold the v3 verdict."""
    doc = _doc()
    doc["configs"][0]["candidates"][0]["verdict"] = "rejected_not_faster"
    schemas.check(doc, DOCUMENTS)
    v2 = copy.deepcopy(doc) | {"schema": schemas.OPTIMIZE_V2}
    with pytest.raises(DocumentError, match=r"^configs\[0\]\.candidates\[0\]\.verdict: "):
        schemas.check(v2, DOCUMENTS)
    v2["configs"][0]["candidates"][0]["verdict"] = "rejected_slower"
    schemas.check(v2, DOCUMENTS)


def test_an_unconfirmed_recipe_is_a_structured_field_from_v3():
    """v3 keeps the recipe whose pooled windows did not hold (name, pooled speedup, windows), not only its note;
    a v3 config must have the key (null when none), a v2 one need not."""
    doc = _doc()
    assert doc["configs"][0]["unconfirmed"] == {
        "name": "threads=1+bf16",
        "speedup": {"median": 1.1, "ci95": [0.9, 1.3], "noise_floor": 0.02},
        "windows": 5,
        "accepted": [],  # none in this planted record; a document written before the key reads as none
    }
    doc["configs"][0]["unconfirmed"]["windows"] = "five"
    with pytest.raises(DocumentError, match=r"^configs\[0\]\.unconfirmed\.windows: "):
        schemas.check(doc, DOCUMENTS)
    del doc["configs"][0]["unconfirmed"]
    with pytest.raises(DocumentError, match="missing key"):
        schemas.check(doc, DOCUMENTS)
    schemas.check(doc | {"schema": schemas.OPTIMIZE_V2}, DOCUMENTS)


def test_why_nothing_is_recommended_is_one_word_read_from_the_record():
    slower = CandidateResult("threads=1", "rejected_slower", "planted", speedup=Speedup(0.5, (0.4, 0.6), 0.01))
    untimed = CandidateResult("cudagraph", "infeasible", "needs CUDA")
    nothing = ConfigOptimization(baseline=_base(), candidates=(slower, untimed))
    assert config_from_json(_doc()["configs"][0]).nothing_because is None
    assert nothing.nothing_because == "none_faster"
    assert replace(nothing, candidates=(untimed,)).nothing_because == "untimed"
    assert replace(nothing, candidates=(untimed,), not_tried=(("compile", "budget"),)).nothing_because == "budget"
    assert replace(nothing, candidates=(replace(slower, verdict="accepted"),)).nothing_because == "unconfirmed"
    assert replace(nothing, cut_short=True).nothing_because == "interrupted"
    assert replace(nothing, error="CUDA out of memory").nothing_because == "baseline_failed"


def test_an_optimization_id_given_for_a_run_is_named_as_one(tmp_path):
    with ResultStore(tmp_path / "o.db") as store:
        add_optimization(store, _doc())
        with pytest.raises(UsageError) as raised:
            store.resolve_run_id("o1")
        assert "is an optimization" in str(raised.value)
        with pytest.raises(UsageError) as raised:
            store.resolve_run_id("nothing")
        assert "is an optimization" not in str(raised.value)


def test_show_reads_an_optimize_json_file(tmp_path):
    import surrobench

    path = tmp_path / "opt.json"
    path.write_text(json.dumps(_doc()))
    assert surrobench.load(str(path), db=tmp_path / "none.db") == OptimizeReport.from_json(_doc()).to_json()
    with pytest.raises(UsageError):
        surrobench.load(None)  # a TypeError before
