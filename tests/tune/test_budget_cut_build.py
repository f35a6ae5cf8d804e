"""A remedy whose build the budget's end cut was not measured: never ``failed``, never advised against. A fresh-user
trial's diagnose (``--measure-s 90``) read torch.compile "not advised (compile: failed (... ConfigTimeout: over the
89 s limit (the budget's end)))"; optimize then measured it 2.76x faster."""

from __future__ import annotations

import time

from planted_search import PlantedBench, PlantedClock
from synthetic import optimize_entry

from surrobench.execution.deadline import ConfigTimeout
from surrobench.execution.failures import BUDGET_END
from surrobench.records.findings import UNMEASURED_WORDS, Clause, Finding
from surrobench.results.measured_remedies import attach_measured, cited_measurements
from surrobench.tune.advice import measure_recipes, recipes_to_measure
from surrobench.tune.trials import Trials

LABEL = "weno 1x4x256 b1 fp32 eager"
CUT = "ConfigTimeout: over the 89 s limit (the budget's end)"  # as the trial's diagnose stored it


class _WallClock(PlantedClock):
    def __call__(self) -> float:
        return time.monotonic()


class _SlowCompile(PlantedBench):
    def open(self, recipe):
        if recipe.name == "compile":
            time.sleep(30)  # the budget's alarm interrupts the sleep (PEP 475: the handler's exception propagates)
        return super().open(recipe)


def _finding() -> Finding:
    fuse = Clause("fuse the chain of elementwise ops: torch.compile", ("compile",))
    return Finding("memory_bound", "low", "elementwise", (), (fuse,), config=LABEL)


def test_a_build_cut_by_the_budget_is_not_measured_and_its_remedy_still_advised():
    clock = _WallClock()
    bench = _SlowCompile({"compile": 2.5}, clock=clock)
    stored = {frozenset({"compile"}): {"setup_s": 0.01, "optimize_id": "o1"}}  # no first compilation to wait for
    trials = Trials(bench, bench.rounds, budget_s=0.5, budget_end=clock() + 0.5, clock=clock, stored=stored)
    (compiled,) = measure_recipes(trials, recipes_to_measure([_finding()], "cuda"), 1e-2)
    assert compiled.verdict == "not-measured" and compiled.speedup is None
    assert compiled.text() == f"compile: {UNMEASURED_WORDS['not-measured']} ({compiled.reason})"
    (advised,) = attach_measured([_finding()], {LABEL: (compiled,)})
    assert advised.remedies == ("compile",) and advised.measured == (compiled,)  # not advised against
    assert not advised.none_faster and advised.gain["kind"] == "estimate"


def test_a_cited_optimization_whose_build_the_budget_cut_is_not_measured_either():
    failed = {"name": "compile", "verdict": "failed", "reason": "compile failed: ran out of the budget", "error": CUT}
    failed |= {"cause": BUDGET_END, "time_s": 89.0}  # the cause as the search that cut it stored it
    (cited,) = cited_measurements(optimize_entry({"candidates": [failed], "optimize_id": "o7"}))
    assert (cited.verdict, cited.cited) == ("not-measured", "o7")
    (advised,) = attach_measured([_finding()], {}, {LABEL: optimize_entry({"candidates": [failed]})})
    assert advised.remedies == ("compile",)


class _LostCut(PlantedBench):
    """A compilation the budget's end cuts whose error no longer says so (a compile worker's own, raised after)."""

    def open(self, recipe):
        cut = False
        try:
            time.sleep(30)
        except ConfigTimeout:
            cut = True
        if cut:  # raised outside the handler: no ConfigTimeout in its chain, nothing of the budget in its text
            raise RuntimeError("compile worker exited unexpectedly")
        return super().open(recipe)


class _SaysBudget(PlantedBench):
    """A model whose own error quotes the budget's cut, raised at once: no budget cut it."""

    def open(self, recipe):
        raise RuntimeError(f"the model replayed a log line: {CUT}")


def _measured(bench, clock, budget_s: float):
    stored = {frozenset({"compile"}): {"setup_s": 0.01, "optimize_id": "o1"}}  # no first compilation to wait for
    end = clock() + budget_s
    trials = Trials(bench, bench.rounds, budget_s=budget_s, budget_end=end, clock=clock, stored=stored)
    (compiled,) = measure_recipes(trials, recipes_to_measure([_finding()], "cuda"), 1e-2)
    return trials.done[-1], compiled


def test_the_cut_is_told_by_the_search_that_cut_it_not_read_from_the_error_text():
    clock = _WallClock()
    cut, measured = _measured(_LostCut({"compile": 2.5}, clock=clock), clock, 0.5)
    assert (cut.verdict, cut.cause, measured.verdict) == ("failed", BUDGET_END, "not-measured")
    said, measured = _measured(_SaysBudget({"compile": 2.5}, clock=clock), clock, 60.0)  # an error quoting a cut
    assert (said.verdict, measured.verdict) == ("failed", "failed") and said.cause != BUDGET_END
