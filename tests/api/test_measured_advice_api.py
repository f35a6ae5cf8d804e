"""``surrobench.diagnose(model, measure_s=)`` end to end on the CPU, its measuring planted: what the findings name is
measured per config (:func:`surrobench.tune.advice.measure_config` receives their findings and the budget), the
measurements land in the actions and the ranking, and ``measure_s=0`` measures nothing."""

from __future__ import annotations

import pytest

from surrobench.api.diagnose import diagnose
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import UsageError
from surrobench.records.measured import MeasuredRemedy
from surrobench.tune import advice

SWEEP = dict(shapes="32", batches=1, device="cpu", warmup=1, iters=5)
OPTIONS = ProfileOptions(schedule=ProfileSchedule(wait=0, warmup=1, active=2))


def test_diagnose_measures_what_its_findings_name_within_the_budget(tmp_path, monkeypatch):
    asked = []

    def planted(cfg, prepared, findings, budget_s, **kw):
        names = [r.name for r in advice.recipes_to_measure(findings, cfg.device)]
        asked.append((cfg.model, budget_s, names))
        return tuple(MeasuredRemedy(n, "faster", 2.0, (1.9, 2.1), 8.0, 4.0, 0.0, 1e-2) for n in names)

    monkeypatch.setattr(advice, "measure_config", planted)
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=7.5, **SWEEP)
    ((model, budget, names),) = asked
    assert (model, budget) == ("pinn-mlp", 7.5) and names
    measured = [f for f in d.findings if f.measured]
    assert measured and d.findings[0] is measured[0] and d.findings[0].gain_ms == 4.0
    assert d.to_json()["findings"][0]["gain"]["kind"] == "measured" and d.context["measure_s"] == 7.5
    assert any(w.startswith("pinn-mlp") and "remedies measured" in w for w in d.warnings)


def test_measure_s_zero_gives_estimates_only_and_a_bad_budget_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(advice, "measure_config", lambda *a, **k: pytest.fail("measured with measure_s=0"))
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=0, **SWEEP)
    assert all(f.gain_kind == "estimate" for f in d.findings)
    with pytest.raises(UsageError, match="measure_s"):
        diagnose("pinn-mlp", measure_s=-1, **SWEEP)
