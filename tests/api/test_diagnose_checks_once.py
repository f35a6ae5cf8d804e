"""One diagnosis checks each config's evidence once (:func:`surrobench.analysis.evidence_checks.checked`): its
findings, the order of its remedies and its ``context.evidence_checks`` read the same check."""

from __future__ import annotations

from collections import Counter

from synthetic import config, latency_samples, run

import surrobench.analysis.evidence_checks as evidence_checks
from surrobench.api.diagnose import diagnose
from surrobench.records.ops import OpStat, OpTable
from surrobench.results.profiles import add_op_table
from surrobench.results.store import ResultStore

RUN_ID = "20261207-120000-once"


def test_a_stored_runs_diagnosis_checks_each_configs_evidence_once(tmp_path, monkeypatch):
    db = tmp_path / "r.db"
    results = [config(latency_samples(1.0, 0.0, n=20)), config(latency_samples(2.0, 0.0, n=20), batch=2)]
    table = OpTable(
        (OpStat("aten::add", "elementwise/arithmetic", 1, 900.0, 900.0, 1.0, 5.0),), "cpu", 900.0, 1, "profiler"
    )
    with ResultStore(db) as store:
        store.begin_run(run(RUN_ID, results))
        for result in results:
            add_op_table(store, store.add_result(RUN_ID, result), table)
        store.finish_run(RUN_ID)
    calls, check = Counter(), evidence_checks.check_evidence

    def counted(ev):
        calls[ev.label] += 1
        return check(ev)

    monkeypatch.setattr(evidence_checks, "check_evidence", counted)
    monkeypatch.setattr("surrobench.api.diagnose.check_evidence", counted, raising=False)  # as imported before
    diagnosis = diagnose(run=RUN_ID, db=db)
    assert sorted(diagnosis.context["evidence_checks"]) == sorted(r.label() for r in results)
    assert calls == {r.label(): 1 for r in results}
