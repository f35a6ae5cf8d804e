"""diagnose with the system pass (perf / py-spy, planted here): what it measured is in the diagnosis's context,
and a cause the profile's own check states is said once per config."""

from __future__ import annotations

from dataclasses import replace

import pytest

import surrobench.analysis.evidence_checks as evidence_checks
import surrobench.api.diagnose as api_diagnose
from surrobench.analysis.evidence_checks import check_step
from surrobench.api.perf import PerfReport, step_note
from surrobench.collect.perf import SystemPass
from surrobench.records.system import HostHotspot, SystemView

VIEW = SystemView(12.0, 10.0, 1.2, 1.5, {"cycles": 1e9}, {}, (HostHotspot("prep.py:12 build_mask", 0.6),))


@pytest.fixture
def planted_pass(monkeypatch):
    """perf_config planted: the VIEW, its window's step 10x the timed one (unreliable)."""

    def perf_config(cfg, result, config_id, store, options, run_id):
        check = check_step(result.label(), 10 * result.latency_ms.median, result.latency_ms.median)
        passed = SystemPass(VIEW, None, None, {"status": "ok"}, ("py-spy: a note",))
        return PerfReport(result, config_id, "ok", None, passed, 5, ("py-spy: a note", step_note(check)), check)

    monkeypatch.setattr(api_diagnose, "perf_config", perf_config)


def _diagnose():
    options = dict(shapes="16", device="cpu", threads=1, warmup=1, iters=3, rounds=1, measure_s=0)
    return api_diagnose.diagnose("pinn-mlp", system_pass=True, **options)


def test_the_system_pass_is_stored_in_the_context_and_its_step_check_noted(planted_pass, monkeypatch):
    checked = evidence_checks.check_evidence
    # the profile's own window on the timed step (on a loaded host it can be off too: the next test's case)
    monkeypatch.setattr(evidence_checks, "check_evidence", lambda ev: replace(checked(ev), problems=()))
    d = _diagnose()
    (label,) = d.context["system"]
    assert d.context["system"][label] == VIEW.to_json()
    mine = [w for w in d.warnings if w.startswith(f"{label}: ")]
    assert [w.split(": ", 2)[1] for w in mine] == ["py-spy", "unreliable"]


def test_a_cause_the_profile_check_states_is_noted_once(planted_pass, monkeypatch):
    checked = evidence_checks.check_evidence

    def profile_off_too(ev):  # the profile's own window off the timed step as well
        return replace(checked(ev), problems=("step_mismatch",))

    monkeypatch.setattr(evidence_checks, "check_evidence", profile_off_too)
    d = _diagnose()
    (label,) = d.context["system"]
    assert d.context["evidence_checks"][label]["problems"] == ["step_mismatch"]
    assert [w.split(": ", 2)[1] for w in d.warnings if w.startswith(f"{label}: ")] == ["py-spy"]
