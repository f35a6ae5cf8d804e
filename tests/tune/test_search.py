"""The remedy search's decisions on planted timings (:class:`surrobench.tune.search.Search` over a
:class:`planted_search.PlantedBench`): singles, greedy stacking from two starts with swaps, head to head, the
budget, and the recipe pooled over its windows."""

from __future__ import annotations

import pytest
from planted_search import PlantedBench, PlantedClock, planted_search, remedies

from surrobench.execution.remedies import Recipe
from surrobench.records.paired import PairedSamples
from surrobench.tune.search import CONFIRM_WINDOWS

# speedups over the baseline as measured (planted): the singles, then each stack's (its gain over the recipe it
# is stacked on, times that recipe's speedup)
SINGLES = {"cudagraph": 4.0, "compile": 3.0, "tf32": 1.3, "channels_last": 0.7, "fp16": 2.0}
STACKS = {
    "cudagraph+tf32": 4.0 * 1.2,
    "cudagraph+tf32+channels_last": 4.8 * 0.95,
    "compile+tf32": 3.0 * 1.5,  # compile excludes cudagraph: the first path never reaches it
    "compile+tf32+channels_last": 4.5 * 1.0,
}
ORDER = ("cudagraph", "compile", "tf32", "channels_last", "fp16")


def _bench(**kw) -> PlantedBench:
    return PlantedBench({**SINGLES, **STACKS, **kw.pop("speedups", {})}, inaccurate=("fp16",), **kw)


def _tried(search) -> list[tuple[str, str | None]]:
    """The stacks tried, with what each was stacked on."""
    return [(c.name, c.stacked_on) for c in search.done if c.stacked_on is not None]


def test_greedy_stacking_builds_on_the_fastest_and_keeps_only_gains():
    search = planted_search(_bench())
    search.run(remedies(*ORDER))
    verdicts = {c.name: c.verdict for c in search.done}
    assert [verdicts[n] for n in ORDER] == ["accepted", "accepted", "accepted", "rejected_slower", "rejected_accuracy"]
    # fastest accepted first (cudagraph); compile conflicts with it (one mode), so it starts a second path;
    # fp16 failed its accuracy check, so it is never stacked
    assert _tried(search) == [
        ("cudagraph+tf32", "cudagraph"),
        ("cudagraph+tf32+channels_last", "cudagraph+tf32"),
        ("compile+tf32", "compile"),
        ("compile+tf32+channels_last", "compile+tf32"),
    ]
    # 0.95x over its recipe is slower by the rule; 1.0x is neither faster nor slower
    assert [verdicts[n] for n, _ in _tried(search)] == [
        "accepted",
        "rejected_slower",
        "accepted",
        "rejected_not_faster",
    ]
    duel = search.head_to_head  # the two paths' recipes, head to head: the rival (4.5x) lost to 4.8x
    assert (duel.first, duel.rival, duel.kept) == ("cudagraph+tf32", "compile+tf32", "cudagraph+tf32")
    assert search.recipe.name == "cudagraph+tf32" and search.not_tried == []
    # confirmed over its own window, the one it parented, the duel and the confirmation windows
    assert len(search.window_speedups) == 3 + CONFIRM_WINDOWS and search.recipe_speedup.median == pytest.approx(
        4.8, 0.01
    )


def test_the_rival_path_replaces_the_first_when_it_wins_head_to_head():
    search = planted_search(_bench(speedups={"compile+tf32": 5.2}))
    search.run(remedies(*ORDER))
    assert search.recipe.name == "compile+tf32" and search.head_to_head.kept == "compile+tf32"
    assert search.head_to_head.gain.median == pytest.approx(5.2 / 4.8, rel=0.01)


def test_a_single_without_a_rival_stacks_once():
    search = planted_search(_bench())
    search.run(remedies("cudagraph", "tf32", "channels_last"))
    assert search.recipe.name == "cudagraph+tf32" and search.head_to_head is None


def test_a_remedy_that_excludes_one_stacked_later_is_tried_in_its_place():
    # cudagraph first; tf32 (fastest precision alone) is stacked, then fp16 is tried in its place and wins
    bench = PlantedBench({"cudagraph": 4.0, "tf32": 1.3, "fp16": 1.2, "cudagraph+tf32": 4.8, "cudagraph+fp16": 5.6})
    search = planted_search(bench)
    search.run(remedies("cudagraph", "tf32", "fp16"))
    # the swap is judged against the recipe it would replace; fp16 excludes tf32, not the start
    assert _tried(search) == [("cudagraph+tf32", "cudagraph"), ("cudagraph+fp16", "cudagraph+tf32")]
    assert search.recipe.name == "cudagraph+fp16"


def test_a_swap_never_times_again_a_stack_judged_before():
    # bf16 first; threads=4 stacked and rejected, threads=1 accepted; swapping threads=4 back in would be the
    # stack already judged
    bench = PlantedBench(
        {"bf16": 2.0, "threads=4": 1.5, "threads=1": 1.2, "bf16+threads=4": 2.0, "bf16+threads=1": 2.4}
    )
    search = planted_search(bench)
    search.run(remedies("bf16", "threads=4", "threads=1"))
    assert _tried(search) == [("bf16+threads=4", "bf16"), ("bf16+threads=1", "bf16")]
    assert search.recipe.name == "bf16+threads=1"


def test_a_swap_says_what_it_replaced():
    bench = PlantedBench(
        {"bf16": 2.0, "threads=1": 1.5, "threads=4": 0.9, "bf16+threads=1": 2.4, "bf16+threads=4": 2.4 * 1.9}
    )
    search = planted_search(bench)
    search.run(remedies("bf16", "threads=1", "threads=4"))
    assert search.recipe.name == "bf16+threads=4"  # slower alone (0.9x), yet the best once stacked
    swap = search.done[-1]
    assert swap.reason.startswith("in place of threads=1: 1.9") and swap.stacked_on == "bf16+threads=1"


def test_a_rival_slower_alone_still_gets_its_path_and_is_built_again_when_released():
    # threads=1 first; threads=4 is slower alone but sets the same setting: it gets a path and wins stacked. The
    # device is full, so the singles were released after timing: the rival is built again (not its accuracy)
    bench = PlantedBench(
        {"threads=1": 1.6, "bf16": 1.3, "threads=4": 0.8, "threads=1+bf16": 1.76, "threads=4+bf16": 2.0},
        crowded=True,
    )
    search = planted_search(bench)
    search.run(remedies("threads=1", "bf16", "threads=4"))
    duel = search.head_to_head
    assert (duel.first, duel.rival, duel.kept) == ("threads=1+bf16", "threads=4+bf16", "threads=4+bf16")
    assert search.recipe.name == "threads=4+bf16" and bench.opened.count("threads=4") == 2
    assert "threads=4" in search.unprofiled


def test_a_rival_that_cannot_be_built_again_keeps_the_first():
    class OutOfMemoryOnRebuild(PlantedBench):
        def open(self, recipe):
            if recipe.name in self.opened:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return super().open(recipe)

    search = planted_search(OutOfMemoryOnRebuild({"threads=1": 1.6, "threads=4": 1.2}, crowded=True))
    search.run(remedies("threads=1", "threads=4"))
    duel = search.head_to_head
    assert duel.gain is None and duel.kept == "threads=1" and duel.error.startswith("could not be built again: ")
    assert search.recipe.name == "threads=1"


def test_stacking_stops_at_the_budget():
    # each window takes 1 s: the singles end at 4 s, the first stack at 5 s; the deadline, 5 s, leaves the
    # confirmation's three windows of 1 s before the budget's end (8 s); a candidate starts only when it would end
    # by the deadline at the time the longest one like it took (1 s)
    clock = PlantedClock()
    search = planted_search(_bench(clock=clock), budget_end=8.0)
    search.run(remedies(*ORDER))
    assert [n for n, _ in _tried(search)] == ["cudagraph+tf32"]
    # the budget is not spent: what is left of it is kept for the confirmation (a trial read "budget of 40 s spent"
    # with 24 s of it left); this bench runs no fresh processes, so none are named
    kept = "budget of 8 s: the 3 s kept for the recipe's confirmation windows"
    assert search.not_tried == [("cudagraph+tf32+channels_last", kept), ("stacking on compile", kept)]


def test_a_spent_budget_leaves_the_remaining_singles_untried_and_the_baseline_measured():
    search = planted_search(_bench(clock=PlantedClock()), budget_end=-1.0)
    search.run(remedies("tf32", "channels_last"))
    assert sorted(n for n, _ in search.not_tried) == ["channels_last", "tf32"] and search.recipe.names == []
    # the baseline alone, for the record: one round, as a round more would end past the spent budget
    assert len(search.bench.baseline.rounds) == 1


def test_nothing_accepted_means_no_recipe():
    bench = PlantedBench({name: 0.9 for name in ORDER})
    search = planted_search(bench)
    search.run(remedies(*ORDER))
    assert search.recipe.names == [] and _tried(search) == [] and search.recipe_speedup is None
    assert {c.verdict for c in search.done} == {"rejected_slower"}


def _duel(rival_speedup: float, **kw):
    bench = PlantedBench({"tf32+cudagraph": 1.0 * 4, "fp16+cudagraph": rival_speedup * 4}, rounds=4, **kw)
    search = planted_search(bench)
    known = {r.name: r for r in remedies("tf32", "fp16", "cudagraph")}
    a = Recipe((known["tf32"], known["cudagraph"]))
    b = Recipe((known["fp16"], known["cudagraph"]))
    return search, (a, bench.open(a)), (b, bench.open(b))


@pytest.mark.parametrize(
    ("rival", "wins", "verdict"),
    [(1.25, True, "faster"), (1.012, True, "unchanged"), (0.988, False, "unchanged"), (0.83, False, "slower")],
)
def test_head_to_head_keeps_the_recipe_its_median_favours_faster_by_the_rule_or_not(rival, wins, verdict):
    search, first, other = _duel(rival)
    assert search.duel(first, other) is wins
    duel = search.head_to_head
    assert (duel.first, duel.rival, duel.kept) == (first[0].name, other[0].name, (other if wins else first)[0].name)
    assert duel.gain.median == pytest.approx(rival, rel=0.005) and duel.gain.verdict() == verdict
    assert duel.note().startswith("stacked from two starts that exclude each other (tf32, fp16); head to head")
    assert duel.note().endswith(f"{duel.kept} is the recipe")
    assert ("the median decides" in duel.note()) is (verdict == "unchanged")
    assert duel.to_json()["gain"]["median"] == duel.gain.median and duel.to_json()["kept"] == duel.kept


def test_head_to_head_that_fails_keeps_the_first():
    search, first, other = _duel(2.0, fail={0: RuntimeError("CUDA error: an illegal memory access was encountered")})
    assert search.duel(first, other) is False
    duel = search.head_to_head
    assert duel.gain is None and duel.kept == first[0].name and "illegal memory access" in duel.error
    assert duel.note().startswith(f"{other[0].name} could not be timed against {first[0].name} (")


def test_the_recipe_speedup_pools_every_window_it_shared_with_the_baseline():
    """Two windows of the same recipe a little apart (5.0x, then 4.76x), then the confirmation windows (4.88x):
    one window's CI misses the other; the pooled one, drawn over windows, is several times as wide as either
    and holds the confirmation's speedup between them."""
    bench = PlantedBench({"threads=1": lambda seen: (5.0, 10 / 2.1)[seen] if seen < 2 else 10 / 2.05})
    search = planted_search(bench)
    (remedy,) = remedies("threads=1")
    recipe = Recipe((remedy,))
    handle = bench.open(recipe)
    search.window([handle])
    search.window([handle])
    pooled, per_window = search.confirm(recipe, handle)
    base, cand = bench.baseline.samples_ms(), handle.samples_ms()
    first = PairedSamples.interleaved(base[:2], cand[:2]).speedup()
    second = PairedSamples.interleaved(base[2:4], cand[2:4]).speedup()
    windows = 2 + CONFIRM_WINDOWS
    assert len(per_window) == windows and len(search.paired[id(handle)]) == 2 * windows
    assert per_window[0] == pytest.approx(first.median) and per_window[1] == pytest.approx(second.median)
    assert all(4.8 < w < 4.95 for w in per_window[2:])  # the confirmation windows, 10 / 2.05 ms
    assert first.ci95[0] > second.ci95[1]  # one window's interval misses the other window
    width = pooled.ci95[1] - pooled.ci95[0]
    assert width > 3 * max(first.ci95[1] - first.ci95[0], second.ci95[1] - second.ci95[0])
    assert (
        second.ci95[0] < pooled.ci95[0] <= min(per_window[2:]) and max(per_window[2:]) <= pooled.ci95[1] < first.ci95[1]
    )


def test_a_failed_confirmation_keeps_the_earlier_windows_and_says_why():
    bench = PlantedBench(
        {"threads=1": 5.0}, fail={1: RuntimeError("CUDA error: an illegal memory access was encountered")}
    )
    search = planted_search(bench)
    (remedy,) = remedies("threads=1")
    handle = bench.open(Recipe((remedy,)))
    search.window([handle])
    pooled, per_window = search.confirm(Recipe((remedy,)), handle)
    assert len(per_window) == 1 and len(bench.baseline.rounds) == 2 and 4.9 < pooled.median < 5.1
    assert "illegal memory access" in search.confirm_error


def test_ctrl_c_during_the_confirmation_keeps_the_recipe_on_the_windows_that_finished():
    # threads=1 alone, one confirmation window, then Ctrl-C: no fresh processes, the recipe stands on two windows
    search = planted_search(PlantedBench({"threads=1": 5.0}, fail={2: KeyboardInterrupt()}))
    search.run(remedies("threads=1"))
    assert search.confirm_interrupted and search.recipe.name == "threads=1" and len(search.window_speedups) == 2


def test_a_recipe_its_pooled_windows_do_not_bear_out_is_not_recommended():
    # the single's own window wins; the confirmation windows show nothing: pooled, the lower bound is below 1
    bench = PlantedBench({"threads=1": lambda seen: 1.5 if seen == 0 else 0.95})
    search = planted_search(bench)
    search.run(remedies("threads=1"))
    assert [c.verdict for c in search.done] == ["accepted"]  # the candidate row stays as measured
    assert search.recipe.names == [] and search.recipe_speedup is None and search.recipe_handle is None
    found = search.unconfirmed  # structured: the recipe, its pooled speedup and its windows
    assert (found.name, found.windows) == ("threads=1", 4) and not found.speedup.faster()
    note = found.note()
    assert note.startswith("not recommended: threads=1 pooled over 4 timing windows reads ")
    assert "lower bound" in note  # why: the pooled interval's lower bound (not faster, above)


def test_an_unconfirmed_recipe_names_every_candidate_accepted_best_first():
    """A fresh-user trial: threads=2 accepted at 1.52x, not confirmed, and "recommended: nothing", compile's accepted
    1.13x named nowhere as the next lead. The unconfirmed record lists every accepted candidate, best first; the
    report's line gives each one's own-window speedup; a document without the field reads back and shows no line."""
    from surrobench.report.optimize import recipe_lines
    from surrobench.records import schemas
    from surrobench.results.optimize import DOCUMENTS, ConfigOptimization, OptimizeReport
    from synthetic import config, latency_samples

    bench = PlantedBench({"threads=1": lambda seen: 1.5 if seen == 0 else 0.95, "tf32": 1.2, "threads=1+tf32": 0.5})
    search = planted_search(bench)
    search.run(remedies("tf32", "threads=1"))
    assert search.recipe.names == [] and search.unconfirmed.name == "threads=1"
    assert search.unconfirmed.accepted == ("threads=1", "tf32")  # best first by their own window's median
    entry = ConfigOptimization(config(latency_samples(10.0, 0.01)), tuple(search.done), unconfirmed=search.unconfirmed)
    doc = OptimizeReport("o1", "2026-12-06T00:00:00+00:00", {}, 0.01, 40.0, 2, "b1", None, (entry,)).to_json()
    lines = recipe_lines(doc["configs"][0])
    assert lines[0].startswith("recommended: nothing (the search's recipe did not hold")
    by_name = {c.name: c.speedup for c in search.done}
    lead = f"threads=1 {by_name['threads=1'].median:.2f}x [{by_name['threads=1'].ci95[0]:.2f}, "
    assert lines[1].startswith("leads, accepted in their own window but not confirmed (best first): " + lead)
    assert lines[1].endswith(f", tf32 {by_name['tf32'].median:.2f}x [{by_name['tf32'].ci95[0]:.2f}, "
                             f"{by_name['tf32'].ci95[1]:.2f}]")  # fmt: skip
    del doc["configs"][0]["unconfirmed"]["accepted"]  # stored before the field: still a valid v3 document
    schemas.check(doc, DOCUMENTS)
    assert OptimizeReport.from_json(doc).configs[0].unconfirmed.accepted == ()
    assert not any(line.startswith("leads") for line in recipe_lines(doc["configs"][0]))


def test_infeasible_and_broken_candidates_are_judged_with_their_reason():
    bench = PlantedBench({"tf32": 1.5}, infeasible={"cudagraph": "needs CUDA"}, broken=("channels_last",))
    search = planted_search(bench)
    search.run(remedies("cudagraph", "channels_last", "tf32"))
    by_name = {c.name: c for c in search.done}
    assert by_name["cudagraph"].verdict == "infeasible" and by_name["cudagraph"].reason == "needs CUDA"
    failed = by_name["channels_last"]
    assert failed.verdict == "failed" and failed.error == "RuntimeError: channels_last exploded while building"
    assert search.recipe.name == "tf32" and "cudagraph" not in bench.opened


@pytest.mark.parametrize("device, graph", [("cpu", False), ("cuda", True)])
def test_a_failed_candidate_is_explained_for_the_device_it_ran_on(device, graph):
    class CompileFails(PlantedBench):
        def open(self, recipe):
            if recipe.name == "compile":
                raise RuntimeError("torch._dynamo.exc.Unsupported: x")
            return super().open(recipe)

    bench = CompileFails({"tf32": 1.5})
    bench.device = device
    search = planted_search(bench)
    search.run(remedies("compile", "tf32"))
    (failed,) = [c for c in search.done if c.name == "compile"]
    assert failed.verdict == "failed" and failed.cause == "dynamo_unsupported"
    assert ("CUDA graph" in failed.reason) is graph  # a CPU has no CUDA graph to run it as


def test_a_slow_to_set_up_recipe_reserves_its_fresh_processes_share_of_the_budget():
    # the fresh processes of a recipe cost its setup again: once compile (20 s to set up, cold) is accepted, the
    # search keeps one pair of (1 s + 1 s + the setup a fresh process pays) for them and stops stacking where it
    # would run into that share: a fresh process loads the compile caches, so it pays 0.72 of the cold setup
    reserve = lambda setup_ms: 1.0 + 1.0 + setup_ms / 1000  # noqa: E731  (planted pair estimate)
    clock = PlantedClock()
    bench = _bench(clock=clock, reserve_s=reserve, setup_ms={"compile": 20_000.0})
    search = planted_search(bench, budget_end=25.0)  # the confirmation's 3 windows of 1 s kept too
    search.run(remedies(*ORDER))
    assert search.reserve_setup_ms() == pytest.approx(0.72 * 20_000.0)
    clock.now -= CONFIRM_WINDOWS  # back to the search's end, before its confirmation's windows of 1 s
    assert search.deadline() == pytest.approx(25.0 - CONFIRM_WINDOWS - reserve(14_400.0))  # 5.6 s
    assert clock.now <= search.deadline()  # only the confirmation ran past it
    assert search.not_tried  # stacking was cut to leave the processes their share
    # without the compiled candidates' setups, the same budget holds the whole search
    fast = planted_search(_bench(clock=PlantedClock(), reserve_s=reserve), budget_end=25.0)
    fast.run(remedies(*ORDER))
    fast.clock.now -= CONFIRM_WINDOWS
    assert fast.not_tried == [] and fast.deadline() == pytest.approx(25.0 - CONFIRM_WINDOWS - reserve(1.0))


def test_the_search_keeps_a_quarter_of_the_budget_at_most_for_one_pair_so_the_compiled_stacks_are_tried():
    # DeviceBench's own reserve, on a bench of planted timings: 2 pairs asked for, on CUDA (15 s per process
    # start), calls of 30 ms, a 180 s budget; each window 10 s and the compiled candidates' setup 20 s. One pair
    # of such a recipe is estimated at 51.3 s, past a quarter of the budget (45 s), so the search keeps 45 s and
    # the confirmation's three windows (30 s): both stacks on compile (from 60 and 70 s, 10 s each) end by the
    # deadline, 105 s (with the whole pair reserved it would be 98.7 s, and two pairs would cut them at 60 s)
    from types import SimpleNamespace

    from surrobench.tune.bench import PAIR_SHARE, DeviceBench

    device = SimpleNamespace(
        request=SimpleNamespace(budget_s=180.0, rounds=2, process_pairs=2, rebuildable=True),
        baseline=SimpleNamespace(setup_ms=0.0, rounds=[]),
        cfg=SimpleNamespace(device="cuda"),
        warmup=1,
        iters=10,
        _per_call_ms=lambda variant: 30.0,
    )
    reserve = lambda setup_ms: DeviceBench.process_reserve_s(device, setup_ms)  # noqa: E731
    one_pair = 15.0 + 21 * 0.03 + 15.0 + 20.0 + 21 * 0.03
    assert one_pair > PAIR_SHARE * 180.0 and reserve(20_000.0) == PAIR_SHARE * 180.0
    assert reserve(1_000.0) == pytest.approx(one_pair - 19.0)  # a pair within the quarter is reserved whole
    clock = PlantedClock()
    compiled = ("compile", "compile+tf32", "compile+tf32+channels_last")
    bench = _bench(clock=clock, window_s=10.0, reserve_s=reserve, setup_ms=dict.fromkeys(compiled, 20_000.0))
    search = planted_search(bench, budget_end=180.0)
    search.run(remedies(*ORDER))
    clock.now -= 30.0  # back to the search's end, before its confirmation's windows
    assert search.deadline() == pytest.approx(180.0 - 30.0 - 45.0)
    assert ("compile+tf32", "compile") in _tried(search) and ("compile+tf32+channels_last", "compile+tf32") in _tried(
        search
    )
    assert search.not_tried == [] and search.head_to_head is not None


def test_a_candidate_is_not_started_when_the_longest_one_like_it_would_end_past_the_deadline():
    from surrobench.results.optimize import CandidateResult

    search = planted_search(_bench(clock=PlantedClock()), budget_end=10.0)
    search.done += [
        CandidateResult("compile", "accepted", "", time_s=8.0),
        CandidateResult("tf32", "accepted", "", time_s=1.0),
    ]
    search.clock.now = 5.0
    assert search.spent(Recipe(tuple(remedies("compile", "tf32"))))  # compiles: 5 + 8 > 10
    assert not search.spent(Recipe(tuple(remedies("cudagraph", "tf32"))))  # 5 + 1 <= 10


def test_the_first_compiled_candidate_compiles_cold_and_is_left_out_of_the_estimate_once_there_is_a_second():
    from surrobench.results.optimize import CandidateResult

    search = planted_search(_bench(clock=PlantedClock()), budget_end=100.0)
    search.done += [
        CandidateResult("compile", "rejected_slower", "", time_s=25.0),  # cold: Inductor, Triton, autotuning
        CandidateResult("tf32", "accepted", "", time_s=1.0),
        CandidateResult("compile-reduce-overhead", "rejected_slower", "", time_s=13.0),
        CandidateResult("cudagraph", "accepted", "", time_s=2.0),
        CandidateResult("tf32+cudagraph", "accepted", "", time_s=3.0),
    ]
    stack = Recipe(tuple(remedies("tf32", "compile-reduce-overhead")))  # a new precision compiles warm on CUDA
    assert search.expected_s(stack) == 13.0
    assert search.expected_s(Recipe(tuple(remedies("tf32", "channels_last")))) == 3.0  # not compiled: the longest
    search.done.pop(2)
    assert search.expected_s(stack) == pytest.approx(0.72 * 25.0)  # the only compiled one: a warm share of it


def test_a_compiled_stack_at_a_thread_count_none_compiled_at_is_estimated_as_a_first_compilation():
    """A 2-core EPYC: compile took 5.6 s (warm caches), compile+threads=2 then 49.1 s (a cold recompilation) and
    ran 25 s past a 40 s budget, its estimate 0.72 x 5.6 s; with 16 s left it is not started now."""
    from surrobench.results.optimize import CandidateResult
    from surrobench.tune.trials import FIRST_COMPILE_S

    search = planted_search(_bench(clock=PlantedClock()), budget_end=40.0, budget_s=40.0)
    search.done += [CandidateResult("compile", "accepted", "", time_s=5.6, setup_s=3.2)]
    search.clock.now = 24.0
    stack, warm = Recipe(tuple(remedies("compile", "threads=4"))), Recipe(tuple(remedies("compile-reduce-overhead")))
    assert search.recompiles(stack) and not search.recompiles(warm)
    assert search.expected_s(stack) == FIRST_COMPILE_S["cuda"][0] and search.expected_s(warm) == pytest.approx(
        0.72 * 5.6
    )
    assert search.spent(stack) and not search.spent(warm)
    search.done.append(CandidateResult("compile+threads=4", "rejected_slower", "", time_s=30.0, setup_s=28.0))
    assert not search.recompiles(stack) and search.expected_s(stack) == 30.0  # that count compiled: as before


def test_a_compiled_stack_at_a_precision_none_compiled_at_is_estimated_as_a_first_compilation():
    """The 2-core EPYC's hash-grid field: compile set up in 2.19 s, compile+bf16 then in 6.46 s, 2.95x (autocast, a
    global state Dynamo guards on, as TF32 and the thread count are): each precision compiles cold once."""
    from surrobench.results.optimize import CandidateResult
    from surrobench.tune.trials import FIRST_COMPILE_S

    search = planted_search(_bench(clock=PlantedClock()), budget_end=40.0, budget_s=40.0)
    search.bench.device = "cpu"
    search.done += [CandidateResult("compile", "accepted", "", time_s=4.0, setup_s=2.19)]
    bf16, tf32 = Recipe(tuple(remedies("compile", "bf16"))), Recipe(tuple(remedies("tf32", "compile")))
    assert search.recompiles(bf16) and search.recompiles(tf32)
    assert search.expected_s(bf16) == search.expected_s(tf32) == FIRST_COMPILE_S["cpu"][0]
    search.clock.now = 24.0  # 16 s left: not started, where the warm share (0.72 x 4 s) would have been
    assert search.spent(bf16)
    search.done.append(CandidateResult("compile+bf16", "rejected_not_faster", "", time_s=9.0, setup_s=6.46))
    assert not search.recompiles(Recipe(tuple(remedies("bf16", "compile-reduce-overhead"))))  # bf16 compiled
    assert search.recompiles(Recipe(tuple(remedies("compile", "bf16", "threads=4"))))  # a new pair of both
    search.bench.device = "cuda"  # precision stacks compiled warm there (docs/benchmarks/h200-optimize.md)
    assert not search.recompiles(bf16) and search.recompiles(Recipe(tuple(remedies("compile", "threads=4"))))


def test_a_compiled_recipe_reserves_the_setup_a_fresh_process_pays_with_the_compile_caches_warm():
    from surrobench.results.optimize import CandidateResult

    search = planted_search(_bench(clock=PlantedClock()))
    search.done += [
        CandidateResult("tf32", "accepted", "", setup_s=0.1),
        CandidateResult("compile", "accepted", "", setup_s=17.7),  # cold: the first compiled candidate
    ]
    assert search.reserve_setup_ms() == pytest.approx(0.72 * 17_700.0)
    # the same count times the recipe's own pairs once the search ends (compile alone: its cold setup, 0.72)
    assert search.fresh_setup_ms("compile", 17_700.0) == pytest.approx(0.72 * 17_700.0)
    assert search.fresh_setup_ms("tf32", 100.0) == 100.0
    search.done.append(CandidateResult("compile-reduce-overhead", "rejected_slower", "", setup_s=5.0))
    assert search.reserve_setup_ms() == pytest.approx(5_000.0)  # warm: what loading the caches costs
    search.done += [  # one that reused this process's Dynamo entries, one that compiled its own graph warm
        CandidateResult("compile-reduce-overhead+cudnn_benchmark", "rejected_slower", "", setup_s=0.1),
        CandidateResult("compile-reduce-overhead+tf32", "rejected_slower", "", setup_s=6.0),
    ]
    assert search.reserve_setup_ms() == pytest.approx(5_000.0)  # the median of 5, 0.1 and 6 s
    search.done[1] = CandidateResult("compile", "rejected_slower", "", setup_s=17.7)
    assert search.reserve_setup_ms() == pytest.approx(100.0)  # no compiled candidate accepted: tf32's own


def test_a_swap_faster_alone_than_an_add_is_tried_before_it():
    # the U-Net's order at 256² batch 8: tf32 first; cudagraph is stacked, then compile (0.54x alone) is tried
    # in its place before channels_last (0.44x alone) is added, so a budget that runs out leaves the slowest out
    bench = PlantedBench(
        {"tf32": 1.8, "cudagraph": 1.03, "compile": 0.54, "channels_last": 0.44, "tf32+cudagraph": 1.9}
        | {"tf32+compile": 3.6, "tf32+compile+channels_last": 3.0}
    )
    search = planted_search(bench)
    search.run(remedies("cudagraph", "tf32", "channels_last", "compile"))
    tried = [name for name, _ in _tried(search)]
    assert tried == ["tf32+cudagraph", "tf32+compile", "tf32+compile+channels_last"]
    assert search.recipe.name == "tf32+compile"


def test_a_stack_the_budget_left_out_is_named_once():
    # windows of 1 s: the singles end at 4 s and tf32+cudagraph at 5 s, the deadline is 5.5 s; the swap to
    # compile is left out in the first pass over the singles and met again in the second, and named once
    bench = PlantedBench(
        {"tf32": 1.8, "cudagraph": 1.03, "compile": 0.54, "channels_last": 0.44, "tf32+cudagraph": 1.9},
        clock=PlantedClock(),
    )
    search = planted_search(bench, budget_end=5.5 + CONFIRM_WINDOWS)
    search.run(remedies("cudagraph", "tf32", "channels_last", "compile"))
    assert search.recipe.name == "tf32+cudagraph"
    assert [name for name, _ in search.not_tried] == ["tf32+compile", "tf32+cudagraph+channels_last"]


def test_only_takes_a_remedy_id_for_each_of_its_candidates():
    # diagnose names the remedy id (`remedies threads`); a fresh-user trial's `--only threads,bf16` was refused
    from surrobench.tune.request import remedy_names

    names = remedy_names("threads,bf16", "cpu")
    assert names[-1] == "bf16" and {n for n in names if n.startswith("threads=")} == set(names[:-1]) and len(names) >= 2
    assert remedy_names("threads=1", "cpu") == ("threads=1",)


def test_no_time_is_kept_for_the_recipe_before_a_candidate_is_accepted():
    # a CPU config of a fresh-user trial: nothing was faster, yet the search stopped early to keep a pair of fresh
    # processes (5 s) and the confirmation (3 windows of 1 s) out of a 6 s budget, then had no recipe to run them on
    slower = {"tf32": 0.9, "channels_last": 0.7, "cudagraph": 1.0, "compile": 0.95}
    search = planted_search(PlantedBench(slower, clock=PlantedClock(), reserve_s=lambda ms: 5.0), budget_end=6.0)
    search.run(remedies(*slower))
    assert search.not_tried == [] and search.recipe.names == [] and search.deadline() == 6.0
    # once one is accepted there is a recipe: its pair and confirmation are kept, and the search stops for them
    # (tf32 accepted at 1 s: 3 windows and a 5 s pair end by 9 s; compile, estimated at 0 s before one ran, left out)
    faster = {"tf32": 1.5, "channels_last": 0.7, "cudagraph": 1.0}
    search = planted_search(PlantedBench(faster, clock=PlantedClock(), reserve_s=lambda ms: 5.0), budget_end=9.0)
    search.run(remedies(*faster))
    assert [n for n, _ in search.not_tried] == ["channels_last", "cudagraph"]
    kept = "budget of 9 s: the 8 s kept for the recipe's confirmation windows and fresh processes"
    assert {r for _, r in search.not_tried} == {kept} and search.recipe.names == ["tf32"]


def test_no_time_is_kept_for_fresh_processes_that_would_not_fit_after_the_confirmation():
    # a CPU trial: the search kept 25 s of a 40 s budget for the confirmation's windows and a pair of fresh processes,
    # left compile untried, and the pair was then skipped as not fitting; here tf32 is accepted at 1 s of a 6 s
    # budget: 3 windows of 1 s and a 5 s pair would end at 9 s, so only the windows are kept and the singles run
    faster = {"tf32": 1.5, "channels_last": 0.7, "cudagraph": 1.0, "compile": 0.95}
    search = planted_search(PlantedBench(faster, clock=PlantedClock(), reserve_s=lambda ms: 5.0), budget_end=6.0)
    search.run(remedies(*faster))
    assert [c.name for c in search.done][:4] == list(faster) and search.recipe.names == ["tf32"]
    kept = "budget of 6 s: the 3 s kept for the recipe's confirmation windows"  # the same on every line
    assert search.not_tried and {r for _, r in search.not_tried} == {kept} and search.reserve_s() == (3.0, 0.0)


def test_the_first_fresh_pair_runs_on_the_time_the_search_kept_for_it(monkeypatch):
    # a CPU recipe at 20 ms a call: one pair (3 s start, 10 ms setup and 370 calls a side) is 20.8 s, past a
    # quarter of a 40 s budget, so the search keeps 10 s; that pair, judged by its whole estimate, was then skipped
    from types import SimpleNamespace

    from surrobench.tune import bench as bench_module, fresh
    from surrobench.tune.bench import PAIR_SHARE, DeviceBench

    monkeypatch.setattr(fresh, "time", SimpleNamespace(monotonic=lambda: 100.0))
    monkeypatch.setattr(bench_module, "process_windows", lambda *args, budget, **kw: budget)
    device = SimpleNamespace(
        request=SimpleNamespace(budget_s=40.0, rounds=6, process_pairs=2, rebuildable=True),
        baseline=SimpleNamespace(setup_ms=10.0, rounds=[]),
        cfg=SimpleNamespace(device="cpu"),
        _per_call_ms=lambda variant: 20.0,
        on_phase=lambda text: None,
        warmup=10,
        iters=60,
        db=None,
    )
    device.process_reserve_s = lambda setup_ms, handle=None: DeviceBench.process_reserve_s(device, setup_ms, handle)
    kept = device.process_reserve_s(10.0)
    assert kept == PAIR_SHARE * 40.0 < 2 * (3.0 + 0.01 + 370 * 0.02)
    device.budget_end = 100.0 + kept  # the search and its confirmation ended on time: what was kept is left
    recipe = SimpleNamespace(name="bf16", apply=lambda cfg: cfg)
    budget = DeviceBench.process_windows(device, recipe, SimpleNamespace(), 10.0)
    assert budget.fits()
    budget.pair_s = 20.8  # a further pair, by the time the first took: only when the rest of the budget fits it
    assert not budget.fits()


def test_break_even_calls_only_for_a_candidate_faster_by_the_rule():
    """A candidate not faster (1.0x, 0.7x) never pays its setup back: no break-even, whatever its medians say."""
    search = planted_search(_bench(speedups={"tf32": 1.0}))
    search.run(remedies(*ORDER))
    calls = {c.name: c.break_even_calls for c in search.done if c.speedup is not None}
    verdicts = {c.name: c.verdict for c in search.done}
    assert verdicts["tf32"] == "rejected_not_faster" and verdicts["channels_last"] == "rejected_slower"
    assert {n for n, v in calls.items() if v is not None} == {n for n in calls if verdicts[n] == "accepted"}
    assert calls["cudagraph"] is not None


@pytest.mark.parametrize("free", [None, 4, 1])
def test_a_thread_count_above_the_free_cores_is_tried_last_and_its_window_cut_at_the_deadline(free):
    """A thread count above the cores other processes left free spins on cores they hold: 2 threads on a loaded
    2-core host took 36-48 s of a 40 s budget, before compile could run. It goes after the other singles; at 4 free
    cores it keeps its place. Either way its window (each of its rounds here 20 times the others') ends before a
    round that would end past the deadline, so compile runs and the search ends within one of its rounds."""
    clock = PlantedClock()
    bench = PlantedBench({"compile": 1.3, "threads=4": 0.5}, rounds=6, clock=clock, slow={"threads=4": 20.0})
    bench.cores = free
    search = planted_search(bench, budget_end=6.0)
    search.singles(remedies("threads=4", "compile"))
    crowded = free == 1
    assert bench.opened == (["compile", "threads=4"] if crowded else ["threads=4", "compile"])
    assert search.not_tried == []  # its whole 20 s window once left compile untried ("budget of 40 s spent")
    (threads,) = [c for c in search.done if c.name == "threads=4"]
    assert ("tried last: 4 threads for 1 free core(s)" in threads.reason) is crowded
    assert threads.rounds == 1 and threads.not_faster() == "inconclusive"  # cut at the deadline, before the rule's 2
    assert len(search.paired[id(search.timed["threads=4"])]) == 1
    assert clock.now < 6.0 + 20.0 / 6  # the budget and one of its rounds (3.3 s) at most


def test_a_candidate_150x_slower_in_one_round_and_the_search_ends_within_the_budget_and_one_of_its_rounds():
    """A trial's GRU at a 60 s budget: threads=2 at 1 free core ran 1596 ms a call against 10 ms, 41 s a round, and
    its two rounds (the fewest a cut window kept) ended the search 40 s past the budget. A round starts only when it
    would end by the deadline, as long as the window's last: its window keeps one round, slower on it but not judged
    (the rule needs :data:`~surrobench.records.paired.MIN_ROUNDS`): inconclusive."""
    clock = PlantedClock()
    speedups = {"bf16": 0.38, "compile": 0.69, "threads=4": 1 / 150}
    bench = PlantedBench(speedups, rounds=6, clock=clock, slow={"threads=4": 246.0}, free_cores=1)
    search = planted_search(bench, budget_end=60.0, budget_s=60.0)
    search.run(remedies("threads=4", "bf16", "compile"))
    (threads,) = [c for c in search.done if c.name == "threads=4"]
    assert threads.verdict == "rejected_not_faster" and threads.speedup.slower()
    assert threads.rounds == 1 and threads.not_faster() == "inconclusive"
    assert clock.now <= 60.0 + 246.0 / 6  # the budget and one round of the slowest candidate at most
    assert clock.now == pytest.approx(2.0 + 41.0)  # bf16 and compile 1 s each, then one 41 s round


def test_the_confirmation_starts_a_window_or_round_only_when_it_would_end_within_the_budget():
    """A trial's spectral-element net at 60 s: threads=2, accepted at 1.13x, turned 100x slower once the other core
    was taken, and its three confirmation windows ran 65 s past the budget. They are cut as candidates' windows are,
    at the budget's end: a round more, or a window more, starts only when one as long as the last would end by it."""
    clock = PlantedClock()
    bench = PlantedBench({"tf32": 1.5}, rounds=6, clock=clock)

    class SlowOnceConfirming(dict):  # the recipe's windows after its own take 40 s (6.7 s a round)
        def get(self, name, default):
            return 40.0 if name == "tf32" and len(bench.windows) >= 1 else default

    bench.slow = SlowOnceConfirming()
    search = planted_search(bench, budget_end=20.0, budget_s=20.0)
    search.run(remedies("tf32"))
    assert bench.windows == [["tf32"], ["tf32"]]  # the second confirmation window never started
    assert len(search.paired[id(search.recipe_handle)]) == 6 + 2  # its own window, then 2 rounds of the first
    assert search.recipe.names == ["tf32"] and len(search.window_speedups) == 2
    assert 1.0 + 2 * 40.0 / 6 == pytest.approx(clock.now) and clock.now <= 20.0


@pytest.mark.parametrize("speedup", [0.2, 1.0])
def test_a_thread_count_crowded_by_its_turn_goes_last_and_its_window_ends_once_slower(speedup):
    """Room when the search began, none by its turn (a trial's threads=2 at P95 337 ms took 35.6 s of a 40 s
    budget before compile): it goes after the remedies behind it, and with no deadline near its window ends once its
    rounds so far are slower by the paired rule (2 of 6); one not slower keeps every round."""
    clock = PlantedClock()
    speedups = {"compile": 1.3, "threads=4": speedup, "tf32": 1.0}
    bench = PlantedBench(speedups, rounds=6, clock=clock, slow={"threads=4": 20.0})
    bench.free_cores = lambda: 8 if clock.now == 0 else 1  # the load came once compile had run
    search = planted_search(bench)
    search.singles(remedies("compile", "threads=4", "tf32"))
    assert bench.opened == ["compile", "tf32", "threads=4"]
    (threads,) = [c for c in search.done if c.name == "threads=4"]
    slower = speedup < 1.0
    assert threads.verdict == ("rejected_slower" if slower else "rejected_not_faster")
    assert len(search.paired[id(search.timed["threads=4"])]) == (2 if slower else 6)


def test_a_thread_count_tried_last_says_so_when_the_budget_leaves_it_out():
    bench = PlantedBench({"compile": 1.3}, clock=PlantedClock(), free_cores=1)
    search = planted_search(bench, budget_end=1.5)  # compile's window takes 1 s; half the budget is kept to confirm it
    search.singles(remedies("threads=4", "compile"))
    assert bench.opened == ["compile"] and search.not_tried[0][0] == "threads=4"
    assert search.not_tried[0][1].startswith("tried last: 4 threads for 1 free core(s): budget of 1.5 s")


def test_a_thread_count_crowded_at_its_turn_keeps_that_reason_when_the_free_cores_move_during_the_search():
    """The host's free cores are read once per remedy, at its turn: one crowded then is tried last and cut as such,
    though a later reading (the load gone) would have found room."""
    bench = PlantedBench({"compile": 1.3, "threads=4": 0.5}, rounds=6, clock=PlantedClock(), slow={"threads=4": 20.0})
    readings = iter([1])  # crowded at its turn; any later reading finds 8 free cores
    bench.free_cores = lambda: next(readings, 8)
    search = planted_search(bench, budget_end=6.0)
    search.singles(remedies("threads=4", "compile"))
    assert bench.opened == ["compile", "threads=4"]
    (threads,) = [c for c in search.done if c.name == "threads=4"]
    assert "tried last" in threads.reason and "for 1 free core(s)" in threads.reason  # as read when sorted


def test_a_slow_candidates_rounds_do_not_size_the_confirmations_reserve():
    # a trial's particle-in-cell model: after compile was accepted, threads=2 ran one 27.7 s round at 0.01x, and
    # the reserve for the confirmation, sized by that round, kept 499 s of a 60 s budget: the stacks went untried.
    # The confirmation times the baseline and a recipe no slower than it: its rounds are sized by the baseline's
    clock = PlantedClock()
    bench = _bench(clock=clock, slow={"threads=4": 30.0})
    bench.speedups.update({"threads=4": 0.05})
    search = planted_search(bench, budget_end=100.0)  # its windows' 15 s rounds would keep 90 s
    search.run(remedies("tf32", "threads=4", "channels_last"))
    assert "channels_last" in [c.name for c in search.done] and not search.not_tried
    assert search.reserve_s()[0] == pytest.approx(CONFIRM_WINDOWS * bench.window_s)


def test_a_build_still_running_at_the_budgets_end_is_cut_there():
    """A GPU trial's Mamba-like scan (a Python loop of 128 steps): torch.compile of its forward ran past diagnose's
    150 s cap and optimize's 40 s budget by 50 s. A build is cut at the budget's end, a failure that says so."""
    import time

    class WallClock(PlantedClock):
        def __call__(self) -> float:
            return time.monotonic()

    class SlowCompile(PlantedBench):
        def open(self, recipe):
            if recipe.name == "compile":
                time.sleep(30)  # the alarm interrupts the sleep (PEP 475: the handler's exception propagates)
            return super().open(recipe)

    bench = SlowCompile({"tf32": 1.5}, clock=WallClock())
    began = time.monotonic()
    search = planted_search(bench, budget_end=began + 0.5, budget_s=0.5)
    search.run(remedies("compile"))
    (compiled,) = search.done
    assert compiled.verdict == "failed" and "the budget's end" in compiled.error
    assert time.monotonic() - began < 5


def test_the_confirmations_reserve_is_at_most_half_the_budget_and_a_confirmation_that_does_not_fit_runs_fewer_rounds():
    # a fresh-user CPU trial on a busy host: the baseline's 3.9 s rounds sized the confirmation's reserve at 139 s of a
    # 60 s budget, and once threads=1 was accepted nothing more was tried ("the 139 s kept for the recipe's
    # confirmation windows"). Here the baseline's rounds would keep 120 s of 20: half the budget is kept instead
    cpu = {"threads=1": 1.5, "channels_last": 0.7, "bf16": 1.3, "threads=1+bf16": 1.8}
    bench = PlantedBench(cpu, clock=PlantedClock())
    bench.device = "cpu"
    bench.round_s = lambda: 10.0  # a slow baseline: 3 windows of 2 rounds, each round twice the baseline's
    search = planted_search(bench, budget_end=20.0)
    search.run(remedies("threads=1", "channels_last", "bf16"))
    assert search.reserve_s() == (10.0, 0.0) and not search.not_tried
    assert [c.name for c in search.done][:4] == ["threads=1", "channels_last", "bf16", "threads=1+bf16"]
    assert search.recipe.name == "threads=1+bf16" and search.confirm_rounds == CONFIRM_WINDOWS * bench.rounds
    # windows of 8 s: threads=1, accepted at 8 s, leaves 2 s to its deadline (10 s kept); its confirmation runs the
    # rounds that end within the budget, 3 of 6, and says how many
    slow = PlantedBench(cpu, clock=PlantedClock(), window_s=8.0)
    slow.device = "cpu"
    search = planted_search(slow, budget_end=20.0)
    search.run(remedies("threads=1", "channels_last"))
    assert search.reserve_s()[0] == 10.0 and [n for n, _ in search.not_tried] == ["channels_last"]
    assert search.recipe.name == "threads=1" and search.confirm_rounds == 3
