"""A candidate the paired rule reads ``inconclusive`` after its window is timed in one window more while the budget
fits :data:`surrobench.records.paired.MIN_ROUNDS` rounds (:meth:`surrobench.tune.trials.Trials.timed_window`: one), optimize's
and diagnose's alike, and judged on the rounds of both; never one found slower, nor one crowded."""

from __future__ import annotations

from planted_search import PlantedBench, PlantedClock, planted_search, remedies

from surrobench.execution.remedies import Recipe
from surrobench.records.paired import PairedSamples, Speedup
from surrobench.tune.advice import measure_recipes
from surrobench.tune.trials import Trials

ROUNDS = 6


class BusyFirstWindow(PlantedBench):
    """As :class:`PlantedBench`, 6 rounds a window, every handle opened kept (:attr:`handles`); ``busy``'s rounds in
    its first window: every third three times as slow (a host busy in bursts), those of its later windows as
    planted."""

    def __init__(self, speedups, busy: str = "tf32", **kw) -> None:
        super().__init__(speedups, rounds=ROUNDS, **kw)
        self.busy = busy
        self.handles = []

    def open(self, recipe):
        handle = super().open(recipe)
        self.handles.append(handle)
        return handle

    def _round(self, handle) -> tuple[float, ...]:
        ms = super()._round(handle)
        burst = handle.name == self.busy and not self._seen.get(id(handle)) and len(handle.rounds) % 3 == 2
        return tuple(3.0 * v for v in ms) if burst else ms

    def first_window(self) -> Speedup:
        """The paired rule's reading of the first candidate's first window."""
        rounds = self.handles[0].samples_ms()[:ROUNDS]
        return PairedSamples.interleaved(self.baseline.samples_ms()[:ROUNDS], rounds).speedup()


def test_an_inconclusive_window_is_extended_and_the_rounds_of_both_decide():
    bench = BusyFirstWindow({"tf32": 1.5})
    search = planted_search(bench)
    search.singles(remedies("tf32"))
    (tf32,) = search.done
    assert bench.first_window().verdict() == "inconclusive"  # the planted burst: one window does not decide
    assert bench.windows == [["tf32"]] * 2 and tf32.rounds == 2 * ROUNDS
    assert tf32.verdict == "accepted" and tf32.speedup.faster() and tf32.break_even_calls is not None
    assert bench.first_window().text() in tf32.reason  # the reason keeps what the first window read
    # the pairing: each window's rounds kept with the baseline rounds timed with them
    handle = bench.handles[0]
    assert [w for _, w in search.paired[id(handle)]] == [0] * ROUNDS + [ROUNDS] * ROUNDS


def test_diagnose_measures_the_extended_window_too():
    bench = BusyFirstWindow({"tf32": 1.5})
    trials = Trials(bench, bench.rounds, clock=PlantedClock(), bounded=True)
    (measured,) = measure_recipes(trials, [Recipe(tuple(remedies("tf32")))], 1e-2)
    assert measured.verdict == "faster" and len(bench.windows) == 2


def test_without_the_budget_for_two_rounds_more_it_stays_inconclusive_and_says_why():
    # a round of 1 s: the first window ends at 6 s, two rounds more would end at 8 s, past the budget's end (7 s)
    clock = PlantedClock()
    bench = BusyFirstWindow({"tf32": 1.5}, clock=clock, window_s=float(ROUNDS))
    search = planted_search(bench, budget_end=7.0)
    search.singles(remedies("tf32"))
    (tf32,) = search.done
    assert bench.windows == [["tf32"]] and tf32.rounds == ROUNDS
    assert tf32.verdict == "rejected_not_faster" and tf32.not_faster() == "inconclusive"
    assert "no window more" in tf32.reason


def test_a_candidate_found_slower_is_not_extended():
    # slower in its first window, though a later one would read it faster
    bench = BusyFirstWindow({"tf32": lambda windows_before: 0.6 if windows_before == 0 else 1.5})
    search = planted_search(bench)
    search.singles(remedies("tf32"))
    (tf32,) = search.done
    assert tf32.verdict == "rejected_slower" and bench.windows == [["tf32"]] and tf32.rounds == ROUNDS


def test_a_crowded_candidate_is_not_extended():
    bench = BusyFirstWindow({"threads=4": 1.5}, busy="threads=4", free_cores=1)
    search = planted_search(bench)
    search.singles(remedies("threads=4"))
    (threads,) = search.done
    assert bench.first_window().verdict() == "inconclusive"
    assert bench.windows == [["threads=4"]] and threads.rounds == ROUNDS and threads.verdict == "rejected_not_faster"


def test_a_stack_is_extended_on_its_gain_over_the_recipe_it_is_stacked_on():
    bench = BusyFirstWindow({"tf32": 1.5, "tf32+cudagraph": 3.0}, busy="tf32+cudagraph")
    search = planted_search(bench)
    tf32, cudagraph = remedies("tf32", "cudagraph")
    current = bench.open(Recipe((tf32,)))
    stack, _ = search.try_recipe(Recipe((tf32, cudagraph)), current, "tf32")
    first = PairedSamples.interleaved(current.samples_ms()[:ROUNDS], bench.handles[1].samples_ms()[:ROUNDS])
    assert first.speedup().verdict() == "inconclusive"  # its first window over tf32
    assert bench.windows == [["tf32", "tf32+cudagraph"]] * 2 and stack.rounds == 2 * ROUNDS
    assert stack.verdict == "accepted" and stack.gain.faster() and stack.stacked_on == "tf32"


def test_an_inconclusive_candidate_with_no_gain_in_its_estimate_is_not_extended():
    # no effect planted: the burst leaves it inconclusive, its estimate within the margin (no gain to confirm)
    bench = BusyFirstWindow({"tf32": 1.0})
    search = planted_search(bench)
    search.singles(remedies("tf32"))
    (tf32,) = search.done
    first = bench.first_window()
    assert first.verdict() == "inconclusive" and first.median <= 1.0 + first.margin()
    assert bench.windows == [["tf32"]] and tf32.rounds == ROUNDS
