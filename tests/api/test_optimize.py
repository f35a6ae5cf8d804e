"""``surrobench optimize`` as a library: greedy stacking on planted results, and a whole search on the CPU
with a model built so that one remedy wins and another breaks the accuracy."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from surrobench.tune import search as api
from surrobench.tune import trial, stacking
from surrobench.api.benchmark import sweep_plan
from surrobench.tune.plans import measured_for, optimize_plans
from surrobench.tune.request import OptimizeRequest
from surrobench.execution.remedies import Recipe, candidate_remedies
from surrobench.records.schemas import OPTIMIZE as SCHEMA
from surrobench.results.compare import compare_runs
from surrobench.results.optimize import VERDICTS, CandidateResult
from surrobench.results.paired import PairedSamples, Speedup
from surrobench.results.store import ResultStore, load_optimization

# Singles as measured (planted): name -> (verdict, speedup over the baseline)
SINGLES = {
    "cudagraph": ("accepted", 4.0),
    "compile": ("accepted", 3.0),
    "tf32": ("accepted", 1.3),
    "channels_last": ("rejected_slower", 0.7),
    "fp16": ("rejected_accuracy", None),
}
# Stacks (planted): name -> gain over the recipe it is stacked on
GAINS = {
    "cudagraph+tf32": 1.2,
    "cudagraph+tf32+channels_last": 0.95,
    "compile+tf32": 1.5,  # compile excludes cudagraph: the first path never reaches it
    "compile+tf32+channels_last": 1.0,
}


def _speed(x: float) -> Speedup:
    return Speedup(x, (x * 0.97, x * 1.03), 0.01)


def _singles():
    remedies = {r.name: r for r in candidate_remedies("cuda")}
    out = []
    for name, (verdict, x) in SINGLES.items():
        out.append((remedies[name], CandidateResult(name, verdict, "planted", speedup=_speed(x) if x else None)))
    return out


def _fake_measure(tried):
    def measure(ctx, recipe, current=None, current_name=None):
        tried.append((recipe.name, current_name))
        gain = GAINS[recipe.name]
        verdict = "accepted" if gain > 1.05 else "rejected_slower"
        return CandidateResult(
            recipe.name, verdict, "planted", speedup=_speed(4 * gain), gain=_speed(gain), stacked_on=current_name
        ), object()

    return measure


def _ctx(spent_after: int = 99):
    calls = []

    def spent():
        calls.append(1)
        return len(calls) > spent_after

    request = SimpleNamespace(budget_s=0.5)
    timed = {"compile": object()}  # the singles' variants, kept to be profiled
    ctx = SimpleNamespace(spent=spent, request=request, cfg=SimpleNamespace(device="cpu"), done=[], timed=timed)
    ctx.spent_reason = lambda: trial.SearchState.spent_reason(ctx)
    ctx.judged = ctx.done.append
    return ctx


def _planted_duel(rival_wins: bool, seen: list):
    def duel(ctx, first, other):
        seen.append((first[0].name, other[0].name))
        return rival_wins

    return duel


def test_greedy_stacking_builds_on_the_fastest_and_keeps_only_gains(monkeypatch):
    tried, duels = [], []
    monkeypatch.setattr(stacking, "measure_candidate", _fake_measure(tried))
    monkeypatch.setattr(stacking, "head_to_head", _planted_duel(False, duels))
    not_tried: list = []
    stacked, recipe, variant = stacking.stack(_ctx(), _singles(), object(), not_tried)
    # fastest accepted first (cudagraph); compile conflicts with it (one mode), so it starts a second path;
    # fp16 failed its accuracy check
    assert tried == [
        ("cudagraph+tf32", "cudagraph"),
        ("cudagraph+tf32+channels_last", "cudagraph+tf32"),
        ("compile+tf32", "compile"),
        ("compile+tf32+channels_last", "compile+tf32"),
    ]
    assert duels == [("cudagraph+tf32", "compile+tf32")]  # the two paths' recipes, head to head
    assert recipe.name == "cudagraph+tf32" and variant is not None  # the rival lost
    assert [c.verdict for c in stacked] == ["accepted", "rejected_slower", "accepted", "rejected_slower"]
    assert not_tried == []


def test_the_rival_path_replaces_the_first_when_it_wins_head_to_head(monkeypatch):
    monkeypatch.setattr(stacking, "measure_candidate", _fake_measure([]))
    monkeypatch.setattr(stacking, "head_to_head", _planted_duel(True, []))
    _, recipe, _ = stacking.stack(_ctx(), _singles(), object(), [])
    assert recipe.name == "compile+tf32"


def test_a_single_without_a_rival_stacks_once(monkeypatch):
    duels: list = []
    monkeypatch.setattr(stacking, "measure_candidate", _fake_measure([]))
    monkeypatch.setattr(stacking, "head_to_head", _planted_duel(True, duels))
    singles = [(r, c) for r, c in _singles() if r.name != "compile"]
    assert stacking.stack(_ctx(), singles, object(), [])[1].name == "cudagraph+tf32" and duels == []


def test_a_remedy_that_excludes_one_stacked_later_is_tried_in_its_place(monkeypatch):
    # cudagraph first; tf32 (fastest precision alone) is stacked, then fp16 is tried in its place and wins
    remedies = {r.name: r for r in candidate_remedies("cuda")}
    planted = {"cudagraph": 4.0, "tf32": 1.3, "fp16": 1.2}
    singles = [(remedies[n], CandidateResult(n, "accepted", "planted", speedup=_speed(x))) for n, x in planted.items()]
    gains = {"cudagraph+tf32": 1.2, "cudagraph+fp16": 1.17}
    tried: list = []

    def measure(ctx, recipe, current=None, current_name=None):
        tried.append((recipe.name, current_name))
        gain = gains[recipe.name]
        return CandidateResult(recipe.name, "accepted", "planted", gain=_speed(gain), stacked_on=current_name), object()

    monkeypatch.setattr(stacking, "measure_candidate", measure)
    _, recipe, _ = stacking.stack(_ctx(), singles, object(), [])
    # the swap is judged against the recipe it would replace; fp16 excludes tf32, not the start
    assert tried == [("cudagraph+tf32", "cudagraph"), ("cudagraph+fp16", "cudagraph+tf32")]
    assert recipe.name == "cudagraph+fp16"


def _threads(n: int):
    from surrobench.execution.remedies import Remedy

    return Remedy(f"threads={n}", (("threads", n),), ("cpu",), "", ())


def _planted(singles: dict, gains: dict, tried: list):
    """(singles as judged alone, a measure that plants each stack's gain over the recipe it is tried against)."""
    remedies = {r.name: r for r in candidate_remedies("cuda")} | {f"threads={n}": _threads(n) for n in (1, 4)}
    judged = [
        (remedies[n], CandidateResult(n, "accepted" if x > 1 else "rejected_slower", "planted", speedup=_speed(x)))
        for n, x in singles.items()
    ]

    def measure(ctx, recipe, current=None, current_name=None):
        tried.append((recipe.name, current_name))
        gain = gains[recipe.name]
        verdict = "accepted" if gain > 1.05 else "rejected_slower"
        return CandidateResult(recipe.name, verdict, "planted", gain=_speed(gain), stacked_on=current_name), object()

    return judged, measure


def test_a_swap_never_times_again_a_stack_judged_before(monkeypatch):
    # bf16 first; threads=4 stacked and rejected, threads=1 accepted; swapping threads=4 back in would be the
    # stack already judged
    tried: list = []
    singles, measure = _planted(
        {"bf16": 2.0, "threads=4": 1.5, "threads=1": 1.2}, {"bf16+threads=4": 1.0, "bf16+threads=1": 1.2}, tried
    )
    monkeypatch.setattr(stacking, "measure_candidate", measure)
    ctx = _ctx()
    stacked, recipe, _ = stacking.stack(ctx, singles, object(), [])
    assert tried == [("bf16+threads=4", "bf16"), ("bf16+threads=1", "bf16")]
    assert recipe.name == "bf16+threads=1" and [c.name for c in stacked] == ["bf16+threads=4", "bf16+threads=1"]


def test_a_swap_says_what_it_replaced(monkeypatch):
    tried: list = []
    singles, measure = _planted(
        {"bf16": 2.0, "threads=1": 1.5, "threads=4": 0.9}, {"bf16+threads=1": 1.2, "bf16+threads=4": 1.9}, tried
    )
    monkeypatch.setattr(stacking, "measure_candidate", measure)
    stacked, recipe, _ = stacking.stack(_ctx(), singles, object(), [])
    assert recipe.name == "bf16+threads=4"  # slower alone (0.9x), yet the best once stacked
    assert stacked[-1].reason == "in place of threads=1: planted" and stacked[-1].stacked_on == "bf16+threads=1"


def test_a_rival_slower_alone_still_gets_its_path(monkeypatch):
    # threads=1 first; threads=4 is slower alone but sets the same setting: it gets a path and wins stacked
    tried, duels = [], []
    singles, measure = _planted(
        {"threads=1": 1.6, "bf16": 1.3, "threads=4": 0.8},
        {"threads=1+bf16": 1.1, "threads=4+bf16": 2.5},
        tried,
    )
    monkeypatch.setattr(stacking, "measure_candidate", measure)
    monkeypatch.setattr(stacking, "head_to_head", _planted_duel(True, duels))
    ctx = _ctx()
    ctx.timed = {}  # its single's variant was released: built again
    monkeypatch.setattr(stacking, "open_variant", lambda cfg, prepared: object())
    ctx.prepared = None
    ctx.cfg = SimpleNamespace(device="cpu")
    monkeypatch.setattr(stacking.Recipe, "apply", lambda self, cfg: cfg)
    _, recipe, _ = stacking.stack(ctx, singles, object(), [])
    assert duels == [("threads=1+bf16", "threads=4+bf16")] and recipe.name == "threads=4+bf16"


def test_stacking_stops_at_the_budget(monkeypatch):
    tried: list = []
    monkeypatch.setattr(stacking, "measure_candidate", _fake_measure(tried))
    not_tried: list = []
    stacked, recipe, _ = stacking.stack(_ctx(spent_after=1), _singles(), object(), not_tried)
    assert [t[0] for t in tried] == ["cudagraph+tf32"]
    assert not_tried == [
        ("cudagraph+tf32+channels_last", "budget of 0.5 s spent"),
        ("stacking on compile", "budget of 0.5 s spent"),
    ]


def _duel_ctx(first_ms: float, rival_ms: float):
    """Two variants with planted rounds (4 rounds of 20 calls, 1% noise) and a no-op window."""
    rng = np.random.default_rng(7)

    def variant(ms):
        rounds = [list(ms * (1 + 0.01 * rng.standard_normal(20))) for _ in range(4)]
        return SimpleNamespace(samples_ms=lambda: rounds)

    ctx = SimpleNamespace(request=SimpleNamespace(rounds=4), cfg=SimpleNamespace(device="cpu"), head_to_head=None)
    return ctx, variant(first_ms), variant(rival_ms)


@pytest.mark.parametrize(("rival_ms", "wins"), [(0.8, True), (1.0, False), (1.2, False)])
def test_head_to_head_keeps_the_rival_only_when_it_is_faster_beyond_the_noise(monkeypatch, rival_ms, wins):
    monkeypatch.setattr(stacking, "time_window", lambda ctx, variants: None)
    ctx, first, rival = _duel_ctx(1.0, rival_ms)
    remedies = {r.name: r for r in candidate_remedies("cuda")}
    a = Recipe((remedies["tf32"], remedies["cudagraph"]))
    b = Recipe((remedies["fp16"], remedies["cudagraph"]))
    assert stacking.head_to_head(ctx, (a, first), (b, rival)) is wins
    duel = ctx.head_to_head
    assert (duel.first, duel.rival, duel.kept) == (a.name, b.name, (b if wins else a).name)
    assert duel.gain.median == pytest.approx(1.0 / rival_ms, rel=0.02) and duel.gain.faster() is wins
    assert duel.note().startswith("stacked from two starts that exclude each other (tf32, fp16); head to head")
    assert duel.note().endswith(f"{duel.kept} is the recipe")
    assert duel.to_json()["gain"]["median"] == duel.gain.median and duel.to_json()["kept"] == duel.kept


def test_head_to_head_that_fails_keeps_the_first(monkeypatch):
    def broken(ctx, variants):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(stacking, "time_window", broken)
    ctx, first, rival = _duel_ctx(1.0, 0.5)
    remedies = {r.name: r for r in candidate_remedies("cuda")}
    a, b = Recipe((remedies["tf32"],)), Recipe((remedies["fp16"],))
    assert stacking.head_to_head(ctx, (a, first), (b, rival)) is False
    duel = ctx.head_to_head
    assert duel.gain is None and duel.kept == "tf32" and "illegal memory access" in duel.error
    assert duel.note().startswith("fp16 could not be timed against tf32 (")


def test_nothing_accepted_means_no_recipe(monkeypatch):
    monkeypatch.setattr(stacking, "measure_candidate", _fake_measure([]))
    singles = [(r, CandidateResult(c.name, "rejected_slower", "planted", speedup=_speed(0.9))) for r, c in _singles()]
    assert stacking.stack(_ctx(), singles, None, [])[1].names == []


MODEL = '''
import time
import torch


class ThreadBoundOffset(torch.nn.Module):
    """Sleeps 8 ms per call unless torch runs one thread (so threads=1 wins by construction), and maps the
    fields near 1000 and back (exact in fp32, lost in bf16)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(3))
            self.lin.bias.fill_(1000.0)

    def forward(self, x):
        time.sleep(0.008 if torch.get_num_threads() > 1 else 0.0002)
        return (self.lin(x.permute(0, 2, 3, 1)) - 1000.0).permute(0, 3, 1, 2)


def build():
    return ThreadBoundOffset()
'''


@pytest.fixture
def model_spec(tmp_path):
    path = tmp_path / "thread_bound.py"
    path.write_text(MODEL)
    return f"{path}:build"


def _request(model_spec, only):
    plan = sweep_plan(model_spec, shapes=[8], device="cpu", warmup=1, iters=4, input_sets=2, threads=2)
    return OptimizeRequest((plan,), rounds=2, only=only)


def test_a_whole_search_on_the_cpu(model_spec, tmp_path):
    db = tmp_path / "o.db"
    with ResultStore(db) as store:
        report = optimize_plans(_request(model_spec, ("cudagraph", "bf16", "threads=1", "channels_last")), store)
        doc = report.to_json()
        (entry,) = doc["configs"]
        by_name = {c["name"]: c for c in entry["candidates"]}
        assert by_name["cudagraph"]["verdict"] == "infeasible" and "needs CUDA" in by_name["cudagraph"]["reason"]
        assert by_name["bf16"]["verdict"] == "rejected_accuracy" and by_name["bf16"]["rel_l2"] > 1e-2
        assert "speedup" not in by_name["bf16"]  # never timed
        assert by_name["threads=1"]["verdict"] == "accepted" and by_name["threads=1"]["speedup"]["median"] > 1.5
        t1 = by_name["threads=1"]  # its own window's baseline is what its speedup divides
        assert t1["baseline_ms"] / t1["median_ms"] == pytest.approx(t1["speedup"]["median"], rel=1e-6)
        assert entry["recommended"][0] == "threads=1"
        assert "--threads 1" in entry["recipe"]["run_command"] and "torch.set_num_threads(1)" in entry["recipe"]["code"]
        assert all(c["verdict"] in VERDICTS for c in entry["candidates"])
        # every timed candidate was profiled: its row of the before/after table has a top-op share
        timed = [c for c in entry["candidates"] if "speedup" in c]
        assert timed and all(c["top_op"]["name"].startswith("aten::") for c in timed)
        assert all(0 < c["top_op"]["share"] <= 1 for c in timed)
        assert by_name["bf16"]["top_op"] is None  # rejected before timing: never profiled
        assert doc["schema"] == SCHEMA == "surrobench/optimize-v2"
        assert entry["head_to_head"] is None  # threads=1 had no accepted rival among these remedies
        # stored and linked: the report, and the before/after runs that compare works on
        assert load_optimization(store, report.optimize_id)["recipe_run_id"] == report.recipe_run_id
        base, recipe = store.load_run(report.baseline_run_id), store.load_run(report.recipe_run_id)
        # the diagnosis of the same workload finds this optimization by its config
        measured = measured_for(store, base.results)
        assert list(measured) == [base.results[0].label()] and measured[base.results[0].label()]["recommended"]
        # diagnosing the stored baseline (timed, not profiled) says so, and what optimize measured for it
        from surrobench.analysis.thresholds import load_thresholds
        from surrobench.api.diagnose import diagnose_stored

        _, findings, notes, _ = diagnose_stored(report.baseline_run_id, store, load_thresholds(None))
        assert findings == [] and any("no op table stored" in n for n in notes)
        assert any("surrobench optimize measured threads=1" in n and "--threads 1" in n for n in notes)
    assert recipe.results[0].extra["threads"] == 1 and base.results[0].extra["threads"] == 2
    # the recipe's speedup pools its own pairing, the stacks it parented and the confirmation window; the
    # stored pair covers the same rounds
    assert entry["recipe"]["windows"] >= 2 and entry["recipe"]["speedup"]["median"] > 1.5
    assert len(recipe.results[0].samples_ms) == len(base.results[0].samples_ms)
    # compare reads the stored pair as the record optimize judged (one process, its windows): the same speedup,
    # interval and verdict, so the compare line optimize prints cannot contradict its recommendation
    (c,) = compare_runs(base, recipe).configs
    assert c.verdict == "improved" and c.speedup.faster()
    assert c.speedup.median == pytest.approx(entry["recipe"]["speedup"]["median"], rel=1e-9)
    assert c.speedup.ci95 == pytest.approx(tuple(entry["recipe"]["speedup"]["ci95"]), rel=1e-9)


def test_budget_leaves_candidates_untried(model_spec, tmp_path):
    request = _request(model_spec, ("threads=1", "channels_last"))
    request = OptimizeRequest(request.sweeps, budget_s=1e-3, rounds=2, only=request.only)
    with ResultStore(tmp_path / "o.db") as store:
        entry = optimize_plans(request, store).configs[0]
    assert sorted(n for n, _ in entry.not_tried) == ["channels_last", "threads=1"]
    assert entry.recommended == () and entry.baseline.latency_ms is not None  # the baseline is still measured


def test_ctrl_c_during_the_confirmation_keeps_the_recipe_on_the_windows_that_finished(
    model_spec, tmp_path, monkeypatch
):
    from surrobench.tune.plans import OptimizeInterrupted

    windows, interleave = [], trial.interleave

    def cut_in_the_third_window(variants, *args):  # threads=1 alone, one confirmation window, then Ctrl-C
        windows.append(len(variants))
        interleave(variants, *args)
        if len(windows) == 3:  # the window's rounds were timed, its bookkeeping never happened
            raise KeyboardInterrupt

    monkeypatch.setattr(trial, "interleave", cut_in_the_third_window)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(OptimizeInterrupted) as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
        report = cut.value.report
        assert report.interrupted and store.run_state(report.recipe_run_id) == "interrupted"
        base, recipe = store.load_run(report.baseline_run_id), store.load_run(report.recipe_run_id)
    (entry,) = report.configs
    assert entry.recommended == ("threads=1",) and not entry.cut_short
    assert entry.recipe_windows == 2  # its own window and one confirmation window; the cut one left no rounds
    assert len(recipe.results[0].samples_ms) == len(base.results[0].samples_ms)  # the pair covers the same rounds
    assert any(n.startswith("interrupted by Ctrl-C during the recipe's confirmation windows") for n in entry.notes)
    assert not any("no recipe" in n for n in entry.notes)


def test_the_profiler_attaches_only_after_every_timed_round(model_spec, tmp_path, monkeypatch):
    # once torch.profiler has attached CUPTI, launches in the process stay slower: no round may follow it
    events: list[str] = []
    interleave, top_op = trial.interleave, api._top_op  # every timing window goes through it
    monkeypatch.setattr(trial, "interleave", lambda *a: (events.append("round"), interleave(*a))[1])
    monkeypatch.setattr(api, "_top_op", lambda v: (events.append("profile"), top_op(v))[1])
    with ResultStore(tmp_path / "o.db") as store:
        entry = optimize_plans(_request(model_spec, ("threads=1", "channels_last")), store).configs[0]
    assert "round" in events and events.index("profile") > max(i for i, e in enumerate(events) if e == "round")
    assert events.count("profile") == 1 + sum(c.result is not None for c in entry.candidates)


def _planted_rounds(ms_per_round: list[float], rng) -> list[SimpleNamespace]:
    return [SimpleNamespace(samples_ms=tuple(ms * (1 + 0.005 * rng.standard_normal(20)))) for ms in ms_per_round]


def _confirm_ctx(base, recipe) -> SimpleNamespace:
    """The search state ``_confirm`` reads: windows of 2 rounds, the recipe paired with every baseline round."""
    return SimpleNamespace(
        baseline=base,
        request=SimpleNamespace(rounds=2, process_pairs=0),  # in-process windows only
        warmup=1,
        iters=20,
        paired={id(recipe): list(range(len(base.rounds)))},
        cfg=SimpleNamespace(device="cpu"),
        confirm_error=None,
        confirm_interrupted=False,
    )


@pytest.mark.parametrize(
    ("cause", "baseline_after"),
    [
        (RuntimeError("replay failed"), ["b0"]),  # a failure: the window leaves no rounds behind
        (KeyboardInterrupt(), ["b0", "b1", "b2"]),  # Ctrl-C: the baseline's rounds are kept, the variant's not
    ],
)
def test_a_window_cut_short_leaves_the_variants_aligned(monkeypatch, cause, baseline_after):
    base, cand = SimpleNamespace(rounds=["b0"]), SimpleNamespace(rounds=["c0"])

    def cut_in_the_second_round(variants, rounds, warmup, iters):
        variants[0].rounds.append("b1")
        variants[1].rounds.append("c1")
        variants[0].rounds.append("b2")
        raise cause

    monkeypatch.setattr(trial, "interleave", cut_in_the_second_round)
    ctx = SimpleNamespace(baseline=base, request=SimpleNamespace(rounds=2), warmup=1, iters=2, paired={})
    with pytest.raises(type(cause)):
        trial.time_window(ctx, [cand])
    assert base.rounds == baseline_after and cand.rounds == ["c0"] and ctx.paired == {}


def test_the_recipe_speedup_pools_every_window_it_shared_with_the_baseline(monkeypatch):
    """Two windows of the same recipe a little apart (5.0x, then 4.76x), then the confirmation windows (4.88x):
    one window's CI misses the other; the pooled one, drawn over windows, is several times as wide as either
    and holds the confirmation's speedup between them."""
    rng = np.random.default_rng(0)
    base = SimpleNamespace(rounds=_planted_rounds([10.0] * 4, rng))
    recipe = SimpleNamespace(rounds=_planted_rounds([2.0, 2.0, 2.1, 2.1], rng))
    recipe.samples_ms = lambda: [list(r.samples_ms) for r in recipe.rounds]

    def confirmation(variants, rounds, warmup, iters):
        for _ in range(rounds):
            variants[0].rounds += _planted_rounds([10.0], rng)
            variants[1].rounds += _planted_rounds([2.05], rng)

    monkeypatch.setattr(trial, "interleave", confirmation)
    ctx = _confirm_ctx(base, recipe)
    pooled, per_window = api._confirm(ctx, None, recipe)
    first = PairedSamples.interleaved(
        [list(r.samples_ms) for r in base.rounds[:2]], [list(r.samples_ms) for r in recipe.rounds[:2]]
    ).speedup()
    second = PairedSamples.interleaved(
        [list(r.samples_ms) for r in base.rounds[2:4]], [list(r.samples_ms) for r in recipe.rounds[2:4]]
    ).speedup()
    windows = 2 + api.CONFIRM_WINDOWS
    assert len(per_window) == windows and len(ctx.paired[id(recipe)]) == 2 * windows
    assert per_window[0] == pytest.approx(first.median) and per_window[1] == pytest.approx(second.median)
    assert all(4.8 < w < 4.95 for w in per_window[2:])  # the confirmation windows, 10 / 2.05 ms
    assert first.ci95[0] > second.ci95[1]  # one window's interval misses the other window
    width = pooled.ci95[1] - pooled.ci95[0]
    assert width > 3 * max(first.ci95[1] - first.ci95[0], second.ci95[1] - second.ci95[0])
    assert (
        second.ci95[0] < pooled.ci95[0] <= min(per_window[2:]) and max(per_window[2:]) <= pooled.ci95[1] < first.ci95[1]
    )


def test_a_failed_confirmation_keeps_the_earlier_windows_and_says_why(monkeypatch):
    rng = np.random.default_rng(1)
    base = SimpleNamespace(rounds=_planted_rounds([10.0] * 2, rng))
    recipe = SimpleNamespace(rounds=_planted_rounds([2.0, 2.0], rng))
    recipe.samples_ms = lambda: [list(r.samples_ms) for r in recipe.rounds]

    def fails(variants, rounds, warmup, iters):
        variants[0].rounds += _planted_rounds([10.0], rng)
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(trial, "interleave", fails)
    ctx = _confirm_ctx(base, recipe)
    pooled, per_window = api._confirm(ctx, None, recipe)
    assert len(per_window) == 1 and len(base.rounds) == 2 and 4.9 < pooled.median < 5.1
    assert "illegal memory access" in ctx.confirm_error


def test_a_recipe_its_pooled_windows_do_not_bear_out_is_not_recommended(model_spec, tmp_path, monkeypatch):
    # the search's wins, pooled with the confirmation window, no longer clear 1 + noise floor
    monkeypatch.setattr(api, "_confirm", lambda ctx, r, v: (Speedup(8.03, (1.0, 112.25), 0.86), (14.0, 1.1)))
    with ResultStore(tmp_path / "o.db") as store:
        report = optimize_plans(_request(model_spec, ("threads=1",)), store)
    (entry,) = report.configs
    assert [c.verdict for c in entry.candidates] == ["accepted"]  # the candidate row stays as measured
    assert entry.recommended == () and entry.recipe_result is None and entry.run_command is None
    assert entry.recipe_speedup is None and report.recipe_run_id is None
    note = next(n for n in entry.notes if n.startswith("not recommended: threads=1"))
    assert "8.03x [1.00, 112.25]" in note and "noise floor 86.0%" in note and "over 2 timing windows" in note


def test_ctrl_c_inside_a_search_keeps_what_it_judged(model_spec, tmp_path, monkeypatch):
    from surrobench.tune.plans import OptimizeInterrupted

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "stack", interrupted)  # Ctrl-C after every single remedy was judged
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(OptimizeInterrupted, match="0 of 1 configs optimized, the last one in part") as cut:
            optimize_plans(_request(model_spec, ("threads=1", "bf16")), store)
        (entry,) = cut.value.report.configs
        assert [c.name for c in entry.candidates] == ["bf16", "threads=1"] and entry.recommended == ()
        assert entry.notes[-1].startswith("interrupted during the search: 2 candidate(s) judged") and entry.cut_short
        assert store.load_run(cut.value.report.baseline_run_id).results[0].latency_ms is not None
    from surrobench.report.optimize import recipe_lines

    assert "the search was interrupted" in recipe_lines(cut.value.report.to_json()["configs"][0])[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(budget_s="10"), "budget_s '10': a number, not str"),
        (dict(budget_s=float("inf")), "budget_s inf: a number of seconds > 0"),  # JSON has no Infinity
        (dict(rounds=2.5), "rounds 2.5: a whole number, not float"),
        (dict(verify=True), "verify True: a whole number, not bool"),
        (dict(tolerance=None), "tolerance None: a number, not NoneType"),
        (dict(only=5), "only 5: remedy names"),
        (dict(only=("threads=1", 5)), "only ('threads=1', 5): remedy names"),
        (dict(thorough="no"), "thorough 'no': True or False, not str"),
        (dict(db=5), "db 5: a database path"),
    ],
)
def test_the_api_refuses_search_settings_of_the_wrong_type(kwargs, message):
    import surrobench
    from surrobench.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        surrobench.optimize("pinn-mlp", shapes=[64], device="cpu", **kwargs)


def test_the_run_line_carries_a_seed_and_input_buffers_that_are_not_the_defaults():
    """The process windows and --verify run this line: they must time the workload that was searched."""
    (cfg,) = sweep_plan("pinn-mlp", shapes=[8], device="cpu", seed=7, input_sets=1).configs
    words = api.run_command(cfg).split()
    assert words[words.index("--seed") + 1] == "7" and words[words.index("--input-sets") + 1] == "1"
    (plain,) = sweep_plan("pinn-mlp", shapes=[8], device="cpu").configs
    assert "--seed" not in api.run_command(plain) and "--input-sets" not in api.run_command(plain)


class _Killed(BaseException):
    """Stands for SIGKILL: nothing of optimize's own handling runs after it."""


def test_a_search_killed_mid_way_leaves_every_judged_candidate_stored_as_an_interrupted_optimization(
    model_spec, tmp_path, monkeypatch
):
    from surrobench.api.report import build_report

    judged = trial.SearchState.judged
    calls = []

    def judged_then_killed(self, result):
        judged(self, result)
        calls.append(result.name)
        if result.speedup is not None:  # the first timed one (the baseline has rounds by then)
            raise _Killed

    monkeypatch.setattr(trial.SearchState, "judged", judged_then_killed)
    db = tmp_path / "o.db"
    with ResultStore(db) as store:
        with pytest.raises(_Killed):
            optimize_plans(_request(model_spec, ("cudagraph", "bf16", "threads=1")), store)
    with ResultStore(db) as store:
        (optimize_id,) = [row[0] for row in store.conn.execute("SELECT optimize_id FROM optimizations")]
        doc = load_optimization(store, optimize_id)
        (config,) = doc["configs"]
        assert doc["interrupted"] is True and [c["name"] for c in config["candidates"]] == calls
        assert len(calls) >= 2 and config["candidates"][-1]["speedup"] is not None
        assert store.conn.execute("SELECT COUNT(*) FROM optimize_configs").fetchone()[0] == 1  # replaced, not added
        baseline_run = doc["baseline_run_id"]
    built = build_report([baseline_run], db=db)  # `report` of the killed run shows what was judged
    assert [o["optimize_id"] for o in built.optimizations] == [optimize_id]
