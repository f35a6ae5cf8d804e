"""A finding's action as clauses, each naming the remedies it suggests from the one remedy vocabulary."""

from __future__ import annotations

from dataclasses import replace

import pytest

from surrobench.execution.remedies import candidate_remedies
from surrobench.records.findings import Clause, Evidence, Finding
from surrobench.records.vocab import REMEDIES, remedy_id

EV = (Evidence("profiler", "x"),)


def test_the_remedy_vocabulary_is_the_catalogue_of_optimize():
    """Every candidate optimize can try is one id of the vocabulary, and every id is one optimize can try."""
    names = {r.name for device in ("cpu", "cuda") for r in candidate_remedies(device, thorough=True)}
    assert {remedy_id(n) for n in names} == set(REMEDIES)


def test_an_action_given_as_clauses_is_held_as_text_with_its_remedies():
    action = (Clause("replay as a CUDA graph", ("cudagraph",)), Clause("raise the batch"), Clause("or tf32", ("tf32",)))
    f = Finding("launch_bound", "high", "s", EV, action, 1.0, "cfg")
    assert f.action == "replay as a CUDA graph; raise the batch; or tf32" and f.clauses == action
    assert f.remedies == ("cudagraph", "tf32") and f.to_json()["remedies"] == ["cudagraph", "tf32"]
    assert replace(f, severity="low").remedies == ("cudagraph", "tf32")  # a copy keeps its clauses
    plain = replace(f, action="something else")  # new text, no clauses given: it suggests no remedy
    assert plain.remedies == () and plain.clauses == (Clause("something else"),)
    assert Finding("launch_bound", "high", "s", EV, "text").to_json()["remedies"] == []


def test_a_remedy_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="unknown remedy id"):
        Clause("go faster", ("warp",))


def test_a_diagnosis_of_any_version_still_reads():
    import gzip
    import json
    from pathlib import Path

    from surrobench.records.findings import Diagnosis, MeasuredRemedy

    path = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "diagnose_fno2d.json.gz"
    with gzip.open(path, "rt") as f:
        v5 = json.load(f)
    assert v5["schema"] == "surrobench/diagnosis-v5"
    old = list(Diagnosis.from_json(v5).findings)
    assert [f.kind for f in old] == [f["kind"] for f in v5["findings"]]
    assert all(f.gain_kind == "estimate" and f.measured == () for f in old)
    assert [f.remedies for f in old] == [tuple(f["remedies"]) for f in v5["findings"]]
    v2 = {
        "schema": "surrobench/diagnosis-v2",
        "findings": [
            {
                k: v5["findings"][0][k]
                for k in (
                    "kind",
                    "severity",
                    "summary",
                    "evidence",
                    "action",
                    "estimated_gain_ms",
                    "config",
                    "evidence_source",
                )
            }
        ],
    }
    assert list(Diagnosis.from_json(v2).findings)[0].remedies == ()
    # this version round-trips, its measured actions and clauses included
    m = MeasuredRemedy("cudagraph", "faster", 1.73, (1.55, 1.87), 7.0, 2.96, 1e-7, 1e-2)
    clauses = (
        Clause("replay it as a CUDA graph", ("cudagraph",)),
        Clause("tf32 then compile", ("tf32", "compile"), True),
    )
    f = Finding("launch_bound", "high", "idle", (), clauses, 0.83, "x", measured=(m,))
    doc = json.loads(json.dumps(Diagnosis({}, (f,)).to_json()))
    assert doc["schema"] == "surrobench/diagnosis-v8" and list(Diagnosis.from_json(doc).findings) == [f]
    gain = {"kind": "measured", "ms": 2.96, "remedy": "cudagraph", "whole_step": False, "drifted": False}
    assert doc["findings"][0]["gain"] == {**gain, "none_faster": False}
    stored = {k: v for k, v in doc["findings"][0]["measured"][0].items() if k != "drifted"}  # written before it was
    assert MeasuredRemedy.from_json(stored) == m and not m.drifted
    with pytest.raises(ValueError):
        list(Diagnosis.from_json({"schema": "surrobench/run-v3", "findings": []}).findings)


def test_measured_actions_read_as_the_issue_shows_them():
    from surrobench.records.findings import MeasuredRemedy

    assert MeasuredRemedy("cudagraph", "faster", 1.73, (1.55, 1.87), 7.0, 2.96).text() == (
        "cudagraph: measured 1.73x [1.55, 1.87], saves 2.96 ms/step"
    )
    assert (
        MeasuredRemedy("compile", "slower", 0.65, (0.6, 0.7)).text() == "compile: measured 0.65x [0.60, 0.70], slower"
    )
    assert MeasuredRemedy("bf16", "rejected-by-accuracy", rel_l2=1.8e-2, tolerance=1e-2).text() == (
        "bf16: rejected, rel L2 1.8e-02 > 1.0e-02"
    )
    assert MeasuredRemedy("bf16", "rejected-by-accuracy", rel_l2=0.01029, tolerance=1e-2).text() == (
        "bf16: rejected, rel L2 1.03e-02 > 1.00e-02"  # as many digits as show the two apart
    )
    # a stored speedup without its interval (no writer of ours makes one) still reads, with no interval shown
    assert MeasuredRemedy("compile", "faster", 1.2).text().startswith("compile: measured 1.20x")
    with pytest.raises(ValueError):
        MeasuredRemedy("tf32", "better")


def test_a_v6_no_difference_reads_as_the_paired_rule_s_verdict_of_its_numbers():
    """A diagnosis-v6 ``no-difference`` held the paired rule's ``unchanged`` and ``inconclusive`` (records/paired.py):
    read back, it is the one its numbers give (a 28x bf16 under a drifting baseline is inconclusive), and the line
    says that same word."""
    from surrobench.records.findings import MeasuredRemedy

    wide = MeasuredRemedy.from_json(
        {"remedy": "bf16", "verdict": "no-difference", "speedup": 28.3, "ci95": [1.17, 34.5], "margin": 0.174}
    )
    near = MeasuredRemedy("bf16", "no-difference", 1.05, (0.98, 1.12), noise_floor=0.174, margin=0.174)
    bare = MeasuredRemedy("bf16", "no-difference")  # no numbers to judge
    assert (wide.verdict, near.verdict, bare.verdict) == ("inconclusive", "unchanged", "inconclusive")
    assert all(f", {m.verdict}, " in m.text() and "lower bound" in m.text() for m in (wide, near))


def test_a_remedy_below_1_within_the_margin_reads_in_diagnose_as_optimize_reads_it():
    """A fresh-user trial: diagnose printed compile's 0.79x [0.66, 0.95] "inconclusive, lower bound ..." where optimize,
    on the same numbers, read "slower, within the margin". One helper (Speedup.words) words both, cited or read back;
    the verdict stays the rule's ``inconclusive``."""
    from surrobench.records.findings import MeasuredRemedy
    from surrobench.records.paired import Speedup
    from surrobench.results.measured_remedies import measured_remedy
    from surrobench.results.optimize import CandidateResult

    sp = Speedup(0.79, (0.66, 0.95), 0.08)  # not all past 1 / 1.08 = 0.926 (at a 5% margin 0.95 would be slower)
    head, bound = sp.words()
    assert sp.verdict() == "inconclusive" and head == "slower, within the margin" and "upper bound" in bound
    c = CandidateResult("compile", "rejected_not_faster", sp.reason("the baseline"), speedup=sp, baseline_ms=10.0)
    m = measured_remedy(c, 1e-2, cited="o7")
    assert (m.verdict, m.margin) == ("inconclusive", 0.08)
    assert c.reason.startswith(f"{head}: ") and f", {head}, {bound}" in m.text()
    direct = MeasuredRemedy("compile", "inconclusive", 0.79, (0.66, 0.95), 10.0, None, noise_floor=0.08, margin=0.08)
    assert f", {head}, {bound}" in direct.text() and MeasuredRemedy.from_json(m.to_json()).text() == m.text()
