"""``surrobench.diagnose(model, measure_s=)`` end to end on the CPU, its measuring planted: what the findings name is
measured per config (:func:`surrobench.tune.advice.measure_config` receives their findings and the budget), the
measurements land in the actions and the ranking, and ``measure_s=0`` measures nothing."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import surrobench.api.diagnose as api_diagnose
from surrobench.api.compare import history, load
from surrobench.api.diagnose import diagnose
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.errors import Interrupted, UsageError
from surrobench.records.findings import Clause, Finding, MeasuredRemedy
from surrobench.tune import advice

SWEEP = dict(shapes="32", batches=1, device="cpu", warmup=1, iters=5)
OPTIONS = ProfileOptions(schedule=ProfileSchedule(wait=0, warmup=1, active=2))


def _with_a_compile_finding(monkeypatch):
    """The detectors' findings, plus one naming torch.compile for every config read: which findings a tiny CPU
    config gets depends on its noisy timings, and this test is about what diagnose does with the ones it gets."""
    real = api_diagnose.diagnose_run

    def planted(evidence, results, **kw):
        extra = [
            Finding("memory_bound", "low", "planted", (), (Clause("fuse", ("compile",)),), 0.5, config=ev.label)
            for ev in evidence
        ]
        return real(evidence, results, **kw) + extra

    monkeypatch.setattr(api_diagnose, "diagnose_run", planted)


def test_diagnose_measures_what_its_findings_name_within_the_budget(tmp_path, monkeypatch):
    asked = []
    _with_a_compile_finding(monkeypatch)

    def planted(cfg, prepared, findings, budget_s, stored, **kw):
        names = [r.name for r in advice.recipes_to_measure(findings, cfg.device)]
        asked.append((cfg.model, budget_s, names))
        return tuple(MeasuredRemedy(n, "faster", 2.0, (1.9, 2.1), 8.0, 4.0, 0.0, 1e-2) for n in names)

    monkeypatch.setattr(advice, "measure_config", planted)
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=7.5, **SWEEP)
    ((model, budget, names),) = asked
    assert (model, budget) == ("pinn-mlp", 7.5) and "compile" in names
    measured = [f for f in d.findings if f.measured]
    assert measured and d.findings[0] is measured[0] and d.findings[0].gain_ms == 4.0
    assert d.to_json()["findings"][0]["gain"]["kind"] == "measured" and d.context["measure_s"] == 7.5
    assert any(w.startswith("pinn-mlp") and "remedies measured" in w for w in d.warnings)
    (got,) = d.context["measured"].values()  # every remedy measured, whether or not a finding claimed it
    assert [m["remedy"] for m in got] == names


def test_a_bad_budget_is_refused_before_anything_runs():
    # measure_s=0 is the suite's default (tests/conftest.py): every other diagnosis test runs estimates only
    for bad in (-1, float("inf"), "45", True):
        with pytest.raises(UsageError, match="measure_s"):
            diagnose("pinn-mlp", measure_s=bad, **SWEEP)
    with pytest.raises(UsageError, match="measure_s: remedies are measured on a model"):
        diagnose(run="r", measure_s=10)


@pytest.mark.parametrize("cut_in", ["measure_config", "measured_for"])
def test_ctrl_c_after_profiling_keeps_the_estimated_findings_and_marks_the_run_interrupted(
    tmp_path, monkeypatch, cut_in
):
    """Ctrl-C while the remedies are measured, or while optimize's stored ones are read (before the findings
    are): every config was profiled, so the estimates stand, and the run is stored ``interrupted`` for
    ``history`` and ``show``."""
    read = api_diagnose.measured_for
    calls = []

    def once(*args, **kwargs):  # the interrupt handler reads optimize's remedies again
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return read(*args, **kwargs)

    monkeypatch.setattr(*((advice, "measure_config") if cut_in == "measure_config" else (api_diagnose, cut_in)), once)
    _with_a_compile_finding(monkeypatch)
    with pytest.raises(Interrupted) as cut:
        diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=5, **SWEEP)
    d = cut.value.partial
    assert d.findings and all(f.gain_kind == "estimate" for f in d.findings)
    assert d.to_json()["context"]["interrupted"] is True and d.context["profiled"] == [d.run.results[0].label()]
    said = f"interrupted: 1 of 1 configs stored as run {d.run.run_id}, 1 of 1 profiled"
    # how many remedies apply depends on the findings of this host's profile (a busy host adds the threads one)
    tail = r", 0 of [1-9]\d* remedies measured" if cut_in == "measure_config" else ""
    assert str(cut.value).startswith(said) and re.fullmatch(tail, str(cut.value).removeprefix(said))
    (listed,) = history(tmp_path / "r.db")
    assert (listed.run_id, listed.state) == (d.run.run_id, "interrupted")
    assert load(d.run.run_id, tmp_path / "r.db").env["interrupted"] is True and d.run.env["interrupted"] is True


def _measured_by_config(findings) -> dict:
    """``{config: every finding's measurements}``: a busy host adds a threads finding beside the compile one."""
    out = {}
    for f in findings:
        out[f.config] = out.get(f.config, ()) + f.measured
    return {k: v for k, v in out.items() if v}


def test_ctrl_c_while_measuring_keeps_the_remedies_measured_and_says_which_it_left(tmp_path, monkeypatch):
    """Two configs: the first's remedies measured, Ctrl-C in the second's. The first's measurements are in the
    partial diagnosis and stored with the run; the second's remedies are ``not-measured`` for the interrupt."""
    _with_a_compile_finding(monkeypatch)
    faster = MeasuredRemedy("compile", "faster", 2.0, (1.9, 2.1), 8.0, 4.0, 0.0, 1e-2)
    calls = []

    def planted(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return (faster,)

    monkeypatch.setattr(advice, "measure_config", planted)
    db = tmp_path / "r.db"
    with pytest.raises(Interrupted) as cut:
        diagnose("pinn-mlp", db=db, profile_options=OPTIONS, measure_s=5, **dict(SWEEP, batches=[1, 2]))
    d = cut.value.partial
    first, second = (r.label() for r in d.run.results)
    measured = _measured_by_config(d.findings)
    assert measured[first] == (faster,) and d.context["interrupted"] is True
    # a remedy the baseline already has (threads=N at torch's default, which differs between workers) is not
    # applicable, Ctrl-C or not; every other one is not measured for the interrupt
    left = [(m.verdict, m.reason) for m in measured[second] if m.verdict != "infeasible"]
    assert set(left) == {("not-measured", advice.INTERRUPTED)}
    assert str(cut.value).endswith(f", 2 of 2 profiled, 1 of {1 + len(left)} remedies measured")  # of those that apply
    assert any(w.startswith(second) and w.endswith(advice.INTERRUPTED) for w in d.warnings)
    stored = diagnose(run=d.run.run_id, db=db)  # stored where diagnose stores them: --run reads them back
    assert _measured_by_config(stored.findings) == measured


def test_the_stored_run_keeps_its_measurements_and_never_readvises_a_rejected_remedy(tmp_path, monkeypatch):
    _with_a_compile_finding(monkeypatch)
    slower = MeasuredRemedy("compile", "slower", 0.6, (0.55, 0.65), 8.0, -5.3, 0.0, 1e-2)
    monkeypatch.setattr(advice, "measure_config", lambda *args, **kw: (slower,))
    live = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=5, **SWEEP)
    stored = diagnose(run=live.run.run_id, db=tmp_path / "r.db")
    (owner,) = [f for f in stored.findings if f.measured]
    assert owner.measured == (slower,) and "compile" not in owner.remedies  # judged slower: advised no more
    assert stored.context["measured"] == live.context["measured"] == {owner.config: [slower.to_json()]}
    assert [(f.summary, f.measured, f.action) for f in stored.findings] == [
        (f.summary, f.measured, f.action) for f in live.findings
    ]


def test_a_remedy_a_diagnosis_measured_slower_is_not_readvised_by_another_run_of_its_config(tmp_path, monkeypatch):
    """trial35: a diagnosis measured bf16 at 0.01x on the HNN's config; ``diagnose --run`` of a profile run of that
    config advised plain "bf16 autocast" (only optimize's measurements were cited across runs). A later diagnosis
    that measures nothing, and ``diagnose --run`` of it, read the newest diagnosis's measurements of the config."""
    _with_a_compile_finding(monkeypatch)
    slower = MeasuredRemedy("compile", "slower", 0.6, (0.55, 0.65), 8.0, -5.3, 0.0, 1e-2)
    monkeypatch.setattr(advice, "measure_config", lambda *args, **kw: (slower,))
    db = tmp_path / "r.db"
    measuring = diagnose("pinn-mlp", db=db, profile_options=OPTIONS, measure_s=5, **SWEEP)
    later = diagnose("pinn-mlp", db=db, profile_options=OPTIONS, measure_s=0, **SWEEP)
    for d in (later, diagnose(run=later.run.run_id, db=db)):
        (owner,) = [f for f in d.findings if f.measured]
        assert owner.measured == (slower,) and "compile" not in owner.remedies
        assert f"{owner.config}: remedies measured by diagnosis {measuring.run.run_id}" in d.warnings
    assert later.context["measured"] == {}  # its own run measured nothing


def test_the_stored_run_keeps_its_diagnosis_warnings_for_diagnose_run_and_the_report(tmp_path, monkeypatch):
    """A trial's live diagnosis noted the remedies' windows timing the baseline 12x its timed step (the host
    drifted); ``diagnose --run`` of that run and its HTML report said nothing of it."""
    from surrobench.api.report import build_report
    from surrobench.records.run import WARNINGS_KEY
    from surrobench.report.html import escape, report_page

    _with_a_compile_finding(monkeypatch)
    drifted = MeasuredRemedy("compile", "faster", 2.0, (1.9, 2.1), 1e4, 4.0, 0.0, 1e-2, drifted=True)  # a 10 s window
    monkeypatch.setattr(advice, "measure_config", lambda *args, **kw: (drifted,))
    db = tmp_path / "r.db"
    live = diagnose("pinn-mlp", db=db, profile_options=OPTIONS, measure_s=5, **SWEEP)
    (drift,) = [w for w in live.warnings if "the host drifted" in w]
    stored = diagnose(run=live.run.run_id, db=db)
    assert stored.warnings[: len(live.warnings)] == live.warnings and stored.warnings.count(drift) == 1
    assert load(live.run.run_id, db).env[WARNINGS_KEY] == list(live.warnings)
    assert escape(drift) in report_page(build_report([live.run.run_id], db=db))


#: Two 3x3x3 convolutions: at batch 1 in fp32 PyTorch runs them as its own im2col + GEMM (slow_conv3d_forward).
VOXEL = """
from torch import nn


def voxel():
    return nn.Sequential(nn.Conv3d(1, 8, 3, padding=1), nn.GELU(), nn.Conv3d(8, 8, 3, padding=1))
"""


#: The voxel's op times as a quiet host profiles them, self CPU µs per step (this machine, one thread: PyTorch's
#: im2col convolution 99.6% of the op time); any op not named 0.5 µs.
VOXEL_SELF_US = {"aten::slow_conv3d_forward": 3223.4, "aten::gelu": 4.7, "aten::copy_": 2.6}


def _steady_profile(monkeypatch, self_us: dict[str, float]):
    """Each config's op table as a quiet host profiles it: the ops its profile recorded (names, calls, shapes), their
    times ``self_us`` (any other op 0.5 µs), the profiled step the timed one's. A loaded host's profile is not that: it
    ran the voxel's step at 10-96x the timed one, each op's self time holding whatever preemption landed in it, and an
    uncalibrated compute_bound needs the convolutions' majority of the op time (``compute_share_min``)."""
    real = api_diagnose.diagnose_run

    def planted(evidence, results, **kw):
        steady = []
        for ev in evidence:
            table = ev.op_table
            us = {op.name: self_us.get(op.name, 0.5) * table.active_steps for op in table.ops}
            total = sum(us.values())
            ops = [replace(op, self_cpu_us=us[op.name], share=us[op.name] / total) for op in table.ops]
            ops.sort(key=lambda op: -op.share)
            steady.append(
                replace(ev, op_table=replace(table, ops=tuple(ops), total_us=total), profiled_step_ms=ev.timed_ms)
            )
        return real(steady, results, **kw)

    monkeypatch.setattr(api_diagnose, "diagnose_run", planted)


def test_without_calibration_a_compute_bound_finding_still_names_and_measures_its_settings(tmp_path, monkeypatch):
    asked = []
    _steady_profile(monkeypatch, VOXEL_SELF_US)  # the finding and what it names: the rule's reading of these times

    def planted(cfg, prepared, findings, budget_s, stored, **kw):
        names = [r.name for r in advice.recipes_to_measure(findings, cfg.device)]
        asked.extend(names)
        bf16 = MeasuredRemedy("bf16", "faster", 6.0, (5.5, 6.5), 50.0, 40.0, 0.0, 1e-3)
        same = [MeasuredRemedy(n, "no-difference", 1.0, (0.9, 1.1), 50.0, 0.0, 0.0, 1e-3) for n in names if n != "bf16"]
        return (bf16, *same) if "bf16" in names else tuple(same)

    monkeypatch.setattr(advice, "measure_config", planted)
    (tmp_path / "voxel.py").write_text(VOXEL)
    sweep = dict(SWEEP, shapes=[(1, 1, 16, 16, 16)])
    d = diagnose(f"{tmp_path / 'voxel.py'}:voxel", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=5, **sweep)
    (found,) = [f for f in d.findings if f.kind == "compute_bound"]
    assert found.gain_kind == "measured" and found.gain_ms == 40.0  # no roofline, yet measured
    assert "bf16" in asked and "bf16" in found.remedies and "channels_last" not in asked  # not oneDNN: no layout
    assert [m.remedy for m in found.measured if m.verdict == "faster"] == ["bf16"]


def test_savings_beyond_a_findings_ops_read_as_the_whole_steps_and_overlap(tmp_path, monkeypatch):
    """A fresh-user trial's Neural ODE: compile credited to memory_bound (tanh, 13% of the op time) saved 15.5 ms
    beside threads=1's 12.0 ms on an 18.7 ms step, as if additive; compile's window had drifted. Each gain says what
    it is (the whole step's, a drifted window's), a note says the savings overlap, and diagnose --run reads the same."""
    from surrobench.records.findings import OP_SHARE, Evidence

    def planted(evidence, results, **kw):
        tanh = Evidence("profiler", "aten::tanh: 13% of op time", 0.13, OP_SHARE)
        fuse = Clause("fuse (torch.compile)", ("compile",))
        fewer = Clause("torch.set_num_threads(1)", ("threads",), direction="down")
        return [
            f
            for ev in evidence
            for f in (
                Finding("memory_bound", "high", "tanh", (tanh,), (fuse,), config=ev.label),
                Finding("thread_oversubscription", "high", "2 threads", (), (fewer,), config=ev.label),
            )
        ]

    compile_ = MeasuredRemedy("compile", "faster", 5.83, (1.8, 22.6), 39.2, 32.5, drifted=True)
    threads = MeasuredRemedy("threads=1", "faster", 2.8, (2.67, 2.92), 26.8, 12.0, direction="down")
    monkeypatch.setattr(api_diagnose, "diagnose_run", planted)
    monkeypatch.setattr(advice, "measure_config", lambda *args, **kw: (compile_, threads))
    live = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=5, **SWEEP)
    stored = diagnose(run=live.run.run_id, db=tmp_path / "r.db")
    for d in (live, stored):
        gains = {f.kind: f.to_json()["gain"] for f in d.findings}
        assert list(gains) == ["thread_oversubscription", "memory_bound"]  # the timed step's saving first
        assert gains["memory_bound"] | {"ms": None} == {
            "kind": "measured",
            "ms": None,
            "remedy": "compile",
            "whole_step": True,
            "drifted": True,
            "none_faster": False,
        }
        assert not gains["thread_oversubscription"]["whole_step"] and not gains["thread_oversubscription"]["drifted"]
        (overlap,) = [w for w in d.warnings if "measured savings overlap" in w]
        assert overlap.startswith(  # the drifted window's saving says whose baseline it is
            f"{d.findings[0].config}: measured savings overlap (threads=1 12 ms, compile 32.5 ms (its window's "
            "baseline drifted: 39.2 ms))"
        )


def test_a_remedy_not_faster_says_the_paired_rule_s_one_word_in_note_json_and_action(tmp_path, monkeypatch):
    """optimize's ``rejected_not_faster`` is the paired rule's ``inconclusive`` or ``unchanged``
    (records/paired.py): the per-config note, the measured remedy's JSON and the action all say that word."""
    from surrobench.records.paired import Speedup
    from surrobench.results.optimize import CandidateResult

    _with_a_compile_finding(monkeypatch)
    noisy = Speedup(0.90, (0.88, 0.95), 0.062)  # below 1 but not beyond the margin: inconclusive
    assert noisy.verdict() == "inconclusive"

    def planted(cfg, prepared, findings, budget_s, stored, **kw):
        c = CandidateResult("compile", "rejected_not_faster", "planted", speedup=noisy, baseline_ms=4.37)
        return (advice.measured_remedy(c, 1e-2),)

    monkeypatch.setattr(advice, "measure_config", planted)
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=7.5, **SWEEP)
    (finding,) = [f for f in d.findings if f.measured]
    assert [m["verdict"] for m in d.to_json()["findings"][d.findings.index(finding)]["measured"]] == ["inconclusive"]
    assert finding.measured[0].text() in finding.action and "0.90x [0.88, 0.95]" in finding.action
    assert any("compile (inconclusive 0.90x)" in w for w in d.warnings)
    same = Speedup(1.0, (0.99, 1.01), 0.01)
    c = CandidateResult("tf32", "rejected_not_faster", "planted", speedup=same, baseline_ms=4.0)
    assert advice.measured_remedy(c, 1e-2).verdict == "unchanged"


def _stored_compile(monkeypatch, unconfirmed: bool, baseline_ms: float = 1e4):
    """Every config diagnosed has one stored optimization, o7 (through ``measured_for``, as a store holding it): compile
    accepted in its window at 1.45x [1.09, 2.49] (noise floor 8.4%) on a ``baseline_ms`` baseline, and, where
    ``unconfirmed``, its confirmation pooled over 4 windows at 1.38x [1.03, 1.85] (floor 11.7%), recommending
    nothing (a fresh-user trial's transolver)."""
    speedup = {"median": 1.45, "ci95": [1.09, 2.49], "noise_floor": 0.084}
    compile_ = {"name": "compile", "verdict": "accepted", "reason": "-", "speedup": speedup, "baseline_ms": baseline_ms}
    pooled = {"median": 1.38, "ci95": [1.03, 1.85], "noise_floor": 0.117}
    doc = {"candidates": [compile_], "recommended": []}
    if unconfirmed:
        doc["unconfirmed"] = {"name": "compile", "speedup": pooled, "windows": 4, "accepted": ["compile"]}
    else:
        doc |= {"recommended": ["compile"], "recipe": {"speedup": speedup}}
    _stored(monkeypatch, doc)


def _stored(monkeypatch, doc: dict) -> None:
    """Every config diagnosed has one stored optimization, o7 (through ``measured_for``, as a store holding it): the
    optimize config object of ``doc``'s keys (:func:`synthetic.optimize_entry`)."""
    from synthetic import optimize_entry

    from surrobench.results.measured_remedies import cited_entry

    entry = optimize_entry(doc) | {"optimize_id": "o7", "tolerance": 0.01}

    def stored(store, results):
        return {r.label(): cited_entry([entry]) for r in results}

    monkeypatch.setattr(api_diagnose, "measured_for", stored)


def test_a_cited_remedy_carries_its_optimizations_final_verdict_and_a_saving_the_timed_step_allows(
    tmp_path, monkeypatch
):
    """A fresh-user trial: diagnose --measure-s 0 cited compile's one window, 1.45x, as faster, high severity, and
    "saves 12.8 ms/step" of the optimization's 41.2 ms window beside a 21.05 ms timed step, while that optimization's
    confirmation pooled 1.38x [1.03, 1.85], not above 1 + its 11.7% floor, and recommended nothing; no line said
    compile was cited. The citation carries the pooled verdict and is not advised; a cited saving is the timed step's
    x (1 - 1/speedup), its drift kept; the cited line appears with no remedy measured."""
    from surrobench.results.measured_remedies import measured_lines

    _with_a_compile_finding(monkeypatch)
    _stored_compile(monkeypatch, unconfirmed=True)
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=0, **SWEEP)
    (m,) = [m for f in d.findings for m in f.measured]  # credited to one finding naming compile (owners)
    assert (m.cited, m.verdict, m.speedup, m.ci95, m.noise_floor) == ("o7", "inconclusive", 1.38, (1.03, 1.85), 0.117)
    assert not any(f.best_measured or "compile" in f.remedies for f in d.findings if f.measured)  # not advised
    assert measured_lines(d.findings, {}) and set(measured_lines(d.findings, {})) <= set(d.warnings)
    _stored_compile(monkeypatch, unconfirmed=False)  # a confirmed recipe: faster, its saving on the timed step
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=0, **SWEEP)
    (f,) = [f for f in d.findings if f.measured]
    step = d.run.results[0].latency_ms.median
    assert f.best_measured.verdict == "faster" and f.best_measured.drifted and f.gain["drifted"]
    assert f.gain_ms == pytest.approx(step * (1 - 1 / 1.45)) and f.gain_ms < step
    assert f"{f.config}: cited from optimization o7: compile, recipe compile" in d.warnings  # its recipe clause's too


def test_diagnoses_own_window_is_judged_with_the_stored_confirmations_noise_floor(tmp_path, monkeypatch):
    """A fresh-user trial: diagnose judged compile 1.41x [1.03, 1.69] faster by its window's 1.0% floor (margin 2%),
    a minute after optimize's confirmation judged the same lower bound against its 11.7% floor. The one rule's
    margin takes the stored confirmation's floor where larger, and the record names whose it is."""
    _with_a_compile_finding(monkeypatch)
    _stored_compile(monkeypatch, unconfirmed=True)
    own = MeasuredRemedy("compile", "faster", 1.41, (1.03, 1.69), 31.2, 9.1, noise_floor=0.01, margin=0.02)
    monkeypatch.setattr(advice, "measure_config", lambda *args, **kw: (own,))
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=5, **SWEEP)
    (m,) = [m for f in d.findings for m in f.measured]
    assert (m.cited, m.verdict, m.noise_floor, m.margin, m.floor_from) == (None, "inconclusive", 0.117, 0.117, "o7")
    assert not any(f.best_measured or "compile" in f.remedies for f in d.findings if f.measured)  # not advised
    stored = diagnose(run=d.run.run_id, db=tmp_path / "r.db")  # as stored, read back
    assert [m for f in stored.findings for m in f.measured] == [m]


def _cited_and_read_back(tmp_path) -> tuple:
    """A ``--measure-s 0`` diagnosis (every remedy cited from the stored optimization), and the same read back by
    ``diagnose --run``: each test asserts both."""
    live = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=0, **SWEEP)
    return live, diagnose(run=live.run.run_id, db=tmp_path / "r.db")


def _only_a_compile_finding(monkeypatch) -> None:
    """One finding per config, naming torch.compile alone (estimated gain 0.5 ms), and no other."""

    def planted(evidence, results, **kw):
        return [
            Finding("memory_bound", "low", "planted", (), (Clause("fuse", ("compile",)),), 0.5, ev.label)
            for ev in evidence
        ]

    monkeypatch.setattr(api_diagnose, "diagnose_run", planted)


def test_a_lead_optimize_did_not_confirm_is_cited_as_it_left_it_neither_faster_nor_slower(tmp_path, monkeypatch):
    """A fresh-user trial's Koopman autoencoder: optimize recommended nothing (its recipe channels_last pooled 1.24x
    [0.92, 1.28] over 4 windows) and listed the leads it accepted in their own window, channels_last 1.21x and
    threads=2 1.19x [1.09, 1.24]; diagnose --measure-s 0 then cited threads=2 as faster (medium, "saves 0.572
    ms/step") beside channels_last "measured, not advised". A lead is cited as optimize left it: its window's
    numbers, ``inconclusive`` without a margin, its reason naming the recipe that did not hold; not advised as
    faster, nor as slower; diagnose --run reads the same."""
    _only_a_compile_finding(monkeypatch)
    window = {"median": 1.19, "ci95": [1.09, 1.24], "noise_floor": 0.004}
    lead = {"name": "compile", "verdict": "accepted", "reason": "-", "speedup": window, "baseline_ms": 2.18}
    recipe = {"median": 1.21, "ci95": [1.17, 1.24], "noise_floor": 0.003}
    channels_last = {"name": "channels_last", "verdict": "accepted", "reason": "-", "speedup": recipe}
    pooled = {"median": 1.24, "ci95": [0.92, 1.28], "noise_floor": 0.0008}
    unconfirmed = {"name": "channels_last", "speedup": pooled, "windows": 4, "accepted": ["channels_last", "compile"]}
    _stored(monkeypatch, {"candidates": [channels_last, lead], "recommended": [], "unconfirmed": unconfirmed})
    for d in _cited_and_read_back(tmp_path):
        (f,) = d.findings
        (m,) = f.measured
        assert (m.remedy, m.cited, m.verdict, m.speedup, m.ci95, m.margin) == (
            "compile",
            "o7",
            "inconclusive",
            1.19,
            (1.09, 1.24),
            None,
        )
        assert "channels_last" in m.reason and f.best_measured is None and f.remedies == ()  # not advised
        assert d.to_json()["findings"][0]["measured"][0]["verdict"] == "inconclusive"


def _recommended_alone(monkeypatch, name: str, window: tuple, pooled: tuple, noise_floor: float, baseline_ms: float):
    """A compile-only finding and a stored optimization that accepted ``name`` alone at its ``window``'s speedup
    (median, CI low, CI high) and recommended it at the speedup its confirmation ``pooled``."""
    _only_a_compile_finding(monkeypatch)

    def speedup(median, lo, hi) -> dict:
        return {"median": median, "ci95": [lo, hi], "noise_floor": noise_floor}

    cand = {"name": name, "verdict": "accepted", "reason": "-", "speedup": speedup(*window), "baseline_ms": baseline_ms}
    _stored(monkeypatch, {"candidates": [cand], "recommended": [name], "recipe": {"speedup": speedup(*pooled)}})


def test_a_finding_ending_with_optimizes_recipe_names_that_optimization_and_takes_its_pooled_measurement(
    tmp_path, monkeypatch
):
    """A fresh-user trial's Chebyshev net: a finding naming compile ended "measured recipe: bf16 1.44x [1.32, 1.70]
    in optimization O", read "gain ?", and no line named the optimization cited. A remedy only the recipe clause
    names is credited as a rule's clause's, with the recipe's pooled speedup (optimize's last word), its saving on the
    timed step; the cited-from line names it (docs/design.md, "Citing optimize")."""
    _recommended_alone(monkeypatch, "bf16", (1.41, 1.33, 1.54), (1.44, 1.32, 1.70), 0.135, 8.38)
    for d in _cited_and_read_back(tmp_path):
        (f,) = d.findings
        (m,) = f.measured
        assert f.clauses[-1].remedies == ("bf16",) and (m.remedy, m.cited, m.speedup) == ("bf16", "o7", 1.44)
        assert f.clauses[-1].text.count("in optimization o7") == 1  # the recipe's measurement said once, not twice
        assert f.gain_kind == "measured" and f.gain_ms == pytest.approx(
            d.run.results[0].latency_ms.median * (1 - 1 / 1.44)
        )
        (line,) = [w for w in d.warnings if w.startswith(f"{f.config}: cited from optimization o7")]
        assert line.endswith(": bf16")  # the measurement the rewritten recipe clause carries


def test_a_cited_recipe_candidate_carries_the_speedup_its_confirmation_pooled(tmp_path, monkeypatch):
    """A fresh-user trial's hash-grid field: optimize accepted compile at 6.45x [2.86, 8.54] in its window and
    recommended it at 3.96x [3.06, 7.69] pooled over 5 windows; diagnose --measure-s 0 then cited the window's 6.45x
    and its saving, a second speedup of one remedy beside the recipe's. The candidate that is the recommended recipe
    is cited with the pooled speedup, optimize's last word, its saving on the timed step from it."""
    _recommended_alone(monkeypatch, "compile", (6.45, 2.86, 8.54), (3.96, 3.06, 7.69), 0.02, 17.955)
    for d in _cited_and_read_back(tmp_path):
        (f,) = d.findings
        (m,) = f.measured
        assert (m.remedy, m.cited, m.verdict, m.speedup, m.ci95) == ("compile", "o7", "faster", 3.96, (3.06, 7.69))
        step = d.run.results[0].latency_ms.median
        assert f.gain_ms == pytest.approx(step * (1 - 1 / 3.96))


def test_the_cited_line_names_no_remedy_that_could_not_be_tried(tmp_path, monkeypatch):
    """A fresh-user trial's filter network: "cited from optimization ...: compile, threads=1, threads=2", where
    threads=1 was infeasible (the baseline ran one thread already). The line names the remedies cited that were
    tried; the infeasible one stays in the finding's measurements."""

    def planted(evidence, results, **kw):
        clauses = (Clause("fuse", ("compile",)), Clause("fewer threads", ("threads",)))
        return [Finding("memory_bound", "low", "planted", (), clauses, 0.5, ev.label) for ev in evidence]

    monkeypatch.setattr(api_diagnose, "diagnose_run", planted)
    faster = {"median": 1.3, "ci95": [1.2, 1.4], "noise_floor": 0.02}
    compile_ = {"name": "compile", "verdict": "accepted", "reason": "-", "speedup": faster, "baseline_ms": 4.0}
    one = {"name": "threads=1", "verdict": "infeasible", "reason": "the baseline runs 1 thread"}
    _stored(monkeypatch, {"candidates": [compile_, one], "recommended": []})
    d = diagnose("pinn-mlp", db=tmp_path / "r.db", profile_options=OPTIONS, measure_s=0, **SWEEP)
    (f,) = d.findings
    assert {m.remedy: m.verdict for m in f.measured} == {"compile": "faster", "threads=1": "infeasible"}
    (line,) = [w for w in d.warnings if w.startswith(f"{f.config}: cited from optimization o7")]
    assert line.endswith(": compile")
