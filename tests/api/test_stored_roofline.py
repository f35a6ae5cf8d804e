"""``diagnose`` stores each config's estimated roofline with the run, and ``diagnose --run`` / ``report`` read it
back: the stored run gets the estimated memory- and compute-bound verdicts of the run that measured them, and its
HTML roofline the estimated points."""

from __future__ import annotations

import dataclasses
import json

import pytest
from synthetic import config, latency_samples, run

from surrobench.analysis.roofline import OpCost, roofline
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.api.diagnose import RUN_LEVEL_ONLY, diagnose, diagnose_stored
from surrobench.api.report import build_report
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.execution.env import fingerprint
from surrobench.records.ceilings import Ceilings
from surrobench.records.findings import GAIN_UNKNOWN
from surrobench.records.ops import OpStat, OpTable
from surrobench.report.html import report_page
from surrobench.results.ceilings import save_ceilings
from surrobench.results.profiles import add_op_table, add_roofline, load_roofline
from surrobench.results.store import ResultStore

RUN_ID = "20261201-120000-roof"
#: ridge 10 FLOP/byte: the 256^3 matmul (42.7 FLOP/byte) is above it, the add (0.08) below
CEILINGS = Ceilings("Test GPU", 1000.0, {"fp32": 10.0}, "2026-12-01T00:00:00+00:00", "planted")


def _planted(db):
    """A stored CUDA config of 1 ms a step: a 256^3 matmul for 0.4 ms, an elementwise add for 0.6 ms; its op
    table stored as ``profile`` stores it, and the roofline ``diagnose`` would compute from those times."""
    table = OpTable(
        (
            OpStat("aten::add", "elementwise/arithmetic", 1, 600.0, 600.0, 0.6, 5.0),
            OpStat("aten::mm", "gemm/matmul/einsum", 1, 400.0, 400.0, 0.4, 5.0),
        ),
        "device",
        1000.0,
        1,
        "profiler",
    )
    costs = {
        "aten::mm": OpCost("aten::mm", 1, 2 * 256**3, 3 * 256 * 256 * 4, {"float32"}),
        "aten::add": OpCost("aten::add", 1, 256 * 256, 3 * 256 * 256 * 4, {"float32"}),
    }
    result = dataclasses.replace(config(latency_samples(1.0, 0.0, n=20)), device="cuda")
    record = run(RUN_ID, [result], device_name="NVIDIA H200", env={"device": "cuda"})
    with ResultStore(db) as store:
        store.begin_run(record)
        config_id = store.add_result(RUN_ID, result)
        add_op_table(store, config_id, table)
        store.finish_run(RUN_ID)
    return config_id, result.label(), roofline(table, costs, CEILINGS, "fp32")


def _estimated(findings) -> dict:
    return {f.kind: f for f in findings if f.evidence_source == "estimated"}


def test_a_stored_run_with_its_roofline_gets_the_estimated_bound_findings(tmp_path):
    db = tmp_path / "r.db"
    config_id, label, roof = _planted(db)
    with ResultStore(db) as store:
        _, without, _, evidence = diagnose_stored(RUN_ID, store, DEFAULT_THRESHOLDS)
        assert evidence[0].roofline is None
        add_roofline(store, config_id, roof)
        _, found, warnings, evidence = diagnose_stored(RUN_ID, store, DEFAULT_THRESHOLDS)
    assert evidence[0].roofline == roof
    # without it: the add is memory-bound by its family alone (no gain), the matmul's 40% no compute verdict
    before = _estimated(without)
    assert "compute_bound" not in before and before["memory_bound"].estimated_gain_ms is None
    assert all(e.source != "roofline" or e.unit == GAIN_UNKNOWN for f in without for e in f.evidence)  # but why not
    assert [e.value for e in before["memory_bound"].evidence if e.unit == GAIN_UNKNOWN] == [None]
    after = _estimated(found)
    memory, compute = after["memory_bound"], after["compute_bound"]
    assert [e.text.split(": ")[0] for e in memory.evidence if e.source == "roofline"] == ["aten::add"]
    assert memory.estimated_gain_ms == pytest.approx(0.6 - 3 * 256 * 256 * 4 / 1000e9 * 1e3)
    assert [e.text.split(": ")[0] for e in compute.evidence if e.source == "roofline"] == ["aten::mm"]
    assert compute.evidence[0].value == pytest.approx(2 * 256**3 / 0.4e-3 / 10e12)  # share of the fp32 peak
    assert compute.config == memory.config == label
    (note,) = [w for w in warnings if "estimated roofline" in w]
    assert CEILINGS.device_name in note and CEILINGS.measured in note and "differ now" in note  # H200 built-in now


def test_diagnose_run_and_the_report_carry_the_stored_roofline(tmp_path):
    db = tmp_path / "r.db"
    config_id, label, roof = _planted(db)
    with ResultStore(db) as store:
        add_roofline(store, config_id, roof)
    diagnosis = diagnose(run=RUN_ID, db=db)
    assert diagnosis.context["roofline"] == {label: roof.to_json()}
    built = build_report([RUN_ID], db=db)
    points = built.rooflines[RUN_ID]
    assert points.estimated == {label: roof.to_json()} and points.measured == {}
    assert 'alt="roofline, measured and estimated points"' in report_page(built)
    assert [f.kind for f in built.findings[RUN_ID]] == [f.kind for f in diagnosis.findings]


def test_a_stored_run_without_a_roofline_draws_no_roofline(tmp_path):
    db = tmp_path / "r.db"
    _planted(db)
    assert RUN_ID not in build_report([RUN_ID], db=db).rooflines
    assert diagnose(run=RUN_ID, db=db).context["roofline"] == {}


def test_diagnose_stores_the_roofline_it_computed_and_the_run_reads_the_same_verdicts(tmp_path):
    """End to end on the CPU: a live diagnosis against planted ceilings, then ``diagnose --run`` of its run."""
    save_ceilings(
        Ceilings(fingerprint("cpu")["cpu"], 1000.0, {"fp32": 10.0}, "2026-12-01T00:00:00+00:00", "planted"), threads=1
    )
    db = tmp_path / "r.db"
    options = ProfileOptions(schedule=ProfileSchedule(wait=0, warmup=1, active=2))
    sweep = dict(shapes="32", batches=1, device="cpu", warmup=1, iters=5)
    live = diagnose("scenario:groupnorm-large", db=db, profile_options=options, **sweep)
    assert live.context["roofline"]  # the planted ceilings drew one
    stored = diagnose(run=live.run.run_id, db=db)
    assert stored.context["roofline"] == live.context["roofline"]
    assert stored.title == live.title == f"diagnosis of run {live.run.run_id} on {live.run.env['device_name']}"
    estimated = _estimated(live.findings)
    assert {"memory_bound", "compute_bound"} & set(estimated)
    assert any(e.source == "roofline" for f in estimated.values() for e in f.evidence)
    assert _estimated(stored.findings) == estimated
    with ResultStore(db, read_only=True) as store:
        (config_id,) = [r.config_id for r in store.load_run(live.run.run_id).results]
        assert load_roofline(store, config_id).to_json() == next(iter(live.context["roofline"].values()))


def test_a_run_that_no_config_of_was_profiled_says_its_diagnosis_is_run_level_only(tmp_path):
    """A timed run (``run``, ``benchmark``, optimize's) has no op table: its diagnosis says in its title that only
    the run-level checks ran, so "no findings" is not read as a clean bill of health; a profiled run's does not."""
    db = tmp_path / "r.db"
    result = config(latency_samples(1.0, 0.0, n=20))
    record = run("20261201-120000-time", [result])
    with ResultStore(db) as store:
        store.begin_run(record)
        store.add_result(record.run_id, result)
        store.finish_run(record.run_id)
    timed = diagnose(run=record.run_id, db=db)
    assert timed.title == f"diagnosis of run {record.run_id} on Test CPU ({RUN_LEVEL_ONLY})"
    assert [c["problems"] for c in timed.cannot_judge] == [["not_profiled"]]  # "cannot judge", not "no findings"
    back = type(timed).from_json(json.loads(json.dumps(timed.to_json())))  # the document reads into the same type
    assert back.to_json() == timed.to_json() and back.cannot_judge == timed.cannot_judge and back.run is None
    _planted(db)
    assert RUN_LEVEL_ONLY not in diagnose(run=RUN_ID, db=db).title
