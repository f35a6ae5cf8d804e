"""The diagnosis cites optimize's measurements through the one attach path (:func:`attach_measured`): each remedy
diagnose did not judge is taken from optimize's stored config objects (the newest judgement not inconclusive),
marked with its optimization; diagnose's own wins; the remedies are the clauses' structured ids, never words of the
action."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic import config, optimize_entry

from surrobench.records.findings import Clause, Evidence, Finding, MeasuredRemedy
from surrobench.results.measured_remedies import attach_measured


def _text(action: tuple[Clause, ...]) -> str:
    return "; ".join(c.text for c in action)


def _cand(name, verdict, median=None, rel_l2=1e-7, reason="planted"):
    accuracy = {"ok": rel_l2 < 1e-2, "decided_by": "rel_l2", "reason": "planted", "rel_l2": rel_l2, "max_abs": None}
    c = {"name": name, "verdict": verdict, "rel_l2": rel_l2, "reason": reason, "accuracy": accuracy}
    if median is not None:
        c["speedup"] = {"median": median, "ci95": [median * 0.95, median * 1.05], "noise_floor": 0.01}
    return c


ENTRY = optimize_entry(
    {
        "candidates": [
            _cand("cudagraph", "accepted", 4.0),
            _cand("compile", "rejected_slower", 0.8),
            _cand("compile-reduce-overhead", "rejected_slower", 0.9),
            _cand("channels_last", "rejected_slower", 0.66),
            _cand("bf16", "rejected_accuracy", rel_l2=0.03),
            _cand("cudagraph+tf32", "accepted", 4.6),
        ],
        "recommended": ["cudagraph", "tf32"],
        "recipe": {"speedup": {"median": 4.6, "ci95": [4.37, 4.83], "noise_floor": 0.01}},
    }
) | {"optimize_id": "o7"}


GRAPH = Clause("capture the step as a CUDA graph", ("cudagraph",))
REDUCE_OVERHEAD = Clause("or torch.compile(mode='reduce-overhead')", ("compile-reduce-overhead",))


def _cited(*action, entry=ENTRY, threads=None, own=(), severity="high") -> Finding:
    """A finding of config ``cfg A`` naming ``action``, with ``own`` measured by diagnose and ``entry`` stored by
    optimize; ``threads``: the thread count the config ran with."""
    finding = Finding("launch_bound", severity, "s", (Evidence("profiler", "x"),), action, 1.0, "cfg A")
    result = config((), extra={"torch_threads": threads} if threads else {})  # no timed step: savings their own
    (out,) = attach_measured([finding], {"cfg A": own} if own else {}, {"cfg A": entry}, {"cfg A": result})
    return out


def test_launch_bound_action_shows_the_measured_speedup_and_withdraws_the_slower_remedy():
    out = _cited(GRAPH, REDUCE_OVERHEAD)
    graph, overhead, recipe = out.clauses
    assert graph.text.startswith("capture the step as a CUDA graph (cudagraph: measured 4.00x [3.80, 4.20] in ")
    assert graph.remedies == ("cudagraph",) and overhead.remedies == ()  # measured slower: never recommended
    assert overhead.text.endswith(
        "measured, not advised (compile-reduce-overhead: measured 0.90x [0.85, 0.95] in optimization o7, slower)"
    )
    assert recipe.text == "measured recipe: cudagraph+tf32 4.60x [4.37, 4.83] in optimization o7"
    assert recipe.remedies == ("cudagraph", "tf32")  # the recipe's clause suggests its remedies
    graphed = out.measured[0]
    assert (graphed.remedy, graphed.verdict, graphed.speedup, graphed.cited) == ("cudagraph", "faster", 4.0, "o7")
    pooled = optimize_entry(
        {**ENTRY, "recipe": {"speedup": {"median": 4.4, "ci95": [4.1, 4.7], "noise_floor": 0.01}, "windows": 3}}
    )
    assert _text(_cited(GRAPH, entry=pooled).clauses).endswith(
        "recipe: cudagraph+tf32 4.40x [4.10, 4.70] in optimization o7"
    )
    assert out.severity == "high"  # a remedy measured faster, its saving unknown (no baseline ms): not none faster


def test_reduce_overhead_is_its_own_remedy_not_the_default_compile():
    """torch.compile(mode='reduce-overhead') is cited with the compile-reduce-overhead candidate; a plain
    torch.compile clause with the default compile's."""
    entry = optimize_entry({"candidates": [_cand("compile", "accepted", 1.6)], "recommended": ["compile"]})
    fuse = Clause("fuse with torch.compile", ("compile",))
    overhead = Clause("torch.compile(mode='reduce-overhead')", ("compile-reduce-overhead",))
    out = _cited(overhead, fuse, entry=entry)
    assert out.clauses[0] == overhead  # optimize did not measure it: as written, still advised
    assert out.clauses[1].text.startswith("fuse with torch.compile (compile: measured 1.60x [1.52, 1.68]")
    assert [m.remedy for m in out.measured] == ["compile"]


def test_unmeasured_and_rejected_for_accuracy():
    tf32, bf16 = Clause("use TF32 for the convolutions", ("tf32",)), Clause("autocast to bf16", ("bf16",))
    out = _cited(tf32, bf16)
    assert out.clauses[0] == tf32
    assert out.clauses[1].text == (
        "autocast to bf16: measured, not advised (bf16: rejected in optimization o7, rel L2 3.0e-02 > 1.0e-02)"
    )
    assert out.clauses[1].remedies == ()


def test_a_clause_that_suggests_no_remedy_is_kept_as_written_whatever_it_mentions():
    """A warning names channels_last without suggesting it: the detector gives it no remedy id, so it stays."""
    action = (Clause("keep NCHW for GroupNorm (channels_last measured slower on the H200)"),)
    nothing = {**ENTRY, "recommended": [], "recipe": {**ENTRY["recipe"], "speedup": None}}
    assert _cited(*action, entry=nothing).clauses == action


def test_an_info_finding_that_suggests_a_rejected_remedy_is_cited_too():
    action = (Clause("bf16 autocast (calibrated bf16 matmul 2x fp32)", ("bf16",)),)
    hint = _cited(*action, severity="info")
    assert "bf16: rejected" in hint.action and "3.0e-02" in hint.action and "bf16" not in hint.remedies
    assert ENTRY["optimize_id"] in hint.action  # the optimization that measured it


def test_only_optimized_alarm_findings_change():
    ev = (Evidence("profiler", "x"),)
    launch = Finding("launch_bound", "high", "s", ev, (GRAPH,), 1.0, "cfg A")
    other = Finding("launch_bound", "high", "s", ev, (GRAPH,), 1.0, "cfg B")
    healthy = Finding("compute_bound", "info", "s", ev, "healthy; to go faster use a CUDA graph", None, "cfg A")
    out = attach_measured([launch, other, healthy], {}, {"cfg A": ENTRY})
    assert "measured 4.00x" in out[0].action and out[1] == other and out[2] == healthy  # prose names no remedy
    assert out[0].remedies == ("cudagraph", "tf32")  # its clause and the recipe's


def test_measured_line_names_the_run_command_only_when_there_is_one():
    from surrobench.results.measured_remedies import measured_lines

    def measured_line(label, entry):
        (line,) = measured_lines([], {label: entry})
        return line

    with_command = {
        **ENTRY,
        "recipe": {**ENTRY["recipe"], "run_command": "surrobench run --model fno2d --mode cudagraph"},
    }
    assert measured_line("fno2d 128", with_command).endswith("; run it: surrobench run --model fno2d --mode cudagraph")
    line = measured_line(
        "TinyConv 8", {**ENTRY, "recipe": {**ENTRY["recipe"], "run_command": None}}
    )  # a model object: no command
    assert "cudagraph+tf32" in line and "4.60x [4.37, 4.83]" in line and "run it" not in line


def test_a_config_no_finding_names_gets_the_line_of_what_optimize_measured():
    """Live and stored diagnoses alike: a config with no finding but a stored optimization says what it measured."""
    from surrobench.results.measured_remedies import measured_lines

    named = Finding("memory_bound", "high", "s", (), "a", None, "fno2d 64")
    entries = {"fno2d 64": ENTRY, "rom 1": ENTRY}
    assert measured_lines([named], entries) == measured_lines([], {"rom 1": ENTRY})
    assert measured_lines([], entries)[0].startswith("fno2d 64: surrobench optimize measured cudagraph+tf32 4.60x")


def _stack(name, verdict, median, low, stacked_on="tf32"):
    return {
        "name": name,
        "verdict": verdict,
        "reason": "planted",
        "stacked_on": stacked_on,
        "speedup": {"median": median, "ci95": [low, median * 1.05], "noise_floor": 0.01},
    }


def test_a_stacked_clause_is_cited_by_the_candidate_of_exactly_its_remedies_and_the_one_rule():
    """compile with TF32: cited by ``tf32+compile`` whatever its order, kept when its speedup over the baseline
    clears the rule even though the search judged it against another stack; withdrawn when it does not."""
    stacked = Clause("fuse with torch.compile, with TF32 on", ("tf32", "compile"), stacked=True)
    lost_to_a_stack = optimize_entry(
        {
            "candidates": [
                _cand("compile", "rejected_slower", 0.54),
                _stack("compile+tf32", "rejected_slower", 3.5, 3.3, stacked_on="tf32+compile-reduce-overhead"),
            ],
            "recommended": [],
        }
    )
    (cited,) = _cited(stacked, entry=lost_to_a_stack).clauses
    assert cited.stacked and cited.remedies == ("tf32", "compile")
    assert cited.text.startswith("fuse with torch.compile, with TF32 on (compile+tf32: measured 3.50x [3.30, 3.68]")
    inside_noise = optimize_entry({"candidates": [_stack("tf32+compile", "rejected_slower", 1.01, 1.005)]})
    (withdrawn,) = _cited(stacked, entry=inside_noise).clauses
    assert withdrawn.remedies == () and "tf32+compile: measured 1.01x" in withdrawn.text
    assert "[1.00, 1.06], inconclusive" in withdrawn.text  # the interval and its verdict
    # tf32 alone or compile-reduce-overhead stacked on tf32 is not the stack the clause names
    other = {"candidates": [_cand("tf32", "accepted", 1.8), _stack("tf32+compile-reduce-overhead", "accepted", 4, 3.9)]}
    assert _cited(stacked, entry=optimize_entry(other)).clauses == (stacked,)


def test_a_thread_count_is_cited_only_by_a_clause_moving_it_the_same_way():
    entry = optimize_entry(
        {"candidates": [_cand("threads=1", "accepted", 2.0)], "recommended": ["threads=1"], "recipe": {}}
    )
    every_core = Clause("use every core", ("threads",), direction="up")
    # the diagnosed config ran 4 threads (its extra["torch_threads"]; an optimize document stores no thread count):
    # fewer threads measured faster, so "use every core" is not advised against it
    (against, _) = _cited(every_core, entry=entry, threads=4).clauses
    assert against.remedies == () and against.text.startswith(
        "use every core: not advised, measured faster the other way (threads=1: measured 2.00x [1.90, 2.10]"
    )
    fewer = Clause("torch.set_num_threads(1)", ("threads",), direction="down")
    (cited, _) = _cited(fewer, entry=entry, threads=4).clauses
    assert cited.text.startswith("torch.set_num_threads(1) (threads=1: measured 2.00x [1.90, 2.10]")
    assert cited.direction == "down" and cited.remedies == ("threads",)
    # the optimization's own threads setting is its baseline's count, over the diagnosed config's
    assert _cited(every_core, entry={**entry, "settings": {"threads": 4}}, threads=1).clauses[0].remedies == ()
    nothing = optimize_entry({"candidates": [], "recommended": [], "recipe": {}})
    assert _cited(every_core, entry=nothing, threads=4).clauses == (every_core,)


def test_an_infeasible_remedy_is_no_measurement_against_the_advice():
    # a fresh-user trial: optimize tried only threads=2 (infeasible: the baseline already ran 2) and diagnose --run
    # withdrew "torch.set_num_threads(1)" as "not recommended, measured: threads=2 infeasible"
    reason = "torch's default here is 2 threads: the baseline already runs 2"
    entry = optimize_entry(
        {"candidates": [_cand("threads=2", "infeasible", reason=reason)], "recommended": [], "recipe": {}}
    )
    fewer = Clause("torch.set_num_threads(1)", ("threads",), direction="down")
    for threads in (2, None):
        assert _cited(fewer, entry=entry, threads=threads).clauses == (fewer,)


def test_every_core_is_not_advised_where_the_baseline_already_runs_every_usable_cpu(monkeypatch):
    # a fresh-user trial's 3-D U-Net on 2 CPUs: thread_oversubscription advised torch.set_num_threads(1) while
    # compute_bound advised "use every core", though torch already ran its 2 threads (threads=2: infeasible)
    monkeypatch.setattr("surrobench.results.measured_remedies.usable_cpus", lambda: 2)
    reason = "torch's default here is 2 threads: the baseline already runs 2"
    entry = optimize_entry(
        {"candidates": [_cand("threads=2", "infeasible", reason=reason)], "recommended": [], "recipe": {}}
    )
    more = Clause("use every core for oneDNN", ("threads",), direction="up")
    (said,) = _cited(more, entry=entry, threads=2).clauses
    assert said.remedies == () and said.text.startswith(more.text) and "not advised" in said.text
    up = optimize_entry(
        {
            "candidates": [
                _cand("threads=2", "infeasible", reason=reason),
                _cand("threads=4", "accepted", median=1.3),
            ],
            "recommended": [],
            "recipe": {},
        }
    )
    (advised,) = _cited(more, entry=up, threads=2).clauses  # a count above it measured: it decides
    assert advised.remedies == ("threads",) and "not advised" not in advised.text
    # a 16-CPU host (8 SMT cores), torch's default 8: threads=16 left untried by the budget, or a 2-CPU host's
    # optimization cited on this one: the baseline's own count is not every usable CPU, the clause stays open
    monkeypatch.setattr("surrobench.results.measured_remedies.usable_cpus", lambda: 16)
    assert _cited(more, entry=entry, threads=2).clauses == (more,)


def test_a_later_optimize_that_disagrees_with_the_diagnosis_is_said_not_hidden():
    from surrobench.records.findings import MeasuredRemedy
    from surrobench.results.measured_remedies import disagreements

    # a fresh-user trial: diagnose measured threads=1 and compile faster; optimize, minutes later, neither
    label = "convlstm 1x3x32x32 b1 fp32 eager"
    mine = (
        MeasuredRemedy("threads=1", "faster", 1.26, (1.10, 1.47), 3.3, 0.68),
        MeasuredRemedy("compile", "faster", 1.56, (1.28, 1.91), 3.3, 1.2),
        MeasuredRemedy("tf32+compile", "slower", 0.8, (0.7, 0.9), 3.3, -0.8),
        MeasuredRemedy("bf16", "rejected-by-accuracy", rel_l2=0.03, tolerance=0.01),
    )
    entry = optimize_entry(
        {
            "candidates": [
                _cand("threads=1", "rejected_slower", 0.79),
                _cand("compile", "accepted", 1.3),
                _cand("compile+tf32", "accepted", 1.2),
                _cand("bf16", "accepted", 1.5),
            ],
            "recommended": ["compile"],
            "recipe": {},
        }
    )
    lines = disagreements({label: mine}, {label: entry})
    assert len(lines) == 2  # threads=1 (faster here, slower there) and the stack in either order; not compile, not bf16
    assert lines[0].startswith(f"{label}: this diagnosis measured threads=1") and "0.79x" in lines[0]
    assert "tf32+compile" in lines[1] and "compile+tf32 1.20x" in lines[1]
    assert disagreements({label: mine}, {}) == [] and disagreements({}, {label: entry}) == []
    assert "overlap" not in lines[0]  # 1.26x [1.10, 1.47] against 0.79x [0.75, 0.83]: apart
    # a later trial: threads=2 inconclusive here, 1.33x [0.99, 1.47], accepted there, 1.21x [1.15, 1.27]: the
    # intervals overlap, only the verdicts differ (not "the windows disagree")
    close = (MeasuredRemedy("threads=2", "inconclusive", 1.33, (0.99, 1.47), 3.3, 0.8),)
    both = optimize_entry({"candidates": [_cand("threads=2", "accepted", 1.21)], "recommended": ["threads=2"]})
    (line,) = disagreements({label: close}, {label: both})
    assert "overlap" in line and "disagree" not in line


def test_optimize_is_cited_per_remedy_where_diagnose_did_not_judge_it_and_diagnose_s_own_wins():
    """A fresh user's diagnosis measured tf32 and ran out of budget before compile; a stored optimize of the same
    config had measured compile 1.18x: the compile clause carries optimize's measurement, marked with its
    optimization, and the finding's gain, severity and rank are taken from it. Where both measured, diagnose's wins."""
    from surrobench.records.findings import rank_findings
    from surrobench.results.measured_remedies import disagreements

    entry = optimize_entry(
        {"candidates": [_cand("compile", "accepted", 1.18) | {"baseline_ms": 10.0}], "recommended": ["compile"]}
    ) | {"optimize_id": "o7"}
    tf32 = MeasuredRemedy("tf32", "slower", 0.9, (0.85, 0.95), 10.0, -1.1)
    budget = MeasuredRemedy("compile", "not-measured", reason="a first compilation takes about 20.6 s")
    ev = (Evidence("profiler", "x"),)
    fuse = Finding("fragmented_ops", "low", "s", ev, (Clause("fuse: torch.compile", ("compile",)),), 0.1, "cfg A")
    conv = Finding("compute_bound", "high", "s", ev, (Clause("TF32", ("tf32",)),), 3.0, "cfg A")
    out = rank_findings(attach_measured([conv, fuse], {"cfg A": (tf32, budget)}, {"cfg A": entry}))
    assert [f.kind for f in out] == ["fragmented_ops", "compute_bound"]  # the measured saving first
    cited = out[0].measured[0]
    assert (cited.remedy, cited.verdict, cited.speedup, cited.cited) == ("compile", "faster", 1.18, "o7")
    assert out[0].gain == out[0].gain | {"kind": "measured", "remedy": "compile", "ms": pytest.approx(10 - 10 / 1.18)}
    assert out[0].severity == "medium" and "in optimization o7" in out[0].clauses[0].text
    assert out[1].measured == (tf32,) and out[1].clauses[0].remedies == ()  # its own, withdrawn: measured slower
    assert out[1].clauses[-1].text == "measured recipe: compile in optimization o7"  # every alarm of the config
    assert out[0].to_json()["measured"][0]["cited"] == "o7"
    # diagnose measured compile itself, not faster: its own judgement stands, the disagreement is said
    mine = MeasuredRemedy("compile", "slower", 0.8, (0.75, 0.85), 10.0, -2.5)
    (own,) = attach_measured([fuse], {"cfg A": (mine,)}, {"cfg A": entry})
    assert own.measured == (mine,) and own.best_measured is None and own.clauses[0].remedies == ()
    assert len(disagreements({"cfg A": (mine,)}, {"cfg A": entry})) == 1
    # a config diagnose measured nothing of: optimize's, as when diagnose measured none
    assert attach_measured([fuse], {}, {"cfg A": entry})[0].measured == out[0].measured


def test_a_cited_saving_is_judged_against_this_run_s_timed_step_as_diagnose_s_own():
    """The trial's V-cycle: compile cited from a 12.5 ms baseline window while this run's timed step is 37.3 ms:
    marked drifted (as diagnose's own window would be), its saving on the smaller of the step and its window's baseline
    (a later trial read "saves 12.8 ms/step" of a 41.2 ms window beside a 21.05 ms step at 1.45x, at most 6.5 ms;
    trial35 read threads=1's 1.70x of a 12.48 ms window as 42.47 ms saved on a noisy 103 ms step); a window inside the
    timed step's interval is not drifted, its saving the timed step's."""
    cand = _cand("compile", "accepted", 1.85) | {"baseline_ms": 12.5}
    entry = optimize_entry({"candidates": [cand], "recommended": ["compile"]}) | {"optimize_id": "o7"}
    fuse = Finding("memory_bound", "high", "s", (Evidence("profiler", "x"),), (Clause("fuse", ("compile",)),), 1.0)
    far, near = config([36.0, 37.3, 38.5]), config([12.0, 12.6, 13.0])
    quick = config([5.0, 5.1, 5.2])  # a window that ran slower than the step: the step bounds it
    for result, drifted, saved in (
        (far, True, 12.5),
        (near, False, 12.6),
        (config(()), False, 12.5),
        (quick, True, 5.1),
    ):
        (out,) = attach_measured([replace(fuse, config="cfg A")], {}, {"cfg A": entry}, {"cfg A": result})
        best = out.best_measured
        assert (best.cited, best.drifted, out.gain["drifted"]) == ("o7", drifted, drifted)
        assert best.saved_ms == pytest.approx(saved * (1 - 1 / 1.85)) and best.saved_ms < best.baseline_ms


def test_a_remedy_two_clauses_name_is_cited_once_when_withdrawn():
    """elementwise and normalization both suggest torch.compile: measured not faster, it is said once."""
    action = (Clause("fuse the elementwise chain: torch.compile", ("compile",)), Clause("fuse the norm", ("compile",)))
    cited = _cited(*action).clauses
    assert [c.remedies for c in cited] == [(), (), ("cudagraph", "tf32")]  # both withdrawn; the recipe's clause
    assert "compile: measured 0.80x" in cited[0].text and "[0.76, 0.84]" in cited[0].text
    assert ENTRY["optimize_id"] in cited[0].text and "slower" in cited[0].text
    assert cited[1].text == "fuse the norm: measured, not advised (compile: as above)"


def test_a_cited_measurement_gives_the_finding_the_same_measured_saving_as_diagnose_s_own():
    """compile accepted by optimize o7 at 3.32x on a 2 ms baseline: the finding's gain is measured, its saving the
    candidate's, marked with the optimization it is cited from; its severity the saving's share, as a live one's."""
    cand = _cand("compile", "accepted", 3.32) | {"baseline_ms": 2.0}
    entry = optimize_entry({"candidates": [cand], "recommended": ["compile"]}) | {"optimize_id": "o7"}
    fuse = Finding("fragmented_ops", "medium", "s", (Evidence("profiler", "x"),), (Clause("fuse", ("compile",)),))
    (out,) = attach_measured([replace(fuse, config="cfg A")], {}, {"cfg A": entry})
    assert out.gain["kind"] == "measured" and out.gain["remedy"] == "compile"
    assert out.gain["ms"] == pytest.approx(2.0 * (1 - 1 / 3.32))
    assert out.best_measured.cited == "o7" and out.to_json()["measured"][0]["cited"] == "o7"
    assert out.severity == "high"  # 70% of the step (Thresholds.severity)
    from surrobench.report.findings import brief_cells, finding_row

    assert brief_cells(out)["gain"] == "saves 1.398 ms/step measured in optimization o7 (compile)"  # where it is from
    assert finding_row(out)[-1] == "1.398 (measured in optimization o7)"


def _speedup(median: float, lo: float, hi: float) -> dict:
    return {"median": median, "ci95": [lo, hi], "noise_floor": 0.01}


def test_each_remedy_is_cited_from_the_newest_optimization_that_judged_it_conclusively():
    """A fresh-user trial's diagnose cited compile 1.15x [0.96, 1.40] from the newest optimization, inconclusive on a
    loaded host ("measured, not advised"), where an older one had confirmed it at 1.15x [1.11, 1.19]. Per remedy, the
    newest judgement that is not inconclusive is cited, the newest where each is; an optimization of other settings
    is not read; the recipe stays the newest optimization's."""
    from surrobench.results.measured_remedies import cited_entry, cited_measurements

    newest = optimize_entry(
        {
            "candidates": [
                _cand("compile", "rejected_not_faster") | {"speedup": _speedup(1.15, 0.96, 1.40)},
                _cand("cudagraph", "accepted", 4.0),
                _cand("channels_last", "rejected_not_faster") | {"speedup": _speedup(1.1, 0.9, 1.3)},
            ],
            "recommended": ["cudagraph"],
        }
    ) | {"optimize_id": "o9", "tolerance": 0.01}
    older = optimize_entry(
        {
            "candidates": [
                _cand("compile", "accepted") | {"speedup": _speedup(1.15, 1.11, 1.19)},
                _cand("cudagraph", "rejected_slower", 0.8),
                _cand("channels_last", "rejected_not_faster") | {"speedup": _speedup(1.1, 0.8, 1.4)},
                _cand("bf16", "rejected_accuracy", rel_l2=0.03),
            ],
            "recommended": ["compile"],
        }
    ) | {"optimize_id": "o7", "tolerance": 0.02}
    other = optimize_entry({"candidates": [_cand("tf32", "accepted", 1.5)], "settings": {"threads": 4}})
    entry = cited_entry([newest, older, other | {"optimize_id": "o5", "tolerance": 0.01}])
    got = {m.remedy: (m.verdict, m.cited, m.tolerance) for m in cited_measurements(entry)}
    assert got == {
        "compile": ("faster", "o7", 0.02),  # the older confirmation, with its own tolerance
        "cudagraph": ("faster", "o9", 0.01),  # the newest, conclusive: it wins
        "channels_last": ("inconclusive", "o9", 0.01),  # inconclusive in both: the newest
        "bf16": ("rejected-by-accuracy", "o7", 0.02),  # only the older tried it
    }
    assert entry["recommended"] == ["cudagraph"]
    out = _cited(Clause("fuse: torch.compile", ("compile",)), entry=entry)
    assert out.clauses[0].remedies == ("compile",) and [m.cited for m in out.measured] == ["o7", "o9"]  # advised
    assert out.clauses[-1].text.startswith("optimize's recipe (cudagraph: measured")  # its measurement said once


def test_a_remedy_only_the_recipe_clause_names_is_cited_where_diagnose_did_not_measure_it():
    """A trial's kNN graph net: no rule of its one finding names compile, the recipe clause of its stored
    optimization does (compile 1.33x), diagnose's budget left compile not measured: the finding cites optimize's
    measurement (gain measured, not "none faster"), as docs/diagnose.md says of every remedy diagnose did not judge."""
    cand = _cand("compile", "accepted", 1.35) | {"baseline_ms": 70.0}
    recipe = {"speedup": {"median": 1.33, "ci95": [1.21, 1.41], "noise_floor": 0.06}}
    entry = optimize_entry({"candidates": [cand], "recommended": ["compile"], "recipe": recipe}) | {"optimize_id": "o7"}
    every_core = Clause("use every core", ("threads",), direction="up")
    knn = Finding("memory_bound", "high", "s", (Evidence("profiler", "x"),), (every_core,), None, "cfg A")
    slower = MeasuredRemedy("threads=2", "slower", 0.5, (0.4, 0.6), 70.0, -70.0, direction="up")
    skipped = MeasuredRemedy("compile", "not-measured", reason="a first compilation took 56.6 s")
    result = config([69.0, 70.0, 71.0])
    for own in ((slower, skipped), ()):  # its budget skipped compile; --measure-s 0
        (out,) = attach_measured([knn], {"cfg A": own} if own else {}, {"cfg A": entry}, {"cfg A": result})
        best = out.best_measured
        assert (best.remedy, best.verdict, best.cited) == ("compile", "faster", "o7")
        assert out.gain["kind"] == "measured" and out.gain["ms"] == pytest.approx(70.0 * (1 - 1 / 1.35))
        assert out.clauses[-1].remedies == ("compile",) and "in optimization o7" in out.clauses[-1].text


def test_every_core_is_not_advised_where_another_finding_holds_the_baseline_own_count(monkeypatch):
    # a fresh-user re-check (a Mamba-like scan, 2 CPUs, 2 threads): threads=1 (inconclusive) and threads=2 (not
    # applicable) were credited to thread_oversubscription, and compute_bound's "use every core" stood advised beside
    # its "set_num_threads(1)": an infeasible count credited to another finding is judged here by the same rule
    from surrobench.records.findings import MeasuredRemedy

    monkeypatch.setattr("surrobench.results.measured_remedies.usable_cpus", lambda: 2)
    fewer = Clause("torch.set_num_threads(1)", ("threads",), direction="down")
    more = Clause("use every core for oneDNN", ("threads",), direction="up")
    over = Finding("thread_oversubscription", "low", "s", (Evidence("run", "x"),), (fewer,), None, "cfg A")
    compute = Finding("compute_bound", "info", "s", (Evidence("profiler", "x"),), (more,), None, "cfg A")
    measured = {
        "cfg A": (
            MeasuredRemedy("threads=1", "inconclusive", 1.2, (0.8, 1.9), 10.0, 1.7, direction="down"),
            MeasuredRemedy("threads=2", "infeasible", reason="torch's default here is 2 threads"),
        )
    }
    (said,) = [f for f in attach_measured([over, compute], measured) if f.kind == "compute_bound"][0].clauses
    assert said.remedies == () and "not advised" in said.text


def test_none_faster_needs_every_remedy_the_action_names_measured():
    """trial35's koopman compute_bound: channels_last cited inconclusive, threads ("use every core") and bf16 never
    measured, yet ``gain.none_faster`` was true ("no remedy it names measured faster"); it holds once all are judged."""
    cands = [_cand("channels_last", "rejected_not_faster", 1.0)]
    entry = optimize_entry({"candidates": cands, "recommended": []}) | {"optimize_id": "o7"}
    every = Clause("use every core", ("threads",), direction="up")
    action = (Clause("channels_last", ("channels_last",)), Clause("bf16 autocast", ("bf16",)), every)
    out = _cited(*action, entry=entry, threads=1, severity="info")
    assert [m.remedy for m in out.measured] == ["channels_last"] and out.remedies == ("bf16", "threads")
    assert not out.none_faster and out.gain["none_faster"] is False
    judged = cands + [_cand("bf16", "rejected_slower", 0.4), _cand("threads=2", "rejected_slower", 0.5)]
    entry = optimize_entry({"candidates": judged, "recommended": []}) | {"optimize_id": "o7"}
    out = _cited(*action, entry=entry, threads=1, severity="info")
    assert out.remedies == () and out.none_faster


def test_overlapping_savings_are_said_where_every_diagnosis_says_what_optimize_measured():
    """trial35 (diagnose --measure-s 0): compile saved 4.63 ms under memory_bound and channels_last 2.91 ms under
    compute_bound of a 6.81 ms step, both cited, and no line said they overlap (only a diagnosis that measured did):
    :func:`measured_lines`, which every diagnosis says, holds the note."""
    from surrobench.results.measured_remedies import measured_lines, overlapping

    cands = [
        _cand(name, "accepted", median) | {"baseline_ms": 6.8}
        for name, median in (("compile", 3.13), ("channels_last", 1.74))
    ]
    entry = optimize_entry({"candidates": cands, "recommended": []}) | {"optimize_id": "o7"}
    fuse = Finding("memory_bound", "high", "s", (Evidence("profiler", "x"),), (Clause("fuse", ("compile",)),), 1.0)
    conv = replace(fuse, kind="compute_bound", action=(Clause("channels_last", ("channels_last",)),))
    step = config([6.7, 6.81, 6.9])
    found = attach_measured([replace(f, config="cfg A") for f in (fuse, conv)], {}, {"cfg A": entry}, {"cfg A": step})
    assert sum(f.gain_ms for f in found) > 6.81 and [f.gain["kind"] for f in found] == ["measured"] * 2
    (note,) = overlapping(found)
    assert note in measured_lines(found, {"cfg A": entry})
