"""The fresh-process check of an optimize recipe (:mod:`surrobench.tune.fresh`), with real processes."""

from __future__ import annotations

import pytest

from dataclasses import replace

from conftest import exec_config
from surrobench.api.benchmark import sweep_plan
from surrobench.tune.fresh import check_fresh, process_windows
from surrobench.tune.plans import optimize_plans
from surrobench.tune.request import OptimizeRequest
from surrobench.tune.search import CONFIRM_WINDOWS
from surrobench.errors import UsageError
from surrobench.report.optimize import recipe_lines
from surrobench.results.optimize import CandidateResult, ConfigOptimization
from surrobench.records.paired import Speedup
from surrobench.results.store import ResultStore

MODEL = '''
import time
import torch


class ThreadBound(torch.nn.Module):
    """Sleeps 6 ms per call unless torch runs one thread, so the recipe threads=1 wins by construction."""

    def forward(self, x):
        time.sleep(0.006 if torch.get_num_threads() > 1 else 0.0003)
        return x * 2.0


def build():
    return ThreadBound()
'''


def _request(spec: str, fresh_pairs: int, process_pairs: int = 0) -> OptimizeRequest:
    plan = sweep_plan(spec, shapes=[8], device="cpu", warmup=1, iters=4, input_sets=1, threads=2)
    return OptimizeRequest((plan,), rounds=2, only=("threads=1",), fresh_pairs=fresh_pairs, process_pairs=process_pairs)


def test_the_search_times_its_recipe_in_a_pair_of_fresh_processes_too(tmp_path, monkeypatch):
    """One real pair (each process imports torch, ~2 s on 2 shared cores); more pairs, alternating, are the test
    below, its processes planted."""
    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    phases: list[str] = []
    with ResultStore(tmp_path / "o.db") as store:
        report = optimize_plans(_request("thread_bound.py:build", 0, process_pairs=1), store, on_phase=phases.append)
        (entry,) = report.configs
        tags = [store.load_run(run_id).tag for run_id in entry.recipe_process_run_ids]
    # its own pairing and CONFIRM_WINDOWS in this process, then one window for the pair of processes
    assert entry.recipe_windows == 1 + CONFIRM_WINDOWS + 1 and entry.recipe_process_windows == 1
    assert tags == ["confirm:baseline", "confirm:recipe"]
    assert entry.recipe_window_speedups[-1] > 5  # 6 ms against 0.3 ms in the new processes
    assert any("include 1 of 1 pair(s) of fresh processes" in note for note in entry.notes)
    recipe = report.to_json()["configs"][0]["recipe"]  # per process: this one, then the fresh one
    assert recipe["process_windows"] == 1 and recipe["process_speedups"][1:] == recipe["window_speedups"][-1:]
    # a minute of fresh processes is announced before it starts (no --verify: no second line)
    assert phases == ["timing threads=1 and the baseline in up to 1 pair(s) of fresh processes (within the budget)"]


def test_the_search_alternates_its_pairs_of_fresh_processes_and_pools_a_window_per_pair(tmp_path, monkeypatch):
    """Two pairs, each process planted (the processes themselves are the test above): the baseline at 6 ms a
    call, the recipe (threads=1) at 0.3 ms."""
    from surrobench.tune import fresh

    launched: list[str] = []

    def one_run(config, tag, db, out):
        launched.append(tag)
        return [6.0 if tag.endswith("baseline") else 0.3] * 8, f"run-{len(launched)}"

    monkeypatch.setattr(fresh, "_one_run", one_run)
    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    phases: list[str] = []
    report = optimize_plans(
        _request("thread_bound.py:build", 0, process_pairs=2), ResultStore(":memory:"), on_phase=phases.append
    )
    (entry,) = report.configs
    assert entry.recipe_windows == 1 + CONFIRM_WINDOWS + 2 and entry.recipe_process_windows == 2
    assert launched == ["confirm:baseline", "confirm:recipe", "confirm:recipe", "confirm:baseline"]
    assert entry.recipe_process_run_ids == ("run-1", "run-2", "run-3", "run-4")
    assert entry.recipe_window_speedups[-2:] == pytest.approx([20.0, 20.0])
    assert any("include 2 of 2 pair(s) of fresh processes" in note for note in entry.notes)
    doc = report.to_json()
    assert doc["configs"][0]["recipe"]["process_windows"] == 2
    recipe = doc["configs"][0]["recipe"]  # per process: this one (its windows' geometric mean), then each fresh one
    assert len(recipe["process_speedups"]) == 3 and recipe["process_speedups"][1:] == recipe["window_speedups"][-2:]
    inside = recipe["windows"] - recipe["process_windows"]  # the line says what its interval is pooled over
    assert f"{inside} in this process" in recipe_lines(doc["configs"][0])[0]
    assert phases == ["timing threads=1 and the baseline in up to 2 pair(s) of fresh processes (within the budget)"]


def test_a_confirm_process_that_fails_leaves_the_windows_of_this_process(tmp_path, monkeypatch):
    import sys

    from surrobench.tune import fresh

    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fresh, "_argv", lambda config: [sys.executable, "-c", "import sys; sys.exit(3)"])
    (entry,) = optimize_plans(_request("thread_bound.py:build", 0, process_pairs=2), ResultStore(":memory:")).configs
    assert entry.recommended == ("threads=1",)  # the in-process windows alone bear it out
    assert entry.recipe_process_windows == 0 and entry.recipe_windows == 1 + CONFIRM_WINDOWS
    assert any("a process failed: confirm:baseline exited 3" in note for note in entry.notes)


def test_the_recipe_is_measured_again_in_alternating_fresh_processes(tmp_path, monkeypatch):
    # the processes themselves are tested above (the search's windows in real pairs); here --verify's check
    # over them, each process planted: the baseline config at 6 ms a call, the recipe (threads=1) at 0.3 ms
    from surrobench.tune import fresh as fresh_module

    launched: list[str] = []

    def planted_run(config: dict, tag: str, db, out):
        launched.append(tag)
        ms = 0.3 if config.get("threads") == 1 else 6.0
        return [ms * (1 + 0.01 * (i % 3)) for i in range(20)], f"run-{len(launched)}"

    monkeypatch.setattr(fresh_module, "_one_run", planted_run)
    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)  # the recipe's run line names the model file relative to here
    phases: list[str] = []
    (entry,) = optimize_plans(
        _request("thread_bound.py:build", 2), ResultStore(":memory:"), on_phase=phases.append
    ).configs
    fresh = entry.fresh
    assert fresh is not None and fresh.verdict != "failed", fresh.reason
    assert fresh.speedup.median > 5  # 6 ms against 0.3 ms, as the processes measured
    assert len(fresh.baseline_ms) == len(fresh.recipe_ms) == 2 and min(fresh.baseline_ms) > 5
    assert launched == ["fresh:baseline", "fresh:recipe", "fresh:recipe", "fresh:baseline"]
    assert fresh.run_ids == ("run-1", "run-2", "run-3", "run-4")
    assert entry.to_json()["fresh"]["verdict"] == fresh.verdict
    assert phases == ["checking threads=1 in 2 pair(s) of fresh processes"]


def test_a_fresh_process_that_fails_is_one_line_and_nothing_is_lost(tmp_path):
    cfg = exec_config(model="missing.py:build")
    entry = ConfigOptimization(
        baseline=None,
        candidates=(CandidateResult("threads=1", "accepted", "planted", speedup=Speedup(2.0, (1.9, 2.1), 0.01)),),
        recommended=("threads=1",),
        fresh_configs=(cfg.to_json(), replace(cfg, threads=1).to_json()),
    )
    fresh = check_fresh(entry, pairs=2, db=tmp_path / "f.db")
    assert fresh.verdict == "failed" and fresh.speedup is None
    assert "fresh:baseline" in fresh.reason and "exited 2" in fresh.reason  # the process, its exit status
    assert "missing.py" in fresh.reason and "\n" not in fresh.reason


def test_nothing_to_check_without_a_recipe_and_one_pair_is_refused(tmp_path):
    assert check_fresh(ConfigOptimization(baseline=None), pairs=2, db=None) is None
    with pytest.raises(UsageError, match="2 to 20 pairs"):
        optimize_plans(_request("pinn-mlp", 1), ResultStore(tmp_path / "o.db"))


def test_the_library_call_optimizes_a_named_model_and_refuses_verify_on_an_object(tmp_path, monkeypatch):
    import surrobench

    monkeypatch.chdir(tmp_path)
    (tmp_path / "thread_bound.py").write_text(MODEL)
    opt = surrobench.optimize(
        "thread_bound.py:build",
        shapes=[8],
        device="cpu",
        warmup=1,
        iters=4,
        rounds=2,
        only="threads=1",
        threads=2,
        processes=0,  # the search's fresh processes are the test above
    )
    assert opt.configs[0].recommended == ("threads=1",) and list(tmp_path.glob("*.db")) == []  # db=None
    with pytest.raises(UsageError, match="rebuilds the model from its name"):
        surrobench.optimize(lambda: None, shapes=[8], device="cpu", verify=2)
    with pytest.raises(UsageError, match="optimize with processes runs"):
        surrobench.optimize(lambda: None, shapes=[8], device="cpu", processes=3)
    with pytest.raises(UsageError, match="unknown remedy warp") as refused:
        surrobench.optimize("thread_bound.py:build", shapes=[8], device="cpu", only=["warp"])
    assert "not for cpu" in str(refused.value) and "cudagraph, tf32" in str(refused.value)  # not offered as CPU ones
    with pytest.raises(UsageError, match="budget_s 0"):
        surrobench.optimize("thread_bound.py:build", shapes=[8], device="cpu", budget_s=0)


def test_ctrl_c_is_passed_to_the_fresh_process_which_gets_time_to_store_its_run(tmp_path, monkeypatch):
    """A signal sent to optimize alone (``timeout -s INT``) never reaches its child: the child is sent SIGINT
    and waited for, so ``surrobench run`` there can mark its run interrupted instead of being left running."""
    import os
    import signal
    import sys
    import threading

    from surrobench.tune import fresh

    marker, ready = tmp_path / "child-stored", tmp_path / "child-ready"
    child = (
        "import pathlib, signal, sys, time\n"
        f"def stop(*_): pathlib.Path({str(marker)!r}).write_text('interrupted'); sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    monkeypatch.setattr(fresh, "_argv", lambda config: [sys.executable, "-c", child])
    # a shell that starts the suite in the background has SIGINT ignored, and Python then keeps it ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    returned = threading.Event()

    def interrupt_once_the_child_is_up():
        while not ready.exists() and not returned.wait(0.02):
            pass
        if not returned.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    waiter = threading.Thread(target=interrupt_once_the_child_is_up, daemon=True)
    waiter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fresh._one_run(exec_config().to_json(), "fresh:recipe", tmp_path / "f.db", tmp_path / "o.json")
    finally:
        returned.set()
        waiter.join()
        signal.signal(signal.SIGINT, previous)
    assert marker.read_text() == "interrupted"


PICKY = """
import sys
import torch


def build():
    if "confirm:recipe" in sys.argv:  # only the recipe's process, never the parent
        raise RuntimeError("no recipe here")
    return torch.nn.Identity()
"""


def test_a_process_whose_config_fails_is_named_by_that_config_error(tmp_path, monkeypatch):
    """The fresh process exits 3 after storing a failed config; its last stderr line is a warning, the cause is in
    its run JSON. The recipe's process is real; the baseline's, before it, planted."""
    from surrobench.tune import fresh

    real_run = fresh._one_run

    def one_run(config, tag, db, out):
        if tag == "confirm:baseline":
            return [1.0] * 6, "baseline-run"
        return real_run(config, tag, db, out)

    monkeypatch.setattr(fresh, "_one_run", one_run)
    (tmp_path / "picky.py").write_text(PICKY)
    monkeypatch.chdir(tmp_path)
    cfg = exec_config(model="picky.py:build")
    found = process_windows(cfg, replace(cfg, threads=1), pairs=1, rounds=2, warmup=1, iters=3, db=tmp_path / "f.db")
    assert found.baseline_rounds == found.recipe_rounds == () and found.run_ids == ("baseline-run",)
    assert found.error.startswith("confirm:recipe (run ") and "no recipe here" in found.error


def test_ctrl_c_during_the_search_fresh_processes_keeps_the_recipe_on_the_windows_that_finished(tmp_path, monkeypatch):
    from surrobench.tune import fresh
    from surrobench.errors import Interrupted

    launched = []

    def one_run(command, tag, db, out):
        launched.append(tag)
        if len(launched) == 2:  # during the first pair: no whole pair of processes
            raise KeyboardInterrupt
        return [6.0] * 100, "run-1"

    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fresh, "_one_run", one_run)
    with ResultStore(tmp_path / "o.db") as store:
        with pytest.raises(Interrupted) as cut:
            optimize_plans(_request("thread_bound.py:build", 0, process_pairs=2), store)
        report = cut.value.partial
        (entry,) = report.configs
        assert report.interrupted and report.recipe_run_id is not None
        assert store.run_state(report.recipe_run_id) == "interrupted"
    # the recipe stands on the windows that finished, its config cut short (its confirmation was)
    assert entry.recommended == ("threads=1",) and entry.recipe_result is not None and entry.cut_short
    assert entry.recipe_process_windows == 0 and entry.recipe_windows == 1 + CONFIRM_WINDOWS
    assert launched == ["confirm:baseline", "confirm:recipe"]
    note = next(n for n in entry.notes if "pair(s) of fresh processes" in n)
    assert "run-1" in note and note.endswith("interrupted (Ctrl-C or a signal)")  # the run of the process finished


def test_the_fresh_processes_use_the_parents_compile_cache(tmp_path, monkeypatch):
    from surrobench.tune import fresh

    seen = []

    def one_run(command, tag, db, out):
        seen.append(fresh._env())
        return [6.0 if tag.endswith("baseline") else 0.3] * 100, "run-1"

    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHINDUCTOR_FX_GRAPH_CACHE", raising=False)
    monkeypatch.setattr(fresh, "_one_run", one_run)
    optimize_plans(_request("thread_bound.py:build", 0, process_pairs=1), ResultStore(":memory:"))
    assert len(seen) == 2
    assert all(env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache") for env in seen)
    assert all(env["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1" for env in seen)


class _Clock:
    """A planted ``time`` module: each fake process advances it by its planted seconds."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


def test_pairs_of_fresh_processes_that_would_not_fit_the_budget_are_skipped(monkeypatch):
    from surrobench.tune import fresh

    clock = _Clock()

    def one_run(command, tag, db, out):
        clock.now += 7.0  # each process takes 7 s: a pair 14 s
        return [1.0] * 4, "run"

    monkeypatch.setattr(fresh, "time", clock)
    monkeypatch.setattr(fresh, "_one_run", one_run)
    # the first pair is estimated at 10 s and fits the 25 s left; the second, at the first's 14 s, would end at 28
    budget = fresh.PairBudget(deadline=25.0, pair_s=10.0)
    found = process_windows(
        exec_config(), exec_config(threads=1), pairs=3, rounds=1, warmup=0, iters=4, db=None, budget=budget
    )
    assert (found.windows, found.skipped) == (1, 2) and budget.pair_s == 14.0
    nothing = process_windows(
        exec_config(),
        exec_config(threads=1),
        pairs=2,
        rounds=1,
        warmup=0,
        iters=4,
        db=None,
        budget=fresh.PairBudget(deadline=clock.now + 5.0, pair_s=10.0),
    )
    assert (nothing.windows, nothing.skipped, nothing.run_ids) == (0, 2, ())


class _Timer:
    """A planted ``time`` for the timed calls (:mod:`surrobench.execution.timing`): each reading comes one call
    later, 6 ms at torch's 2 threads (the baseline), 0.3 ms at 1 (the recipe), by turns 1% either side."""

    def __init__(self):
        self.ns, self.reads = 0, 0

    def perf_counter_ns(self):
        import torch

        self.reads += 1
        call_ns = 6e6 if torch.get_num_threads() > 1 else 3e5
        self.ns += int(call_ns * (1 + 0.01 * (self.reads % 3 - 1)))
        return self.ns


def _planted_search(monkeypatch) -> _Clock:
    """The search on planted time: its timed calls' (:class:`_Timer`) and a clock (its budget's start and end, its
    rounds' deadlines, the fresh pairs'), returned for the planted processes to advance. On the real ones a loaded
    host read threads=1 too noisy to judge (3.2x [1.3, 4.4], noise floor 56%) or spent the budget: no recipe, no pair."""
    from functools import partial

    from surrobench.execution import timing
    from surrobench.tune import config as tune_config

    clock = _Clock()
    monkeypatch.setattr(timing, "time", _Timer())
    monkeypatch.setattr(tune_config, "time", clock)
    monkeypatch.setattr(tune_config, "Search", partial(tune_config.Search, clock=clock.monotonic))
    return clock


def test_the_search_runs_the_pair_it_kept_time_for_and_says_how_many_more_the_budget_left_skipped(
    tmp_path, monkeypatch
):
    """The search keeps time for one pair of fresh processes; the second runs only if the budget left fits it."""
    from surrobench.tune import fresh

    clock, launched = _planted_search(monkeypatch), []

    def one_run(command, tag, db, out):
        launched.append(tag)
        clock.now += 10.0  # a process 10 s: the second pair is then estimated at the first's 20 s
        return [6.0 if tag.endswith("baseline") else 0.3] * 8, f"run-{len(launched)}"

    monkeypatch.setattr(fresh, "time", clock)
    monkeypatch.setattr(fresh, "_one_run", one_run)
    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    request = replace(_request("thread_bound.py:build", 0, process_pairs=2), budget_s=30.0)
    (entry,) = optimize_plans(request, ResultStore(":memory:")).configs
    # on a CPU a pair is estimated at ~6 s (the search takes no time on this clock): the first pair fits the
    # 30 s; after it 20 s have passed and fewer than 20 s are left
    assert launched == ["confirm:baseline", "confirm:recipe"]
    assert entry.recommended == ("threads=1",) and entry.recipe_process_windows == 1
    note = next(n for n in entry.notes if "pair(s) of fresh processes" in n)
    assert "include 1 of 2 pair(s)" in note and "1 pair(s) skipped" in note and "budget" in note  # and why


def test_the_search_leaves_its_fresh_processes_their_estimated_share_of_the_budget():
    from types import SimpleNamespace

    from surrobench.tune.bench import DeviceBench
    from surrobench.tune.fresh import PROCESS_START_S

    def bench(budget_s: float, process_pairs: int, device: str = "cuda"):
        request = SimpleNamespace(budget_s=budget_s, rounds=2, process_pairs=process_pairs, rebuildable=True)
        baseline = SimpleNamespace(setup_ms=0.0, rounds=[])  # no rounds yet: a call at 300/10 ms
        return SimpleNamespace(
            request=request,
            baseline=baseline,
            warmup=1,
            iters=10,
            cfg=SimpleNamespace(device=device),
            _per_call_ms=lambda v: 300.0 / 10,
        )

    # per side: the device's process start, its setup (0 and 1 s), 1 + 2 * 10 calls of 30 ms; one pair, however
    # many are asked for (the others run only when the budget left fits them)
    side = 21 * 0.03
    expected = 2 * PROCESS_START_S["cuda"] + 1.0 + 2 * side
    assert DeviceBench.process_reserve_s(bench(200.0, 2), 1000.0) == pytest.approx(expected)
    assert DeviceBench.process_reserve_s(bench(200.0, 5), 1000.0) == pytest.approx(expected)
    assert DeviceBench.process_reserve_s(bench(4.0, 2), 1000.0) == 1.0  # at most a quarter of the budget
    assert DeviceBench.process_reserve_s(bench(120.0, 0), 1000.0) == 0.0
    cpu = DeviceBench.process_reserve_s(bench(120.0, 1, "cpu"), 0.0)
    assert (
        cpu == pytest.approx(2 * (PROCESS_START_S["cpu"] + side)) and PROCESS_START_S["cpu"] < PROCESS_START_S["cuda"]
    )


def test_a_fresh_process_measures_the_config_json_it_is_given_as_run_would(tmp_path, monkeypatch):
    """The child's main in this process: the config is read from JSON, measured, stored tagged, written."""
    import json

    from surrobench.tune.fresh_child import main
    from surrobench.records.run import run_from_json

    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    cfg = exec_config(model="thread_bound.py:build", iters=3, threads=1)
    (tmp_path / "c.json").write_text(json.dumps(cfg.to_json()))
    argv = ["--config", "c.json", "--db", "f.db", "--json", "r.json", "--tag", "confirm:recipe"]
    assert main(argv) == 0
    run = run_from_json(json.loads((tmp_path / "r.json").read_text()))
    (result,) = run.results
    assert (result.model, result.status, len(result.samples_ms)) == ("thread_bound.py:build", "ok", 3)
    assert max(result.samples_ms) < 5  # one thread: the planted 0.3 ms, not 6 ms
    with ResultStore(tmp_path / "f.db") as store:
        assert store.load_run(run.run_id).tag == "confirm:recipe"
    (tmp_path / "bad.json").write_text("{}")
    assert main(["--config", "bad.json", "--db", "f.db", "--json", "x.json"]) == 2
    assert not (tmp_path / "x.json").exists()


def test_no_pair_is_announced_when_the_budget_left_fits_none(tmp_path, monkeypatch):
    """The phase line promises fresh processes only when the first pair will start."""
    from surrobench.tune import fresh

    search = _planted_search(monkeypatch)

    class Late:  # the processes' clock 29 s ahead: at the pairs, less than a pair of the 30 s budget is left
        def monotonic(self):
            return search.now + 29.0

    launched, phases = [], []
    monkeypatch.setattr(fresh, "time", Late())
    monkeypatch.setattr(fresh, "_one_run", lambda *a: launched.append(a[1]))
    (tmp_path / "thread_bound.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    request = replace(_request("thread_bound.py:build", 0, process_pairs=2), budget_s=30.0)
    (entry,) = optimize_plans(request, ResultStore(":memory:"), on_phase=phases.append).configs
    assert entry.recommended == ("threads=1",) and launched == [] and phases == []
    assert any("include 0 of 2 pair(s)" in n and "2 pair(s) skipped" in n for n in entry.notes)
