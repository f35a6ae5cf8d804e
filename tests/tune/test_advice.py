"""Measured actions on planted timings (:mod:`surrobench.tune.advice` over :class:`planted_search.PlantedBench`, the
same :class:`surrobench.tune.trials.Trials` core optimize runs): the measured action replaces the estimate, findings
are ordered by measured saving, a remedy measured slower is never advised and one measured faster never advised
against, the budget leaves remedies unmeasured and says so, and budget 0 gives estimates only."""

from __future__ import annotations

from dataclasses import replace

import pytest
from planted_search import BASELINE_MS, PlantedBench, PlantedClock
from synthetic import optimize_entry

from surrobench.execution.remedies import Recipe, candidate_remedies
from surrobench.records.findings import Clause, Finding, MeasuredRemedy, rank_findings
from surrobench.results.measured_remedies import attach_measured
from surrobench.tune.advice import INTERRUPTED, measure_recipes, recipes_to_measure
from surrobench.tune.trials import FIRST_COMPILE_S, Trials

LABEL = "afno 1x3x256x256 b1 fp32 eager"


def _finding(kind: str, gain: float | None, *clauses: Clause, severity: str = "high") -> Finding:
    return Finding(kind, severity, f"{kind} here", (), clauses, estimated_gain_ms=gain, config=LABEL)


def _findings() -> list[Finding]:
    """As the AFNO's diagnosis read on the H200: launch_bound with a small estimate, a compute_bound that
    estimated nothing (info), and a memory_bound naming compile and a code change."""
    return [
        _finding(
            "launch_bound",
            0.83,
            Clause("replay the step as a CUDA graph", ("cudagraph",)),
            Clause("or torch.compile(mode='reduce-overhead')", ("compile-reduce-overhead",)),
        ),
        _finding("compute_bound", 0.0, Clause("use tensor cores", ("tf32", "bf16")), severity="info"),
        _finding(
            "memory_bound",
            2.0,
            Clause("fuse the elementwise chains (torch.compile)", ("compile",)),
            Clause("preallocate the spectral buffers"),
        ),
    ]


def _measure(
    speedups: dict, findings=None, *, inaccurate=(), budget_end=float("inf"), clock=None, window_s=1.0, stored=None
):
    bench = PlantedBench(speedups, inaccurate=inaccurate, clock=clock, window_s=window_s)
    clock = clock or PlantedClock()
    trials = Trials(bench, bench.rounds, budget_s=3.0, budget_end=budget_end, clock=clock, stored=stored)
    recipes = recipes_to_measure(findings or _findings(), "cuda")
    return bench, measure_recipes(trials, recipes, 1e-2)


def _by_name(measured) -> dict[str, MeasuredRemedy]:
    return {m.remedy: m for m in measured}


def test_remedies_are_measured_in_order_of_the_estimated_gain():
    recipes = recipes_to_measure(_findings(), "cuda")
    # memory_bound (2.0 ms) first, then launch_bound (0.83), then compute_bound (0.0)
    assert [r.name for r in recipes] == ["compile", "cudagraph", "compile-reduce-overhead", "tf32", "bf16"]


def test_the_step_time_at_stake_orders_the_remedies_before_severity():
    """A fresh-user trial's voxel autoencoder (CPU, no calibration): convolutions held 87% of the op time (an info
    compute_bound naming bf16, no estimate), a low thread_oversubscription naming fewer threads; a 20 s budget went
    to the threads first. The op time a finding's ops hold is its stake: bf16 first, and what the budget leaves
    reads not measured."""
    from synthetic import config, latency_samples

    from surrobench.analysis.detect_ops import compute_bound
    from surrobench.analysis.evidence import ConfigEvidence
    from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
    from surrobench.records.ops import OpStat, OpTable

    ops = (OpStat("aten::slow_conv3d_forward", "convolution", 60, 0.0, 0.0, 0.87, 8700.0),)
    ev = ConfigEvidence(result=config(latency_samples(60.0, 0.001)), op_table=OpTable(ops, "cpu", 10000.0, 1, "p"))
    conv = compute_bound(ev, DEFAULT_THRESHOLDS)
    threads = _finding("thread_oversubscription", None, Clause("1 thread", ("threads",)), severity="low")
    copies = _finding("memory_bound", None, Clause("cast once"), severity="medium")
    assert conv.severity == "info" and conv.estimated_gain_ms is None
    named = [r.name for r in recipes_to_measure([copies, threads, conv], "cpu", step_ms=60.0)]
    assert named[0] == "bf16" and named.index("threads=1") > named.index("bf16")
    assert recipes_to_measure([threads, conv], "cpu")[0].name == "threads=1"  # no step: by rank, severity first
    clock = PlantedClock()
    bench = PlantedBench({"bf16": 6.9}, clock=clock, window_s=10.0)
    trials = Trials(bench, bench.rounds, budget_s=12.0, budget_end=12.0, clock=clock, bounded=True)
    got = measure_recipes(trials, recipes_to_measure([threads, conv], "cpu", step_ms=60.0), 1e-2)
    assert got[0].remedy == "bf16" and got[0].verdict == "faster"
    assert {m.verdict for m in got[1:]} == {"not-measured"} and "not measured" in got[1].text()


def test_an_unreliable_profiles_op_verdicts_are_measured_after_the_others():
    """A fresh-user re-check on a busy host: a low fragmented_ops (unreliable profile) naming compile took the 45 s
    budget and the thread count the host finding named read "not measured". Its stake is the profile's: last."""
    fragmented = _finding("fragmented_ops", 9.0, Clause("fuse them", ("compile",)), severity="low")
    host = _finding("thread_oversubscription", 1.0, Clause("1 thread", ("threads",)), severity="low")
    assert recipes_to_measure([fragmented, host], "cpu")[0].name == "compile"  # a reliable profile: by the stake
    named = [r.name for r in recipes_to_measure([fragmented, host], "cpu", unreliable=True)]
    assert named[-1] == "compile" and named[0].startswith("threads=")


def test_a_stacked_clause_is_one_recipe_and_threads_are_every_count():
    stack = _finding("compute_bound", 1.0, Clause("tf32 then compile", ("tf32", "compile"), stacked=True))
    assert [r.name for r in recipes_to_measure([stack], "cuda")] == ["tf32+compile"]
    threads = _finding("compute_bound", 1.0, Clause("use every core", ("threads",)))
    counts = [r.name for r in candidate_remedies("cpu") if r.name.startswith("threads=")]
    assert [r.name for r in recipes_to_measure([threads], "cpu")] == counts


def test_the_measured_action_replaces_the_estimate():
    _, measured = _measure({"cudagraph": 1.73, "compile-reduce-overhead": 3.0, "compile": 0.65, "tf32": 4.5})
    found = _by_name(measured)
    assert found["cudagraph"].verdict == "faster" and found["compile"].verdict == "slower"
    assert found["cudagraph"].saved_ms == pytest.approx(BASELINE_MS * (1 - 1 / 1.73), rel=0.02)
    assert found["cudagraph"].ci95[0] <= found["cudagraph"].speedup <= found["cudagraph"].ci95[1]
    out = {f.kind: f for f in attach_measured(_findings(), {LABEL: measured})}
    launch = out["launch_bound"]
    assert launch.gain_kind == "measured" and launch.best_measured.remedy == "compile-reduce-overhead"
    assert launch.gain_ms == pytest.approx(BASELINE_MS * (1 - 1 / 3.0), rel=0.02)
    assert launch.estimated_gain_ms == 0.83  # the estimate is kept beside it, labelled as one
    doc = launch.to_json()
    assert doc["gain"]["kind"] == "measured" and doc["gain"]["remedy"] == "compile-reduce-overhead"
    assert {m["remedy"]: m["verdict"] for m in doc["measured"]} == {
        "cudagraph": "faster",
        "compile-reduce-overhead": "faster",
    }
    assert "cudagraph: measured 1.7" in launch.action and "saves" in launch.action


def test_findings_are_ordered_by_measured_saving_then_estimate():
    _, measured = _measure({"cudagraph": 1.73, "compile-reduce-overhead": 1.5, "compile": 0.65, "tf32": 4.5})
    other = Finding("fragmented_ops", "high", "copies", (), "keep one layout", estimated_gain_ms=9.0, config=LABEL)
    ranked = rank_findings(attach_measured([*_findings(), other], {LABEL: measured}))
    # tf32 saves the most (the info compute_bound that estimated 0 ms), then cudagraph; then the estimates: 9 ms,
    # then the memory_bound whose only remedy was measured slower, its code change's 2 ms left (no 0 ms measured)
    assert [f.kind for f in ranked] == ["compute_bound", "launch_bound", "fragmented_ops", "memory_bound"]
    assert [f.gain_kind for f in ranked] == ["measured", "measured", "estimate", "estimate"]
    assert ranked[0].gain_ms > ranked[1].gain_ms and ranked[3].gain_ms == 2.0 and ranked[3].severity_estimated


def test_a_remedy_measured_slower_is_never_advised():
    _, measured = _measure({"cudagraph": 1.73, "compile-reduce-overhead": 1.5, "compile": 0.65, "bf16": 0.5})
    memory = next(f for f in attach_measured(_findings(), {LABEL: measured}) if f.kind == "memory_bound")
    assert all("compile" not in c.remedies for c in memory.clauses)  # its clause advises it no more
    assert memory.clauses[0].text.startswith("fuse the elementwise chains (torch.compile): measured, not advised (")
    assert "compile: measured 0.65x" in memory.clauses[0].text and memory.clauses[0].text.endswith("slower)")
    assert memory.clauses[1].text == "preallocate the spectral buffers"  # the code change stays, as written


def test_a_remedy_measured_faster_is_never_advised_against():
    # compile measured faster on a spectral step: it is advised, and no clause of the action warns against it
    _, measured = _measure({"compile": 3.48})
    memory = next(f for f in attach_measured(_findings(), {LABEL: measured}) if f.kind == "memory_bound")
    assert memory.clauses[0].remedies == ("compile",) and "compile: measured 3.48x" in memory.clauses[0].text
    assert not any("not faster" in c.text or "not advised" in c.text for c in memory.clauses)


def test_a_remedy_rejected_by_the_accuracy_guard_carries_its_error_and_tolerance():
    _, measured = _measure({"tf32": 1.4, "bf16": 2.0}, inaccurate=("bf16",))
    bf16 = _by_name(measured)["bf16"]
    assert bf16.verdict == "rejected-by-accuracy" and bf16.speedup is None
    assert (bf16.rel_l2, bf16.tolerance) == (1e-7, 1e-2)  # what the planted guard reported
    compute = next(f for f in attach_measured(_findings(), {LABEL: measured}) if f.kind == "compute_bound")
    assert compute.clauses[0].remedies == ("tf32", "bf16") and "tf32: measured 1.40x" in compute.clauses[0].text
    assert compute.clauses[-1].text.startswith("measured, not advised: bf16: rejected, rel L2")


def test_the_budget_leaves_remedies_unmeasured_and_says_so():
    # each window takes 10 s: compile (a first compilation needs FIRST_COMPILE_S left) and cudagraph fit in 22.5 s,
    # compile-reduce-overhead would end at 27.2 s (a warm compilation, 0.72 of the first) and tf32 at 30 s
    _, measured = _measure({"compile": 1.2, "cudagraph": 1.73}, budget_end=22.5, clock=PlantedClock(), window_s=10.0)
    verdicts = [(m.remedy, m.verdict) for m in measured]
    assert verdicts[:2] == [("compile", "faster"), ("cudagraph", "faster")]
    assert {v for _, v in verdicts[2:]} == {"not-measured"}
    left = _by_name(measured)["tf32"]
    # what it needs (a window) against what is left (22.5 s less the two 10 s windows)
    assert left.reason.startswith("needs about 10 s, 2 s left of the budget")
    assert left.text() == f"tf32: not measured ({left.reason})"
    compute = next(f for f in attach_measured(_findings(), {LABEL: measured}) if f.kind == "compute_bound")
    assert compute.gain_kind == "estimate" and "not measured" in compute.clauses[0].text


def test_the_budget_bounds_what_starts_and_each_window():
    # 10 s budget, windows of 6 rounds of 1 s; cudagraph's rounds take 5 s: unbounded, its window alone is 30 s
    findings = [_finding("launch_bound", 1.0, Clause("tensor cores, then a graph", ("tf32", "cudagraph", "bf16")))]
    clock = PlantedClock()
    bench = PlantedBench({"tf32": 1.1, "cudagraph": 2.0}, rounds=6, clock=clock, window_s=6.0, slow={"cudagraph": 5})
    trials = Trials(bench, bench.rounds, budget_s=10.0, budget_end=10.0, clock=clock, bounded=True)
    found = _by_name(measure_recipes(trials, recipes_to_measure(findings, "cuda"), 1e-2))
    assert found["tf32"].verdict == "faster" and len(bench.baseline.rounds) >= 6  # a full window: it fit
    # started with 4 s left (its least measurement, 2 rounds at the baseline's pace, fits), its one 5 s round ended past
    # the deadline: faster on fewer rounds than the rule needs is not judged faster
    assert found["cudagraph"].verdict == "inconclusive" and found["cudagraph"].speedup > 1.5
    assert bench.windows == [["tf32"], ["cudagraph"]]
    least = 2 * 5 * bench.round_s() * 2  # one remedy's least measurement at cudagraph's pace
    assert clock.now <= 10.0 + least
    skipped = found["bf16"]
    assert (skipped.verdict, skipped.reason) == ("not-measured", "budget of 10 s spent")


def test_ctrl_c_keeps_the_remedies_measured_before_it_and_names_those_it_left():
    # the second window raises Ctrl-C: compile stands as measured, cudagraph and the rest are not measured for it
    bench = PlantedBench({"compile": 1.2, "cudagraph": 1.73}, fail={1: KeyboardInterrupt()})
    trials = Trials(bench, bench.rounds, clock=PlantedClock())
    measured = measure_recipes(trials, recipes_to_measure(_findings(), "cuda"), 1e-2)
    assert [(m.remedy, m.verdict) for m in measured[:2]] == [("compile", "faster"), ("cudagraph", "not-measured")]
    assert {m.reason for m in measured[1:]} == {INTERRUPTED} and len(measured) == 5


def _cpu_config(threads: int = 64):
    """A CPU config of model ``m`` at ``threads`` torch threads (64: none a candidate sets)."""
    from surrobench.execution.config import ExecConfig
    from surrobench.workload.spec import ShapeSpec

    return ExecConfig("m", ShapeSpec(size=8), 1, "fp32", "cpu", "eager", 1, 1, False, 0, 1, threads=threads)


def test_a_remedy_the_baseline_has_is_not_applicable_in_a_config_a_ctrl_c_left(monkeypatch):
    """trial35: diagnose --batch 1,2 --threads 1, Ctrl-C in b1's measuring: b1 said "threads=1: not applicable", b2
    "threads=1: not measured (interrupted)", a remedy to try; the baseline's own is not applicable whatever cut it."""
    from types import SimpleNamespace

    from surrobench.tune import advice

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", stopped)
    labels = [LABEL.replace("b1", f"b{b}") for b in (1, 2)]
    results = [SimpleNamespace(label=lambda lb=lb: lb, latency_ms=None) for lb in labels]
    plan = SimpleNamespace(config_for=lambda r: _cpu_config(threads=1), surrogates={"m": 0})
    every = Clause("use every core", ("threads",), direction="up")
    findings = [Finding("compute_bound", "info", "x", (), (every,), None, config=label) for label in labels]
    with pytest.raises(advice.MeasuringInterrupted) as stop:
        advice.measure_findings(plan, results, findings, 10.0, clock=lambda: 0.0)
    for got in stop.value.args[0].values():  # the config cut and the one after it
        verdicts = {m.remedy: m.verdict for m in got}
        assert verdicts.pop("threads=1") == "infeasible" and set(verdicts.values()) <= {"not-measured"}


def test_ctrl_c_in_one_config_raises_with_its_measurements_and_every_remedy_left(monkeypatch):
    from types import SimpleNamespace

    from surrobench.tune import advice

    kept = MeasuredRemedy("threads=1", "faster", 2.0, (1.9, 2.1), 8.0, 4.0)
    cut = (kept, MeasuredRemedy("compile", "not-measured", reason=INTERRUPTED))
    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", lambda *a, **k: cut)
    labels = [LABEL, LABEL.replace("b1", "b2")]
    results = [SimpleNamespace(label=lambda lb=lb: lb, latency_ms=None) for lb in labels]
    plan = SimpleNamespace(config_for=lambda r: _cpu_config(), surrogates={"m": 0})
    findings = [
        Finding("fragmented_ops", "high", "x", (), (Clause("fuse", ("compile", "threads")),), 1.0, config=label)
        for label in labels
    ]
    with pytest.raises(advice.MeasuringInterrupted) as stop:
        advice.measure_findings(plan, results, findings, 10.0, clock=lambda: 0.0)
    measured, notes = stop.value.args
    assert measured[labels[0]] == cut  # the second config was never started: each of its remedies left by the cut
    assert {(m.verdict, m.reason) for m in measured[labels[1]]} == {("not-measured", INTERRUPTED)}
    assert all(note.endswith(f"; {INTERRUPTED}") for note in notes) and len(notes) == 2
    assert str(stop.value) == f"1 of {2 + len(measured[labels[1]])} remedies measured"


def test_the_configs_after_a_ctrl_c_are_left_without_raising_another(monkeypatch):
    import sys
    from types import SimpleNamespace

    from surrobench.tune import advice

    def stopped(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", stopped)
    labels = [LABEL.replace("b1", f"b{b}") for b in (1, 2, 3)]
    results = [SimpleNamespace(label=lambda lb=lb: lb, latency_ms=None) for lb in labels]
    plan = SimpleNamespace(config_for=lambda r: _cpu_config(), surrogates={"m": 0})
    clause = Clause("fuse", ("compile", "threads"))
    findings = [Finding("fragmented_ops", "high", "x", (), (clause,), 1.0, config=label) for label in labels]
    seen = []  # the exceptions in measure_findings' own frame: the one Ctrl-C and its own, none for control flow

    def trace(frame, event, arg):
        if frame.f_code is advice.measure_findings.__code__:
            return lambda f, e, a: seen.append(a[0]) if e == "exception" else None
        return None

    before = sys.gettrace()
    sys.settrace(trace)
    try:
        with pytest.raises(advice.MeasuringInterrupted) as stop:
            advice.measure_findings(plan, results, findings, 10.0, clock=lambda: 0.0)
    finally:
        sys.settrace(before)
    measured, notes = stop.value.args
    assert seen == [KeyboardInterrupt, advice.MeasuringInterrupted] and list(measured) == labels and len(notes) == 3
    assert {(m.verdict, m.reason) for got in measured.values() for m in got} == {("not-measured", INTERRUPTED)}


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_first_compilation_does_not_start_without_the_time_one_takes_on_its_device(device, monkeypatch):
    """A CPU's note quotes a first compilation measured on a CPU, never an H200's (a trial's diagnose did)."""
    monkeypatch.setattr(PlantedBench, "device", device)
    need, where = FIRST_COMPILE_S[device]
    assert need > 5.0 and ("H200" in where) is (device == "cuda")
    _, measured = _measure({"compile": 1.2, "cudagraph": 1.73}, budget_end=need - 0.5, clock=PlantedClock())
    found = _by_name(measured)
    assert found["compile"].verdict == "not-measured" and found["cudagraph"].verdict == "faster"
    assert found["compile"].reason.startswith(f"a first compilation took up to {need:g} s on {where}")


def test_a_first_compilation_an_optimization_of_the_config_timed_stands_for_the_devices_estimate():
    """A cited compile's note read "a first compilation took up to 33.4 s" where the cited optimization had compiled
    the model in 15.4 s: the setup_s stored for that candidate decides, and the note says where it is from."""
    need, _ = FIRST_COMPILE_S["cuda"]
    stored = {frozenset({"compile"}): {"name": "compile", "setup_s": 15.4, "optimize_id": "o7"}}
    speedups = {"compile": 1.2, "cudagraph": 1.73}
    _, measured = _measure(speedups, budget_end=10.0, clock=PlantedClock(), stored=stored)
    late = _by_name(measured)["compile"]
    cited = stored[frozenset({"compile"})]  # its setup_s and optimization, named in the reason
    assert late.verdict == "not-measured" and "15.4 s" in late.reason and cited["optimize_id"] in late.reason
    _, measured = _measure(speedups, budget_end=need - 0.5, clock=PlantedClock(), stored=stored)
    assert _by_name(measured)["compile"].verdict == "faster"  # 15.4 s fits where the device's 20.6 s did not


def test_diagnose_hands_the_cited_optimizations_setup_to_the_first_compilation_it_waits_for(monkeypatch):
    """The cited optimization's candidates (as ``cited_entry`` gives them) reach the measurement as
    :attr:`Trials.stored`: a stored 15 s compile setup under a 10 s ``--measure-s`` budget is quoted, not the device's
    first-compilation estimate (docs/benchmarks/h200-measured-advice.md: fixed there, checked here end to end)."""
    from types import SimpleNamespace

    from surrobench.tune import advice

    def measure_config(cfg, prepared, findings, budget, stored, **kw):
        return _measure({"compile": 1.2}, findings, budget_end=budget, clock=PlantedClock(), stored=stored)[1]

    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", measure_config)
    result = SimpleNamespace(label=lambda: LABEL, latency_ms=None)
    plan = SimpleNamespace(config_for=lambda r: SimpleNamespace(device="cuda", model="m", seed=0), surrogates={"m": 0})
    finding = _finding("launch_bound", None, Clause("compile it", ("compile",)))
    cited = {LABEL: {"candidates": [{"name": "compile", "setup_s": 15.0, "optimize_id": "o7"}]}}
    measured, _ = advice.measure_findings(plan, [result], [finding], 10.0, clock=lambda: 0.0, cited=cited)
    (late,) = measured[LABEL]
    assert late.verdict == "not-measured" and "15 s in optimization o7" in late.reason
    assert f"{FIRST_COMPILE_S['cuda'][0]:g} s" not in late.reason


def test_budget_zero_gives_estimates_only():
    findings = _findings()
    assert attach_measured(findings, {}) == findings
    assert all(f.gain_kind == "estimate" and f.gain_ms == f.estimated_gain_ms for f in findings)
    assert [f.to_json()["gain"]["kind"] for f in findings] == ["estimate"] * 3


def test_an_infeasible_remedy_is_not_timed():
    bench = PlantedBench({"cudagraph": 2.0})
    bench._infeasible = {"cudagraph": "the step synchronizes the host"}
    trials = Trials(bench, bench.rounds, clock=PlantedClock())
    (m,) = measure_recipes(trials, [Recipe(tuple(candidate_remedies("cuda")[:1]))], 1e-2)
    assert (m.verdict, m.reason) == ("infeasible", "the step synchronizes the host") and bench.opened == []


def test_the_default_deadline_bounds_each_configs_budget_and_skips_what_cannot_fit(monkeypatch):
    from types import SimpleNamespace

    from surrobench.tune import advice

    budgets = []
    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", lambda cfg, p, f, budget, stored, **k: budgets.append(budget) or ())
    labels = [LABEL, LABEL.replace("b1", "b2")]
    results = [SimpleNamespace(label=lambda lb=lb: lb, latency_ms=None) for lb in labels]
    plan = SimpleNamespace(config_for=lambda r: SimpleNamespace(device="cuda", model="m", seed=0), surrogates={"m": 0})
    findings = [_finding("launch_bound", 1.0, Clause("graph", ("cudagraph",)))]
    findings += [f.__class__(**{**f.__dict__, "config": labels[1]}) for f in findings]
    # 60 s left for two configs: the first gets half, below the 45 s asked; the clock stood still, so the second
    # gets the 60 s left, capped at the 45 s asked
    advice.measure_findings(plan, results, findings, 45.0, deadline=160.0, clock=lambda: 100.0)
    assert budgets == [30.0, 45.0]
    # no deadline: the budget asked
    budgets.clear()
    advice.measure_findings(plan, results, findings, 45.0, clock=lambda: 100.0)
    assert budgets == [45.0, 45.0]
    # 8 s left: nothing measured, each config's note says why
    budgets.clear()
    measured, notes = advice.measure_findings(plan, results, findings, 45.0, deadline=108.0, clock=lambda: 100.0)
    assert budgets == [] and measured == {} and len(notes) == 2 and "not measured" in notes[0]
    assert advice.DIAGNOSE_TARGET_S <= 90 - 15 and advice.COUNTERS_TARGET_S <= 150 - 15


def _cpu_findings() -> list[Finding]:
    """As a 1-D conv ResNet's CPU diagnosis read in a trial: fragmented_ops names compile and threads among its
    clauses, thread_oversubscription names only threads."""
    fragmented = _finding(
        "fragmented_ops",
        None,
        Clause("fuse the elementwise chain (torch.compile)", ("compile",)),
        Clause("check torch.get_num_threads()", ("threads",)),
        Clause("fewer, larger calls"),
    )
    threads = _finding(
        "thread_oversubscription", None, Clause("torch.set_num_threads(1)", ("threads",)), severity="low"
    )
    return [fragmented, threads]


def test_a_remedy_measured_under_one_finding_is_advised_by_another_only_where_faster():
    """A fresh-user trial's MoE (CPU): compile measured 0.96x, slower, under fragmented_ops ("measured, not advised")
    while memory_bound still advised it, "(measured under fragmented_ops)", compile in its remedies. Measured not
    faster (slower, not told apart, rejected by the accuracy guard) neither finding advises it, the other one saying
    so with the verdict and where it was measured; measured faster, both advise it, the measurement held once."""
    fragmented = _finding("fragmented_ops", None, Clause("torch.compile", ("compile",)), Clause("fewer, larger calls"))
    memory = _finding("memory_bound", None, Clause("fuse the chain: torch.compile", ("compile",)), severity="low")
    verdicts = set()
    for speedup, inaccurate in ((0.65, ()), (1.0, ()), (3.0, ("compile",)), (3.0, ())):
        _, (m,) = _measure({"compile": speedup}, [fragmented, memory], inaccurate=inaccurate)
        verdicts.add(m.verdict)
        out = {f.kind: f for f in attach_measured([fragmented, memory], {LABEL: (m,)})}
        faster = m.verdict == "faster"
        assert [("compile" in f.to_json()["remedies"]) for f in out.values()] == [faster, faster]
        assert [f.measured for f in out.values()] == [(m,), ()]  # its saving counted once
        pointer = out["memory_bound"].clauses[0].text
        assert m.verdict in pointer and "fragmented_ops" in pointer and m.text() not in pointer
        assert out["memory_bound"].gain["kind"] == "estimate" and out["memory_bound"].severity == "low"
    assert {"slower", "rejected-by-accuracy", "faster"} <= verdicts and len(verdicts) == 4


def test_a_measured_saving_is_credited_once_to_the_finding_whose_remedy_it_is():
    base = 269.0
    measured = (
        MeasuredRemedy("compile", "not-measured", reason="budget spent"),
        MeasuredRemedy(
            "threads=1", "faster", 6.06, (3.89, 16.31), base, base * (1 - 1 / 6.06), noise_floor=0.1, margin=0.1
        ),
    )
    out = {f.kind: f for f in attach_measured(_cpu_findings(), {LABEL: measured})}
    threads, fragmented = out["thread_oversubscription"], out["fragmented_ops"]
    assert threads.best_measured.remedy == "threads=1" and threads.gain_ms == pytest.approx(base * (1 - 1 / 6.06))
    assert threads.severity == "high"  # 84% of the step, measured
    assert [m.remedy for m in fragmented.measured] == ["compile"] and fragmented.best_measured is None
    assert fragmented.gain_ms is None  # compile not measured: the (unknown) estimate, never 0 or the threads saving
    assert "thread_oversubscription" in fragmented.action  # the finding whose measurement it reads
    claimed = sum(f.gain_ms or 0.0 for f in out.values())
    assert claimed <= base
    assert [f.kind for f in rank_findings(list(out.values()))][0] == "thread_oversubscription"


def test_a_remedy_not_faster_shows_the_noise_floor_the_rule_used():
    m = MeasuredRemedy("threads=1", "no-difference", 5.93, (1.50, 41.75), 89.7, 74.6, noise_floor=0.64, margin=0.64)
    assert "1.640" in m.text() and "noise floor 64.0%" in m.text()
    assert MeasuredRemedy.from_json(m.to_json()) == m
    both = {LABEL: (m, MeasuredRemedy("compile", "slower", 0.5, (0.4, 0.6), 89.7, -89.7))}
    fragmented = attach_measured(_cpu_findings()[:1], both)[0]
    # every remedy judged, none faster: "fewer, larger calls" (a code change) still stands on the stake, estimated
    assert fragmented.severity == _cpu_findings()[0].severity == "high" and fragmented.severity_estimated
    assert fragmented.gain == fragmented.gain | {"kind": "estimate", "ms": None, "remedy": None}
    toggles = attach_measured([replace(_cpu_findings()[0], action=_cpu_findings()[0].clauses[:2])], both)[0]
    assert toggles.severity == "low" and toggles.gain["kind"] == "measured" and toggles.gain_ms == 0.0  # none left


def test_remedies_all_failed_rate_the_same_measured_by_diagnose_or_cited_from_optimize():
    """A GNO on a CPU: compile measured 0.90x, not faster, by diagnose or by optimize; its memory_bound finding
    still advises ordering the indices (a code change): the same severity, its stake's, on both paths."""
    finding = _finding("memory_bound", None, Clause("fuse: torch.compile", ("compile",)), Clause("order the indices"))
    own = {LABEL: (MeasuredRemedy("compile", "no-difference", 0.90, (0.88, 0.95), 4.0, -0.4),)}
    sp = {"median": 0.9, "ci95": [0.88, 0.95], "noise_floor": 0.01}
    entry = optimize_entry({"candidates": [{"name": "compile", "verdict": "rejected_not_faster", "speedup": sp}]})
    measured, cited = attach_measured([finding], own)[0], attach_measured([finding], {}, {LABEL: entry})[0]
    assert measured.severity == cited.severity == finding.severity == "high"
    # the gain tells the severity's story: the code change's estimate (unknown here), never a measured 0 ms saving
    assert measured.gain["kind"] == cited.gain["kind"] == "estimate" and measured.gain_ms is cited.gain_ms is None
    assert measured.severity_estimated and cited.severity_estimated
    alone = [attach_measured([replace(finding, action=finding.clauses[:1])], own)[0]]
    alone.append(attach_measured([replace(finding, action=finding.clauses[:1])], {}, {LABEL: entry})[0])
    assert [(f.severity, f.gain["kind"], f.gain_ms, f.severity_estimated) for f in alone] == [
        ("low", "measured", 0.0, False)
    ] * 2
    assert Finding.from_json(measured.to_json()) == measured  # the mark is stored


def test_a_saving_is_never_credited_to_a_finding_that_points_the_other_way():
    """threads=1 measured faster on a 4-thread baseline (down): not a measurement of memory_bound's "use every core"
    (up), which is no longer advised against it; credited to the finding that says fewer threads, else a line of
    its own."""
    from surrobench.records.findings import direction
    from surrobench.results.measured_remedies import unclaimed

    assert direction("threads=1", 4) == "down" and direction("threads=8", 4) == "up"
    assert direction("threads=4", 4) is None and direction("compile", 4) is None
    base = 100.0
    fewer = MeasuredRemedy("threads=1", "faster", 1.5, (1.4, 1.6), base, base / 3, direction="down")
    assert MeasuredRemedy.from_json(fewer.to_json()) == fewer
    every_core = _finding("memory_bound", 5.0, Clause("use every core", ("threads",), direction="up"))
    alone = {f.kind: f for f in attach_measured([every_core], {LABEL: (fewer,)})}["memory_bound"]
    assert alone.measured == () and alone.gain_kind == "estimate" and alone.remedies == ()
    (said,) = alone.clauses
    assert (
        said.text == f"use every core: not advised, measured faster the other way ({fewer.text()})"
        and said.remedies == ()
    )
    assert unclaimed([alone], {LABEL: (fewer,)}) == [f"{LABEL}: {fewer.text()}: no finding's action points this way"]
    down = _finding("thread_oversubscription", None, Clause("torch.set_num_threads(1)", ("threads",), direction="down"))
    out = {f.kind: f for f in attach_measured([every_core, down], {LABEL: (fewer,)})}
    assert out["thread_oversubscription"].best_measured == fewer and out["memory_bound"].measured == ()
    assert out["memory_bound"].remedies == ()  # "use every core" not advised beside fewer threads measured faster
    assert unclaimed(list(out.values()), {LABEL: (fewer,)}) == []
    # a remedy in the measured recipe optimize recommends for the config is credited to its recipe clause
    quiet = _finding("compute_bound", None, severity="info")  # no finding tells the recipe: the line stays
    for recipe, finding, lines in (
        (["threads=1"], every_core, 0),
        (["compile"], every_core, 1),
        (["threads=1"], quiet, 1),
    ):
        entry = optimize_entry({"candidates": [], "recommended": recipe}) | {"optimize_id": "o7"}
        told = attach_measured([finding], {LABEL: (fewer,)}, {LABEL: entry})
        assert len(unclaimed(told, {LABEL: (fewer,)})) == lines
    assert Finding.from_json(every_core.to_json()).clauses == every_core.clauses  # the direction kept
    # a count above the baseline's measured faster is cited by the clause, as any remedy
    more = MeasuredRemedy("threads=8", "faster", 1.2, (1.1, 1.3), base, base / 6, direction="up")
    up = {f.kind: f for f in attach_measured([every_core], {LABEL: (fewer, more)})}["memory_bound"]
    assert up.best_measured == more and up.remedies == ("threads",)


def test_savings_are_taken_on_one_step_when_the_baseline_drifts_between_windows():
    # cudagraph's window: the baseline at 1x, cudagraph 3x faster; compile-reduce-overhead's: the baseline drifted to
    # 2x and the remedy does nothing but hold the old time (2x by the pair). On their own baselines compile would save
    # more (2 * (1 - 1/2) = 1.0 against 1 - 1/3 = 0.67 baselines) and lead; on one step the larger speedup leads.
    drift = {"baseline": lambda seen: 1.0 if seen == 0 else 2.0, "cudagraph": 3.0}
    findings = [_findings()[0]]
    _, measured = _measure(drift, findings)
    found = _by_name(measured)
    assert found["compile-reduce-overhead"].baseline_ms > 1.5 * found["cudagraph"].baseline_ms  # the drift is planted
    assert found["cudagraph"].speedup > found["compile-reduce-overhead"].speedup
    assert found["cudagraph"].saved_ms > found["compile-reduce-overhead"].saved_ms
    launch = attach_measured(findings, {LABEL: measured})[0]
    assert launch.best_measured.remedy == "cudagraph"


def test_savings_are_taken_on_the_timed_step_and_a_window_that_drifted_from_it_says_so(monkeypatch):
    """A fresh-user trial: threads=1 measured 31.85x in a window whose baseline ran 510 ms against a 23.3 ms timed
    step. A window outside the timed step's 95% interval and more than 2% from it is marked drifted, named in a note;
    its saving is the timed step's, step_ms x (1 - 1/speedup), as every other (its window's exceeded the step)."""
    from surrobench.records.findings import saved_ms
    from surrobench.records.stats import LatencyStats
    from types import SimpleNamespace

    from surrobench.tune import advice

    def note(got, timed) -> str:  # the config's note as measure_findings writes it
        monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
        monkeypatch.setattr(advice, "measure_config", lambda *a, **k: got)
        result = SimpleNamespace(label=lambda: LABEL, latency_ms=timed)
        plan = SimpleNamespace(
            config_for=lambda r: SimpleNamespace(device="cpu", model="m", seed=0), surrogates={"m": 0}
        )
        finding = _finding("launch_bound", None, Clause("graphs", ("cudagraph",)))
        return advice.measure_findings(plan, [result], [finding], 10.0, clock=lambda: 0.0)[1][0]

    def measured(timed):
        bench = PlantedBench({"cudagraph": 2.0, "compile-reduce-overhead": 1.5})
        trials = Trials(bench, bench.rounds, budget_s=3.0, budget_end=float("inf"), clock=PlantedClock())
        got = measure_recipes(trials, recipes_to_measure([_findings()[0]], "cuda"), 1e-2, timed)
        return got, [m for m in got if m.verdict == "faster"]

    near = LatencyStats.from_samples([9.0, 9.5, 10.5])  # the windows' 10 ms inside its interval
    got, faster = measured(near)
    assert near.ci95_median[0] <= BASELINE_MS <= near.ci95_median[1] and faster
    assert all(m.saved_ms == pytest.approx(saved_ms(9.5, m.speedup)) and not m.drifted for m in faster)
    assert "drifted" not in note(got, near)
    far = LatencyStats.from_samples([6.0, 6.0, 6.1])  # the timed step ran 0.6x the windows'
    got, faster = measured(far)
    assert all(m.drifted and m.saved_ms == pytest.approx(saved_ms(6.0, m.speedup)) for m in faster)
    _, _, drifted = note(got, far).partition("; the host drifted: windows timed the baseline off the timed step's 6 ms")
    # each remedy named with its window's baseline (10 ms), not as if it ran at it (cudagraph ran at 5 ms)
    graph = next(m for m in faster if m.remedy == "cudagraph")
    assert graph.baseline_ms == pytest.approx(BASELINE_MS, rel=1e-3)
    assert "cudagraph (" in drifted and "(baseline 10 ms)" in drifted
    tight = LatencyStats.from_samples([BASELINE_MS * 0.99] * 3)  # outside a tight interval by 1%: within the noise
    assert tight.ci95_median[1] < BASELINE_MS and not any(m.drifted for m in measured(tight)[0])
    assert not any(m.drifted for m in measured(None)[0])


def test_a_drifted_saving_ranks_after_the_timed_steps_and_severity_has_one_denominator():
    """Severity follows the share of the step a saving saves, 1 - 1/speedup (a saving on a 10 ms step over a 40 ms
    window's baseline read 8%, "low"); a drifted window's saving ranks after those on the timed step, its severity
    from its own window's ratio (the trial's 31.85x read 4.4%, "low"; a later trial's drifted 1.66x left an
    uncalibrated compute_bound "info" beside a 1.37x "high")."""
    from surrobench.records.findings import saved_ms

    on_step = MeasuredRemedy("threads=1", "faster", 1.5, (1.4, 1.6), 40.0, saved_ms(10.0, 1.5))
    drifted = MeasuredRemedy("compile", "faster", 31.85, (26.4, 42.6), 510.0, saved_ms(510.0, 31.85), drifted=True)
    findings = [
        _finding("memory_bound", None, Clause("fuse (torch.compile)", ("compile",)), severity="medium"),
        _finding("thread_oversubscription", None, Clause("1 thread", ("threads",)), severity="low"),
    ]
    out = rank_findings(attach_measured(findings, {LABEL: (on_step, drifted)}))
    assert [f.kind for f in out] == ["thread_oversubscription", "memory_bound"]
    threads, memory = out
    assert threads.severity == "high" and threads.gain == {
        "kind": "measured",
        "ms": pytest.approx(10 / 3),
        "remedy": "threads=1",
        "whole_step": False,
        "drifted": False,
        "none_faster": False,
    }
    assert memory.severity == "high" and memory.gain["drifted"] and memory.gain_ms > BASELINE_MS * 40


def test_a_configs_note_counts_what_it_lists(monkeypatch):
    """A fresh-user trial read "3 of 4 remedies measured; not applicable: threads=2": the not applicable one was in
    the count, a failed one among the measured. The note counts the measured of those that apply, and names each
    with its verdict (a later trial's threads=1, credited to no finding, was measured and shown nowhere)."""
    from types import SimpleNamespace

    from surrobench.tune import advice

    got = (
        MeasuredRemedy("threads=1", "slower", 0.6, (0.5, 0.7), 3.0, -2.0),
        MeasuredRemedy("threads=2", "infeasible", reason="the baseline already runs 2"),
        MeasuredRemedy("compile", "not-measured", reason="budget spent"),
        MeasuredRemedy("bf16", "rejected-by-accuracy", rel_l2=0.1, tolerance=0.01),
        MeasuredRemedy("channels_last", "failed", reason="boom"),
    )
    monkeypatch.setattr(advice, "prepare_model", lambda *a: None)
    monkeypatch.setattr(advice, "measure_config", lambda *a, **k: got)
    result = SimpleNamespace(label=lambda: LABEL, latency_ms=None)
    plan = SimpleNamespace(config_for=lambda r: SimpleNamespace(device="cpu", model="m", seed=0), surrogates={"m": 0})
    finding = _finding("thread_oversubscription", None, Clause("fewer threads", ("threads",)))
    measured, (note,) = advice.measure_findings(plan, [result], [finding], 10.0, clock=lambda: 0.0)
    assert measured == {LABEL: got}
    head, _, tail = note.partition(" s (budget 10 s)")
    assert head.startswith(f"{LABEL}: 2 of 4 remedies measured in ")
    assert tail.startswith(": threads=1 (slower 0.60x), bf16 (rejected-by-accuracy); failed: channels_last; not me")
    unmeasured = (MeasuredRemedy("compile", "not-measured", reason="budget spent"),)
    monkeypatch.setattr(advice, "measure_config", lambda *a, **k: unmeasured)
    cited = {LABEL: {"candidates": [{"name": "compile", "optimize_id": "o7"}]}}  # as cited_entry names them
    _, (note,) = advice.measure_findings(plan, [result], [finding], 10.0, clock=lambda: 0.0, cited=cited)
    assert note.endswith("; not measured: compile (budget spent)")  # where it is cited from: cited_lines' line
    # a fresh-user trial read "not measured: compile", its reason only in the JSON: each reason once, after its names
    late = "a first compilation took up to 33.4 s on a 2-core EPYC CPU, none ran here; 20 s left"
    unmeasured = tuple(MeasuredRemedy(n, "not-measured", reason=late) for n in ("compile", "compile-max"))
    unmeasured += (
        MeasuredRemedy("fp16", "not-measured", reason="budget spent"),
        MeasuredRemedy("bf16", "not-measured"),
    )
    _, (note,) = advice.measure_findings(plan, [result], [finding], 10.0, clock=lambda: 0.0)
    assert note.endswith(f"; not measured: compile, compile-max ({late}), fp16 (budget spent), bf16")


def test_a_reduced_precision_compute_bound_config_names_fp32_and_measures_it():
    # a fresh-user trial's ConvLSTM ran fp16 on a CPU 25x slower than fp32; its one finding (convolutions hold the
    # op time, no roofline) named no way back to fp32, so diagnose measured none

    from synthetic import config, latency_samples

    from surrobench.analysis.detect_ops import compute_bound
    from surrobench.analysis.evidence import ConfigEvidence
    from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
    from surrobench.records.ops import OpStat, OpTable

    ops = (OpStat("aten::_slow_conv2d_forward", "convolution", 60, 0.0, 0.0, 0.9, 9000.0),)
    table = OpTable(ops, "cpu", 10000.0, 1, "profiler")
    for precision in ("fp32", "tf32", "fp16"):  # and the settings measured without a calibration: bf16, threads
        result = config(latency_samples(20.0, 0.001), precision=precision)
        found = compute_bound(ConfigEvidence(result=result, op_table=table), DEFAULT_THRESHOLDS)
        named = [r.name for r in recipes_to_measure([found], "cpu")]
        assert ("fp32" in named) == (precision != "fp32") and "bf16" in named
    bench = PlantedBench({"fp32": 25.0})
    got = measure_recipes(Trials(bench, bench.rounds, clock=PlantedClock()), recipes_to_measure([found], "cpu"), 1e-2)
    m = _by_name(got)["fp32"]
    assert (m.remedy, m.verdict) == ("fp32", "faster") and m.speedup == pytest.approx(25.0, rel=0.02)


def test_two_clauses_naming_one_remedy_give_its_measurement_once():
    """Two families' "use every core" (an im2col and a oneDNN convolution): threads=2 judged once, then referred to."""
    two = MeasuredRemedy("threads=2", "no-difference", 1.4, (0.98, 1.52), 10.0, 2.9, margin=0.02, direction="up")
    clauses = (Clause("use every core", ("threads",), direction="up"), Clause("use all cores", ("threads",)))
    (found,) = attach_measured([_finding("compute_bound", None, *clauses, severity="info")], {LABEL: (two,)})
    assert [c.text for c in found.clauses] == [
        f"use every core: measured, inconclusive ({two.text()})",  # neither advised nor advised against
        "use all cores: measured, inconclusive (threads=2: as above)",
    ]
    assert found.measured == (two,)


def test_an_inconclusive_measurement_is_said_inconclusive_never_not_advised():
    """A fresh-user trial: threads=1 inconclusive 1.65x [1.13, 4.36] (the baseline's own threads=2 not applicable) read
    "measured, not advised"; measured slower it is not advised, and inconclusive beside a remedy measured faster it is
    not said "not advised" either (its measurement is the finding's)."""
    one = MeasuredRemedy("threads=1", "inconclusive", 1.65, (1.13, 4.36), 10.0, 6.0, margin=0.5, direction="down")
    own = MeasuredRemedy("threads=2", "infeasible", reason="the baseline already runs 2", direction="up")
    fewer = Clause("torch.set_num_threads(1)", ("threads",), direction="down")
    (found,) = attach_measured([_finding("thread_oversubscription", None, fewer)], {LABEL: (one, own)})
    assert found.clauses[0].text.startswith("torch.set_num_threads(1): measured, inconclusive (threads=1: measured")
    slower = replace(one, verdict="slower", speedup=0.5, ci95=(0.4, 0.6))
    (found,) = attach_measured([_finding("thread_oversubscription", None, fewer)], {LABEL: (slower, own)})
    assert ": measured, not advised (" in found.clauses[0].text
    bf16 = MeasuredRemedy("bf16", "faster", 2.0, (1.8, 2.2), 10.0, 5.0, margin=0.02)
    compiled = replace(one, remedy="compile", direction=None)
    either = Clause("bf16 autocast or torch.compile", ("bf16", "compile"))
    (found,) = attach_measured([_finding("compute_bound", None, either)], {LABEL: (bf16, compiled)})
    assert found.measured == (bf16, compiled) and not any("not advised" in c.text for c in found.clauses)


def test_a_family_clause_keeps_its_direction_and_elsewhere_means_measured_there():
    """A family's headed first clause keeps its direction (so ``threads=1`` measured faster stops "use every core
    for oneDNN" credited elsewhere); "measured under" names another finding only where it measured the remedy; a
    clause whose remedies were all judged not applicable is not called measured."""
    from surrobench.analysis.op_families import family_actions

    conv = family_actions(["aten::mkldnn_convolution"], cpu=True)
    assert any(c.remedies == ("threads",) and c.direction == "up" for c in conv)
    faster = MeasuredRemedy("threads=1", "faster", 4.3, (3.8, 4.4), 200.0, 150.0, direction="down")
    threads = _finding("thread_oversubscription", 1.0, Clause("threads=1", ("threads",), direction="down"))
    compute = _finding("compute_bound", 1.0, *conv)
    memory = _finding("memory_bound", 2.0, Clause("fuse (torch.compile)", ("compile",)))
    fragmented = _finding("fragmented_ops", 1.0, Clause("torch.compile", ("compile",)))
    unmeasured = MeasuredRemedy("compile", "not-measured", None, None)
    out = {f.kind: f for f in attach_measured([threads, compute, memory, fragmented], {LABEL: [faster, unmeasured]})}
    assert not any(c.remedies == ("threads",) for c in out["compute_bound"].clauses)  # advised against, not advised
    assert out["fragmented_ops"].clauses == fragmented.clauses  # compile was not measured under memory_bound
    moot = MeasuredRemedy("threads=2", "infeasible", None, None)
    (every_core,) = attach_measured(
        [_finding("compute_bound", 1.0, Clause("use every core", ("threads",)))], {LABEL: [moot]}
    )
    assert every_core.clauses[0].remedies == () and "measured" not in every_core.clauses[0].text


def test_diagnose_measures_a_thread_count_above_the_free_cores_last_as_optimize_tries_it():
    """A loaded host: one core free, the thread counts named first by their finding's estimate; those above the free
    core are measured after compile, so a short budget goes first to a remedy that can help (a fresh user's diagnose
    spent 24 s of 20 on threads=2 first)."""
    threads = _finding("compute_bound", 5.0, Clause("use every core", ("threads",)), severity="high")
    fuse = _finding("memory_bound", 1.0, Clause("fuse (torch.compile)", ("compile",)), severity="medium")
    recipes = recipes_to_measure([threads, fuse], "cpu")
    crowded = [r.name for r in recipes if r.name.startswith("threads=") and r.name != "threads=1"]
    if not crowded:
        pytest.skip("one usable core: no thread count above one free core is named")
    assert [r.name for r in recipes].index(crowded[0]) < [r.name for r in recipes].index("compile")
    clock = PlantedClock()
    bench = PlantedBench({"compile": 1.5}, clock=clock, free_cores=1)
    trials = Trials(bench, bench.rounds, budget_s=60.0, budget_end=1e9, clock=clock)
    order = [m.remedy for m in measure_recipes(trials, recipes, 1e-2)]
    assert all(order.index("compile") < order.index(name) for name in crowded)
    bench.cores = 64  # cores enough: the estimate's order
    trials = Trials(bench, bench.rounds, budget_s=60.0, budget_end=1e9, clock=clock)
    order = [m.remedy for m in measure_recipes(trials, recipes, 1e-2)]
    assert order.index(crowded[0]) < order.index("compile")


def test_diagnose_measures_a_thread_count_crowded_by_its_turn_after_the_others_as_optimize_does():
    """Room when diagnose began measuring, none by the thread count's turn (the load came once compile ran): it is
    measured after the remedy behind it, by optimize's turns (:meth:`Trials.crowded_turns`), and says why."""
    from planted_search import remedies

    clock = PlantedClock()
    bench = PlantedBench({"compile": 1.3, "threads=4": 1.5, "tf32": 1.0}, clock=clock)
    bench.free_cores = lambda: 8 if clock.now == 0 else 1
    got = measure_recipes(
        Trials(bench, bench.rounds, clock=clock), [Recipe((r,)) for r in remedies("compile", "threads=4", "tf32")], 1e-2
    )
    assert [m.remedy for m in got] == ["compile", "tf32", "threads=4"] == bench.opened
    assert [m.verdict for m in got] == ["faster", "unchanged", "faster"] and "for 1 free core(s)" in got[-1].reason


def test_a_thread_count_timed_on_a_crowded_host_says_so_as_optimize_s_does():
    """A fresh user's diagnose advised threads=2 (1.29x) on a host where optimize deferred it as "2 threads for 1
    free core(s)": diagnose tries it by optimize's rule (:meth:`Trials.crowds`: last, its window cut at the deadline)
    and its measurement, and the clause citing it, say why; one the budget leaves out says it as optimize's not tried."""
    from planted_search import remedies

    threads, compile_ = (Recipe((r,)) for r in remedies("threads=4", "compile"))
    bench = PlantedBench({"compile": 1.3, "threads=4": 1.5}, clock=PlantedClock(), free_cores=1)
    trials = Trials(bench, bench.rounds, budget_s=60.0, budget_end=1e9, clock=bench.clock)
    got = _by_name(measure_recipes(trials, [threads, compile_], 1e-2))
    assert bench.opened == ["compile", "threads=4"]
    assert (got["threads=4"].verdict, got["threads=4"].reason) == ("faster", "tried last: 4 threads for 1 free core(s)")
    assert got["compile"].reason == ""
    every_core = _finding("compute_bound", 1.0, Clause("use every core", ("threads",), direction="up"))
    (cited,) = attach_measured([every_core], {LABEL: tuple(got.values())})
    assert cited.clauses[0].remedies == ("threads",) and cited.clauses[0].text.endswith("for 1 free core(s))")
    short = PlantedBench({"channels_last": 1.3}, clock=PlantedClock(), free_cores=1)
    trials = Trials(short, short.rounds, budget_s=1.0, budget_end=1.0, clock=short.clock, bounded=True)
    left = _by_name(measure_recipes(trials, [threads, Recipe(tuple(remedies("channels_last")))], 1e-2))["threads=4"]
    assert left.verdict == "not-measured" and left.reason.startswith("tried last: 4 threads for 1 free core(s): ")


@pytest.mark.parametrize(
    "line, last",
    [
        ("flags\t\t: fpu sse2 avx2 fma", True),
        ("flags\t\t: fpu avx512f avx512_bf16", False),
        ("Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp", True),  # aarch64: Neoverse N1
        ("Features\t: fp asimd atomics sve svebf16 i8mm bf16 dgh rng", False),  # aarch64: Neoverse V1 (Graviton3)
    ],
)
def test_bf16_is_measured_last_on_a_cpu_without_bf16_units_and_its_clause_says_why(line, last, tmp_path, monkeypatch):
    """On a CPU whose flags name no bf16 units (x86's avx512_bf16, amx_bf16 on its ``flags`` line; ARM's bf16 on its
    ``Features`` line: a planted /proc/cpuinfo) bf16 is emulated and slower: optimize and diagnose try it after the
    other remedies (:meth:`Trials.crowds`), and its measurement, or the clause naming it when the budget leaves it
    out, says why; a CPU with them keeps its place. An ARM host was read as neither before its line was read."""
    from planted_search import planted_search, remedies

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: planted\n{line}\n")
    monkeypatch.setattr("surrobench.execution.host_facts.CPUINFO", cpuinfo)
    bench = PlantedBench({"bf16": 0.5, "compile": 1.3})
    bench.device = "cpu"
    planted_search(bench).singles(remedies("bf16", "compile"))  # optimize's singles
    assert bench.opened == (["compile", "bf16"] if last else ["bf16", "compile"])
    bf16, nhwc = (Recipe((r,)) for r in remedies("bf16", "channels_last"))
    short = PlantedBench({"channels_last": 1.3}, clock=PlantedClock())
    short.device = "cpu"
    trials = Trials(short, short.rounds, budget_s=1.0, budget_end=1.0, clock=short.clock, bounded=True)
    got = _by_name(measure_recipes(trials, [bf16, nhwc], 1e-2))  # the budget holds one window: the first
    left = {name for name, m in got.items() if m.verdict == "not-measured"}
    assert left == ({"bf16"} if last else {"channels_last"})
    assert got["bf16"].reason.startswith("tried last: this CPU has no bf16 units") is last
    half = _finding("compute_bound", 1.0, Clause("bf16 autocast", ("bf16",)))
    (said,) = attach_measured([half], {LABEL: tuple(got.values())})
    assert ("no bf16 units" in said.clauses[0].text) is last
