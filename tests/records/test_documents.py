"""Every document kind, in every stored version, reads into its record and writes back as the current version;
the current version written reads back equal. Old versions are kept fixtures (``tests/fixtures/h200``,
``tests/fixtures/documents``) or a current document with the keys its version lacked taken out."""

from __future__ import annotations

import copy
import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
from synthetic import config, latency_samples, multi_rank_rows, run

from surrobench.records import schemas
from surrobench.records.ceilings import Ceilings
from surrobench.records.config import InputSpec
from surrobench.records.findings import Diagnosis
from surrobench.records.run import run_from_json
from surrobench.records.serve import (
    Capacity,
    CapacityCandidate,
    CapacityOptimization,
    LoadPoint,
    Percentile,
    PolicyResult,
    SearchStep,
    ServePolicy,
    ServeRecord,
    UnloadedLatency,
    serve_from_json,
)
from surrobench.records.versus import VersusRecord
from surrobench.results.optimize import OptimizeReport

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _load(name: str) -> dict:
    path = FIXTURES / name
    return json.load(gzip.open(path) if path.suffix == ".gz" else path.open())


def _without(doc: dict, schema: str, top=(), each=None, where="results") -> dict:
    """``doc`` as version ``schema``: ``top`` keys out of the document and ``each`` out of every ``where`` object."""
    old = copy.deepcopy(doc) | {"schema": schema}
    for key in top:
        old.pop(key, None)
    for item in old[where]:
        for key in each or ():
            item.pop(key, None)
    return old


def _run() -> dict:
    ok = replace(
        config(latency_samples(2.0, 0.01, n=5)),
        inputs=(InputSpec((1, 3, 64, 64), "float32"),),
        extra={"rounds": 2, "rounds_planned": 3, "channels_last": True},
    )
    return run("r1", (ok, config((), status="error"))).to_json()


def _ranked_run() -> dict:
    """A two-rank run of one config (its reference, ranks and step rows): its document has a scaling row."""
    ranks = [latency_samples(2.2, 0.01, n=8, seed=s) for s in (1, 2)]
    return run("r2", multi_rank_rows(latency_samples(2.0, 0.01, n=8), ranks, samples_per_step=2)).to_json()


def _serve() -> dict:
    point = LoadPoint(
        "poisson", 100.0, None, 99.0, 98.5, 500, 20, 0, 3, (Percentile(0.99, 4.2, (3.9, None), 5),), 5.1, 2.0,
        0.1, 0.9, 1.5, 2.0, 0.6, 0.01, 0.2, True, 497, 0.99, {"timeout": 1},
    )  # fmt: skip
    capacity = Capacity(5.0, 90.0, 95.0, (SearchStep(90.0, 4.1, True, "bound"),), 92.0, None, 3.5)
    record = ServeRecord(
        "s1", "2026-12-01T00:00:00+00:00", None, {}, {"model": "fno2d"}, None, "poisson", 5.0, 0.5, 0, 5.0,
        (PolicyResult(ServePolicy(4, 1.0), (point,), capacity),), ("planted",),
        (UnloadedLatency(1, 0.0, (1.2, 1.3), (1.1, 1.2)),),
    )  # fmt: skip
    return record.to_json()


def _serve_v1(doc: dict) -> dict:
    old = _without(doc, schemas.SERVE_V1, top=("unloaded", "best_policy"), where="policies")
    for p in old["policies"]:
        for point in p["points"]:
            for key in ("completed", "slo_attainment", "errors"):
                del point[key]
        p["capacity"] = {k: p["capacity"][k] for k in ("target_p99_ms", "capacity_rps", "failing_rps", "steps")}
    return old


def _capacity() -> dict:
    base = CapacityCandidate("baseline", {"precision": "fp32"}, True, "exact", {"batch<=4": 90.0}, ServePolicy(4, 1.0))
    top = CapacityCandidate("cudagraph", {"mode": "cudagraph"}, True, "rel L2 1e-7", {"batch<=4": 150.0}, None, True)
    record = CapacityOptimization(
        {"model": "fno2d"}, 5.0, 0.01, (base, top), "cudagraph", "cudagraph", 12.0, "s1", "s2", (90.0, 95.0),
        (150.0, None), "higher", None, ("planted",),
    )  # fmt: skip
    return record.to_json()


def _diagnosis_older(n: int) -> dict:
    """A kept diagnosis-v5 document as version ``n`` (v4 lacks ``context.host_floor``, v3 each finding's
    ``remedy_stacks``, v2 its ``remedies``, v1 its ``evidence_source``)."""
    old = _without(_load("h200/diagnose_fno2d.json.gz"), f"surrobench/diagnosis-v{n}", where="findings")
    lacks = {
        4: (),
        3: ("remedy_stacks",),
        2: ("remedy_stacks", "remedies"),
        1: ("remedy_stacks", "remedies", "evidence_source"),
    }
    if n <= 4:
        old["context"].pop("host_floor", None)
    for f in old["findings"]:
        for key in lacks.get(n, ()):
            f.pop(key, None)
    return old


def _optimize_v1() -> dict:
    old = _without(_load("h200/opt-pinn-mlp-65536.json.gz"), schemas.OPTIMIZE_V1, ("verify", "interrupted", "warnings"),
                   ("inputs", "settings", "label", "head_to_head", "cut_short", "fresh", "unconfirmed"), "configs")  # fmt: skip
    for entry in old["configs"]:
        entry["recipe"] = {k: entry["recipe"][k] for k in ("code", "run_command")}
        for c in entry["candidates"]:
            del c["baseline_ms"]
            c["verdict"] = "rejected_slower" if c["verdict"] == "rejected_not_faster" else c["verdict"]
    return old


#: (document, its reader to the record, the current schema), each stored version of each kind.
DOCUMENTS = {
    "run-v5": (_run, run_from_json, schemas.RUN),
    "run-v5-ranks": (_ranked_run, run_from_json, schemas.RUN),
    "run-v4": (lambda: _without(_ranked_run(), schemas.RUN_V4, top=("scaling",)), run_from_json, schemas.RUN),
    "run-v3": (lambda: _without(_run(), schemas.RUN_V3, top=("scaling",)), run_from_json, schemas.RUN),
    "run-v2": (
        lambda: _without(_run(), schemas.RUN_V2, top=("scaling",), each=("settings", "rounds", "rounds_planned")),
        run_from_json,
        schemas.RUN,
    ),
    "run-v1": (
        lambda: _without(
            _run(), schemas.RUN_V1, top=("scaling",), each=("settings", "rounds", "rounds_planned", "inputs")
        ),
        run_from_json,
        schemas.RUN,
    ),
    "serve-v2": (_serve, serve_from_json, schemas.SERVE),
    "serve-v1": (lambda: _serve_v1(_serve()), serve_from_json, schemas.SERVE),
    "capacity-v1": (_capacity, CapacityOptimization.from_json, schemas.CAPACITY),
    "versus-v1": (lambda: _load("documents/versus-v1.json"), VersusRecord.from_json, schemas.VERSUS),
    "ceilings-v1": (lambda: _load("h200/calibrate.json"), Ceilings.from_json, schemas.CEILINGS),
    **{
        f"optimize-{name}": (
            lambda name=name: _load(f"h200/{name}.json.gz"),
            OptimizeReport.from_json,
            schemas.OPTIMIZE,
        )
        for name in ("opt-pinn-mlp-65536", "opt-fno2d-256-b8", "opt-unet2d-256-b8", "recheck-opt-unet2d-256-b8")
    },
    "optimize-v1": (_optimize_v1, OptimizeReport.from_json, schemas.OPTIMIZE),
    **{
        f"diagnosis-{name}": (lambda name=name: _load(f"h200/{name}.json.gz"), Diagnosis.from_json, schemas.DIAGNOSIS)
        for name in ("diagnose_fno2d", "diagnose_transformer", "diagnose_pinn", "diagnose_gat")
    },
    **{
        f"diagnosis-v{n}": (lambda n=n: _diagnosis_older(n), Diagnosis.from_json, schemas.DIAGNOSIS)
        for n in range(1, 5)
    },
}


def _document(record) -> dict:
    return record.document() if isinstance(record, Ceilings) else record.to_json()


@pytest.mark.parametrize("kind", DOCUMENTS)
def test_every_stored_version_reads_into_its_record_and_writes_the_current_one(kind):
    make, read, current = DOCUMENTS[kind]
    doc = make()
    written = json.loads(json.dumps(_document(read(doc))))  # as a file holds it
    assert written["schema"] == current
    assert json.loads(json.dumps(_document(read(written)))) == written
    if doc["schema"] == current:  # nothing to upgrade: every key written back as read
        _holds(written, json.loads(json.dumps(doc)))


def _holds(written, stored, where="") -> None:
    """Every key of ``stored`` is in ``written`` with the same value (a key written since may be added)."""
    if isinstance(stored, dict):
        for key, value in stored.items():
            assert key in written, f"{where}.{key}"
            _holds(written[key], value, f"{where}.{key}")
    elif isinstance(stored, list):
        assert len(written) == len(stored), where
        for i, (w, s) in enumerate(zip(written, stored)):
            _holds(w, s, f"{where}[{i}]")
    else:
        assert written == stored, where


def test_an_older_version_reads_its_missing_keys_as_empty():
    old = OptimizeReport.from_json(_optimize_v1())
    entry = old.configs[0]
    assert old.fresh_pairs == 0 and not old.interrupted and entry.fresh is None and not entry.cut_short
    # the recipe's pooled speedup, stored after v1 began, reads as its candidate row's, over one window
    if entry.recommended:
        assert entry.recipe_speedup == entry.best.speedup and entry.recipe_windows == 1
    assert Diagnosis.from_json(_diagnosis_older(1)).findings[0].evidence_source == "measured"
    assert serve_from_json(_serve_v1(_serve())).unloaded == ()


@pytest.mark.parametrize("kind", [k for k in DOCUMENTS if not k.startswith(("versus", "ceilings"))])
def test_every_reader_refuses_another_document_with_one_document_error_naming_the_schema(kind):
    make, read, _ = DOCUMENTS[kind]
    with pytest.raises(schemas.DocumentError, match=r"^schema: 'surrobench/other-v1' is not 'surrobench/"):
        read(make() | {"schema": "surrobench/other-v1"})


def test_a_document_error_names_the_key_path_of_any_kind():
    run = _run()
    run["results"][0]["batch"] = "1"
    with pytest.raises(schemas.DocumentError, match=r"^results\[0\]\.batch: expected a whole number >= 1, got '1'$"):
        run_from_json(run)
    with pytest.raises(schemas.DocumentError, match=r"^top level: expected an object, got list$"):
        OptimizeReport.from_json([])


def test_a_multi_rank_run_document_carries_its_scaling_rows():
    from surrobench.records.run import scaling_rows

    doc = _ranked_run()
    (row,) = doc["scaling"]  # the printed scaling table's one row: per-rank-count throughput and efficiency
    record = run_from_json(doc)
    assert row == json.loads(json.dumps(scaling_rows(record.results)[0].to_json()))
    assert row["world_size"] == 2 and 0 < row["efficiency"] == row["speedup"] / 2
    assert _run()["scaling"] == []  # an ordinary run has none
