"""``surrobench optimize`` as a library: a whole search on the CPU with a model built so that one remedy wins and
another breaks the accuracy, stored, cut by Ctrl-C or killed (the search's decisions on planted timings are
tests/tune/test_search.py). Where a test cuts a search, it plants the cut in the device bench's timing or
feasibility (:mod:`surrobench.tune.bench`), never in the search's own steps."""

from __future__ import annotations


import pytest

from surrobench.api.benchmark import sweep_plan
from surrobench.records.schemas import OPTIMIZE as SCHEMA
from surrobench.results.compare import compare_runs
from surrobench.records.vocab import OPTIMIZE_VERDICTS as VERDICTS
from surrobench.report.optimize import off_device
from surrobench.results.store import ResultStore
from surrobench.results.optimize_store import find_optimization
from surrobench.execution import compile_cache
from surrobench.tune import bench, config
from surrobench.errors import Interrupted
from surrobench.tune.plans import measured_for, optimize_plans
from surrobench.tune.request import OptimizeRequest

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
        assert doc["schema"] == SCHEMA == "surrobench/optimize-v3"
        assert entry["head_to_head"] is None  # threads=1 had no accepted rival among these remedies
        # stored and linked: the report, and the before/after runs that compare works on
        assert find_optimization(store, report.optimize_id)["recipe_run_id"] == report.recipe_run_id
        base, recipe = store.load_run(report.baseline_run_id), store.load_run(report.recipe_run_id)
        # the diagnosis of the same workload finds this optimization by its config
        measured = measured_for(store, base.results)
        assert list(measured) == [base.results[0].label()] and measured[base.results[0].label()]["recommended"]
        assert measured_for(store, recipe.results) == {}  # the recipe run has the recipe: nothing to advise it
    # diagnosing a stored run (timed, not profiled) cannot judge it, and says what optimize measured for the baseline
    from surrobench.api.diagnose import diagnose

    program = ".venv/bin/surrobench"  # as the CLI was invoked: its `run it` line starts so, the --db it was given
    base_dx, recipe_dx = (
        diagnose(run=i, db=db, program=program) for i in (report.baseline_run_id, report.recipe_run_id)
    )
    for dx in (base_dx, recipe_dx):
        assert dx.findings == () and [c["problems"] for c in dx.cannot_judge] == [["not_profiled"]]
    (line,) = [n for n in base_dx.warnings if "surrobench optimize measured threads=1" in n]
    assert f"{program} run --model " in line and "--threads 1" in line and line.endswith(f" --db {db}")
    assert not any("optimize measured" in n for n in recipe_dx.warnings)
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


def test_the_baselines_own_thread_count_is_no_candidate(model_spec, tmp_path):
    # a CPU optimize tried the count the baseline already ran and listed it "infeasible" among the candidates
    import torch

    plan = sweep_plan(model_spec, shapes=[8], device="cpu", warmup=1, iters=4, input_sets=2, threads=1)
    default = torch.get_num_threads()
    torch.set_num_threads(2)  # torch's default here: not the count the configs ran
    try:
        with ResultStore(tmp_path / "o.db") as store:
            request = OptimizeRequest((plan,), rounds=2, only=("threads=1", "channels_last"))
            report = optimize_plans(request, store)
            env = store.load_run(report.baseline_run_id).env
    finally:
        torch.set_num_threads(default)
    (entry,) = report.configs
    assert [c.name for c in entry.candidates] == ["channels_last"] and not entry.not_tried
    assert [n for n in entry.notes if "threads=1" in n]  # said where the config lists what was not tried
    # trial35: the stored runs' env said torch's default (2), so show warned "try 1 thread" of a --threads 1 search
    assert env["torch_threads"] == report.env["torch_threads"] == 1


def test_a_window_whose_baseline_drifted_from_the_baseline_row_is_named(model_spec, tmp_path, monkeypatch):
    # trial35: threads=1 accepted 127x in a window whose baseline ran 171 ms beside a baseline row of 0.9 ms, and
    # nothing said so; planted: the host slows the first window's baseline 20x (measured_remedies.drifted decides)
    from dataclasses import replace

    real = bench.interleave

    def first_window_slow(variants, *args):
        baseline, first = variants[0], len(variants[0].rounds)
        real(variants, *args)
        if first == 0:
            slow = [replace(r, samples_ms=tuple(20 * ms for ms in r.samples_ms)) for r in baseline.rounds]
            baseline.rounds[:] = slow

    monkeypatch.setattr(bench, "interleave", first_window_slow)
    with ResultStore(tmp_path / "o.db") as store:
        (entry,) = optimize_plans(_request(model_spec, ("threads=1",)), store).configs
    (t1,) = entry.candidates
    assert t1.baseline_ms > 10 * entry.baseline.latency_ms.median  # its window, against the row of every window
    (note,) = [n for n in entry.notes if n.startswith("the host drifted")]
    assert f"threads=1 (baseline {t1.baseline_ms:.3g} ms)" in note


def test_budget_leaves_candidates_untried(model_spec, tmp_path):
    request = _request(model_spec, ("threads=1", "channels_last"))
    request = OptimizeRequest(request.sweeps, budget_s=1e-3, rounds=2, only=request.only)
    with ResultStore(tmp_path / "o.db") as store:
        entry = optimize_plans(request, store).configs[0]
    assert sorted(n for n, _ in entry.not_tried) == ["channels_last", "threads=1"]
    assert entry.recommended == () and entry.baseline.latency_ms is not None  # the baseline is still measured
    # the baseline alone took longer than the budget: the config says by how much
    (over,) = [n for n in entry.notes if n.startswith("ran ")]
    assert "past the budget" in over and f"{request.budget_s:g} s" in over and entry.elapsed_s > 1e-3
    assert "the baseline's setup" in over and "compilation" not in over  # no candidate ran, none compiled
    assert f"{entry.elapsed_s:.1f} s in all" in over and "profiling" in over  # no fresh process ran: not named


def test_ctrl_c_during_the_confirmation_keeps_the_recipe_on_the_windows_that_finished(
    model_spec, tmp_path, monkeypatch
):
    """The config is cut short (a trial's read ``cut_short`` false and "1 of 1 configs optimized"), and its
    recommendation says it stands on the windows that finished; it counts as optimized, as stored (a later trial
    read "0 of 1 configs optimized" beside the stored recipe)."""
    from surrobench.report.optimize import recipe_lines

    windows, interleave = [], bench.interleave

    def cut_in_the_third_window(variants, *args):  # threads=1 alone, one confirmation window, then Ctrl-C
        windows.append(len(variants))
        interleave(variants, *args)
        if len(windows) == 3:  # the window's rounds were timed, its bookkeeping never happened
            raise KeyboardInterrupt

    monkeypatch.setattr(bench, "interleave", cut_in_the_third_window)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted, match="1 of 1 configs optimized, the last one in part") as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
        report = cut.value.partial
        assert report.interrupted and store.run_state(report.recipe_run_id) == "interrupted"
        assert str(cut.value).endswith(f"(baseline run {report.baseline_run_id}, recipe run {report.recipe_run_id})")
        base, recipe = store.load_run(report.baseline_run_id), store.load_run(report.recipe_run_id)
    (entry,) = report.configs
    assert entry.recommended == ("threads=1",) and entry.cut_short and entry.to_json()["cut_short"] is True
    (line,) = [x for x in recipe_lines(entry.to_json()) if x.startswith("recommended:")]
    assert line.endswith("; interrupted before its confirmation windows finished)")
    assert entry.recipe_windows == 2  # its own window and one confirmation window; the cut one left no rounds
    assert len(recipe.results[0].samples_ms) == len(base.results[0].samples_ms)  # the pair covers the same rounds
    assert any(
        n.startswith("interrupted (Ctrl-C or a signal) during the recipe's confirmation windows") for n in entry.notes
    )
    assert not any("no recipe" in n for n in entry.notes)


def test_the_stored_runs_carry_the_cpus_other_processes_kept_busy_over_each_ones_timed_calls(
    model_spec, tmp_path, monkeypatch
):
    # a planted reading of every timed loop: 1.5 of 2 CPUs busy elsewhere while the baseline (2 threads) ran, 0.1
    # while threads=1 did; each stored config carries its own rounds' reading, and compare marks the pair contended
    import torch

    from surrobench.execution import runner, timing

    monkeypatch.setattr(timing, "other_cpus", lambda span: 1.5 if torch.get_num_threads() == 2 else 0.1)
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    with ResultStore(tmp_path / "o.db") as store:
        report = optimize_plans(_request(model_spec, ("threads=1",)), store)
        base, recipe = store.load_run(report.baseline_run_id), store.load_run(report.recipe_run_id)
    assert recipe.results[0].extra["threads"] == 1
    readings = [{k: r.results[0].extra[k] for k in ("other_cpus", "usable_cpus")} for r in (base, recipe)]
    assert readings == [{"other_cpus": 1.5, "usable_cpus": 2}, {"other_cpus": pytest.approx(0.1), "usable_cpus": 2}]
    (c,) = compare_runs(base, recipe).configs
    assert c.contended == {"base": 1.5, "new": pytest.approx(0.1)}


def test_the_profiler_attaches_only_after_every_timed_round(model_spec, tmp_path, monkeypatch):
    # once torch.profiler has attached CUPTI, launches in the process stay slower: no round may follow it
    events: list[str] = []
    interleave, top_op = bench.interleave, config.top_op  # every timing window goes through it
    monkeypatch.setattr(bench, "interleave", lambda *a: (events.append("round"), interleave(*a))[1])
    monkeypatch.setattr(config, "top_op", lambda v: (events.append("profile"), top_op(v))[1])
    with ResultStore(tmp_path / "o.db") as store:
        entry = optimize_plans(_request(model_spec, ("threads=1", "channels_last")), store).configs[0]
    assert "round" in events and events.index("profile") > max(i for i, e in enumerate(events) if e == "round")
    assert events.count("profile") == 1 + sum(c.result is not None for c in entry.candidates)


def test_ctrl_c_inside_a_search_keeps_what_it_judged(model_spec, tmp_path, monkeypatch):
    infeasible = bench.DeviceBench.infeasible

    def ctrl_c_at_compile(self, remedy):  # Ctrl-C after bf16 and threads=1 were judged, before compile
        if remedy.name == "compile":
            raise KeyboardInterrupt
        return infeasible(self, remedy)

    monkeypatch.setattr(bench.DeviceBench, "infeasible", ctrl_c_at_compile)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted, match="0 of 1 configs optimized, the last one in part") as cut:
            optimize_plans(_request(model_spec, ("threads=1", "bf16", "compile")), store)
        (entry,) = cut.value.partial.configs
        assert [c.name for c in entry.candidates] == ["bf16", "threads=1"] and entry.recommended == ()
        assert entry.notes[-1].startswith("interrupted during the search: 2 candidate(s) judged") and entry.cut_short
        assert store.load_run(cut.value.partial.baseline_run_id).results[0].latency_ms is not None
    from surrobench.report.optimize import recipe_lines

    assert "interrupted" in recipe_lines(cut.value.partial.to_json()["configs"][0])[0]


@pytest.mark.parametrize(
    "kwargs, parameter",
    [
        (dict(budget_s="10"), "budget_s"),
        (dict(budget_s=float("inf")), "budget_s"),  # JSON has no Infinity
        (dict(rounds=2.5), "rounds"),
        (dict(verify=True), "verify"),
        (dict(tolerance=None), "tolerance"),
        (dict(only=5), "only"),
        (dict(only=("threads=1", 5)), "only"),
        (dict(thorough="no"), "thorough"),
        (dict(thorough=None), "thorough"),
        (dict(db=5), "db"),
    ],
)
def test_the_api_refuses_search_settings_of_the_wrong_type(kwargs, parameter):
    import surrobench
    from surrobench.errors import UsageError

    with pytest.raises(UsageError) as raised:
        surrobench.optimize("pinn-mlp", shapes=[64], device="cpu", **kwargs)
    assert raised.value.parameter == parameter


def test_the_run_line_carries_a_seed_and_input_buffers_that_are_not_the_defaults():
    """The process windows and --verify run this line: they must time the workload that was searched."""
    (cfg,) = sweep_plan("pinn-mlp", shapes=[8], device="cpu", seed=7, input_sets=1).configs
    words = config.run_command(cfg).split()
    assert words[words.index("--seed") + 1] == "7" and words[words.index("--input-sets") + 1] == "1"
    (plain,) = sweep_plan("pinn-mlp", shapes=[8], device="cpu").configs
    assert "--seed" not in config.run_command(plain) and "--input-sets" not in config.run_command(plain)


class _Killed(BaseException):
    """Stands for SIGKILL: nothing of optimize's own handling runs after it."""


def test_a_search_killed_mid_way_leaves_every_judged_candidate_stored_as_an_interrupted_optimization(
    model_spec, tmp_path, monkeypatch
):
    from surrobench.api.report import build_report

    windows, interleave = [], bench.interleave

    def killed_in_the_second_window(variants, *args):  # threads=1 was timed and judged; its confirmation is not
        windows.append(variants)
        if len(windows) == 2:
            raise _Killed
        interleave(variants, *args)

    monkeypatch.setattr(bench, "interleave", killed_in_the_second_window)
    db = tmp_path / "o.db"
    with ResultStore(db) as store:
        with pytest.raises(_Killed):
            optimize_plans(_request(model_spec, ("cudagraph", "bf16", "threads=1")), store)
    with ResultStore(db) as store:
        (optimize_id,) = [row[0] for row in store.conn.execute("SELECT optimize_id FROM optimizations")]
        doc = find_optimization(store, optimize_id)
        (stored,) = doc["configs"]
        assert doc["interrupted"] is True
        assert [c["name"] for c in stored["candidates"]] == ["cudagraph", "bf16", "threads=1"]
        assert stored["candidates"][-1]["speedup"] is not None
        assert store.conn.execute("SELECT COUNT(*) FROM optimize_configs").fetchone()[0] == 1  # replaced, not added
        baseline_run = doc["baseline_run_id"]
    built = build_report([baseline_run], db=db)  # `report` of the killed run shows what was judged
    assert [o["optimize_id"] for o in built.optimizations] == [optimize_id]


def test_ctrl_c_while_the_baseline_is_set_up_keeps_it_as_its_sizing_round_timed_it(model_spec, tmp_path, monkeypatch):
    def ctrl_c(cfg, prepared):  # the references come after the round is sized
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "reference_outputs", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted, match="0 of 1 configs optimized, the last one in part") as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
        report = cut.value.partial
        (entry,) = report.configs
        stored = store.load_run(report.baseline_run_id).results[0]
        assert store.run_state(report.baseline_run_id) == "interrupted"
        assert find_optimization(store, report.optimize_id)["configs"][0]["cut_short"] is True
    assert entry.cut_short and entry.candidates == () and entry.recommended == ()
    assert entry.baseline.iters == bench.SIZING_CALLS and entry.baseline.latency_ms is not None
    assert entry.baseline.cold_start_ms is not None and stored.latency_ms == entry.baseline.latency_ms
    assert any(n.startswith("interrupted while the baseline was set up") for n in entry.notes)
    assert any(n.startswith("the baseline as its sizing round timed it") for n in entry.notes)


def test_ctrl_c_in_the_baseline_s_first_call_keeps_the_config_interrupted_as_run_does(
    model_spec, tmp_path, monkeypatch
):
    """Ctrl-C in the baseline's first call (a model with a slow lazy setup): the config is kept, ``interrupted`` at
    its first call, as ``run`` keeps it, so that ``history --model`` and ``show`` find it; it was lost (no config)."""

    def ctrl_c(cfg, prepared, own_module=True):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "open_variant", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted, match="0 of 1 configs optimized, the last one in part") as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
        report = cut.value.partial
        (stored,) = store.load_run(report.baseline_run_id).results
        assert [r.run_id for r in store.list_runs(model=model_spec)] == [report.baseline_run_id]
        assert find_optimization(store, report.optimize_id)["configs"][0]["cut_short"] is True
    (entry,) = report.configs
    assert entry.cut_short and entry.baseline.status == stored.status == "interrupted"
    assert stored.extra["timeout_phase"] == "first_call" and stored.input_shape == (1, 3, 8, 8)


def test_ctrl_c_while_the_compile_cache_is_set_up_stores_an_interrupted_optimization(model_spec, tmp_path, monkeypatch):
    """Ctrl-C in the seconds after the baseline run is written, while torch._inductor is imported for the shared
    compile cache, before any config: the optimization is stored with no config, its run ``interrupted``."""

    def ctrl_c(environ):
        raise KeyboardInterrupt

    monkeypatch.setattr(compile_cache, "inductor_cache_dir", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted) as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
        report = cut.value.partial
        assert report.interrupted and report.configs == ()
        assert store.run_state(report.baseline_run_id) == "interrupted"
        assert find_optimization(store, report.optimize_id)["interrupted"] is True


def test_ctrl_c_before_the_first_window_keeps_the_sizing_round_and_every_candidate_judged(
    model_spec, tmp_path, monkeypatch
):
    """Ctrl-C while the first candidate that would be timed is built (a torch.compile, say): the baseline has
    no window yet; the infeasible candidates judged before are kept with it."""

    def ctrl_c(self, recipe):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench.DeviceBench, "open", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted) as cut:
            optimize_plans(_request(model_spec, ("cudagraph", "threads=1")), store)
    (entry,) = cut.value.partial.configs
    assert [(c.name, c.verdict) for c in entry.candidates] == [("cudagraph", "infeasible")]
    assert entry.cut_short and entry.baseline.iters == bench.SIZING_CALLS
    assert any(n.startswith("interrupted before") for n in entry.notes)  # before the first window: the iters above
    # cudagraph does not run on the CPU: listed as a completed run lists it (not for cpu), not counted as judged
    assert entry.notes[-1] == "interrupted during the search: 0 candidate(s) judged, no recipe"
    assert off_device(cut.value.partial.to_json()["configs"][0]) == ["cudagraph"]


def test_ctrl_c_while_the_top_ops_are_profiled_keeps_the_finished_search(model_spec, tmp_path, monkeypatch):
    def ctrl_c(variant):
        raise KeyboardInterrupt

    monkeypatch.setattr(config, "top_op", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted, match="1 of 1 configs optimized, stored") as cut:
            optimize_plans(_request(model_spec, ("threads=1", "bf16")), store)
        report = cut.value.partial
        assert store.run_state(report.baseline_run_id) == "interrupted"
    (entry,) = report.configs
    assert not entry.cut_short and [c.name for c in entry.candidates] == ["bf16", "threads=1"]
    assert entry.baseline.top_op is None and entry.notes[-1] == "interrupted while profiling the top ops: none kept"


HALF_SLOW = '''
import time
import torch


class HalfSlow(torch.nn.Module):
    """Sleeps 8 ms per call under autocast (a CPU without fast half units, by construction), 0.2 ms without."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        time.sleep(0.008 if torch.is_autocast_enabled("cpu") else 0.0002)
        return self.lin(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def build():
    return HalfSlow()
'''


def test_a_half_precision_baseline_is_measured_against_fp32(tmp_path):
    # a fresh-user trial's ConvLSTM ran fp16 on a CPU 25x slower than fp32, and optimize never tried fp32
    path = tmp_path / "half_slow.py"
    path.write_text(HALF_SLOW)
    plan = sweep_plan(f"{path}:build", shapes=[8], device="cpu", precisions="bf16", warmup=1, iters=4, input_sets=2)
    with ResultStore(tmp_path / "o.db") as store:
        (entry,) = optimize_plans(OptimizeRequest((plan,), rounds=2, only=("fp32",), process_pairs=0), store).configs
    (fp32,) = entry.candidates
    assert (fp32.name, fp32.verdict) == ("fp32", "accepted") and fp32.speedup.median > 5
    assert entry.recommended == ("fp32",) and "--precision fp32" in entry.run_command


COMPLEX_MODEL = '''
import torch


class Modes(torch.nn.Module):
    """A linear layer, then complex modal amplitudes: torch.complex has no bf16 kernel."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 16)

    def forward(self, x):  # x (B, 8)
        re, im = self.lin(x).chunk(2, -1)
        return torch.view_as_real(torch.complex(re, im))


def build():
    return Modes()
'''


def test_a_precision_an_op_cannot_run_is_explained_as_an_unsupported_dtype(tmp_path):
    (tmp_path / "modes.py").write_text(COMPLEX_MODEL)
    plan = sweep_plan(f"{tmp_path / 'modes.py'}:build", shapes=["1x8"], device="cpu", warmup=1, iters=4, threads=1)
    with ResultStore(tmp_path / "o.db") as store:
        (entry,) = optimize_plans(OptimizeRequest((plan,), rounds=2, only=("bf16",)), store).to_json()["configs"]
    (bf16,) = entry["candidates"]
    assert bf16["verdict"] == "failed" and bf16["cause"] == "unsupported_dtype"
    assert "BFloat16" in bf16["error"] and "no BFloat16 kernel" in bf16["reason"]


def test_each_config_is_announced_by_its_label_with_every_input():
    from surrobench.api.optimize import optimize

    labels = []
    optimize(
        "deeponet", shapes="64", device="cpu", warmup=1, iters=4, budget_s=2, only="threads=1", on_config=labels.append
    )
    assert labels == ["deeponet 64x2,1x100 b1 fp32 eager"]  # ConfigResult.label, not the bare shape asked (64)


def test_ctrl_c_while_a_failing_baseline_is_timed_ends_as_an_interrupted_optimization(
    model_spec, tmp_path, monkeypatch
):
    """A baseline that cannot be set up is measured as run does; the runner keeps a config cut by Ctrl-C on the
    KeyboardInterrupt (``cut_result``): optimize cut there ends as an interrupted optimization, where it read that
    config as its own partial record and failed (AttributeError: 'ConfigResult' object has no attribute 'baseline')."""
    from surrobench.execution import runner

    def fails(*args, **kwargs):
        raise RuntimeError("planted: the baseline cannot be set up")

    def ctrl_c(cfg, prepared, seen, before_each):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench.DeviceBench, "start", fails)
    monkeypatch.setattr(runner, "_measure", ctrl_c)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted) as cut:
            optimize_plans(_request(model_spec, ("threads=1",)), store)
    assert cut.value.partial.interrupted
