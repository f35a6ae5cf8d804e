"""A candidate whose window the budget cut before the paired rule's least rounds
(:data:`surrobench.records.paired.MIN_ROUNDS`) is not judged on the rounds it got, faster or slower: it is
inconclusive, and its reason and its measured verdict say so."""

from __future__ import annotations

from dataclasses import replace

from planted_search import PlantedBench, PlantedClock, planted_search, remedies

from surrobench.records.paired import MIN_ROUNDS
from surrobench.results.measured_remedies import measured_remedy


def _tf32(budget_end: float, speedup: float = 1.5):
    """tf32 1.5x faster (``speedup``), 6 rounds of 2 s a window: the budget's end lets its window run the rounds that
    end before it."""
    bench = PlantedBench({"tf32": speedup}, rounds=6, clock=PlantedClock(), window_s=12.0)
    search = planted_search(bench, budget_end=budget_end)
    search.singles(remedies("tf32"))
    (tf32,) = search.done
    return tf32


def test_a_candidate_faster_in_one_round_before_the_budgets_end_is_inconclusive():
    tf32 = _tf32(budget_end=3.0)  # a round of 2 s (baseline and candidate): the second would end at 4 s
    assert tf32.rounds == 1 < MIN_ROUNDS and tf32.speedup.faster()  # faster on its one round, by the rule's numbers
    assert tf32.verdict == "rejected_not_faster" and tf32.break_even_calls is None
    assert tf32.not_faster() == "inconclusive" and "1 of 6 rounds before the budget's end" in tf32.reason
    assert measured_remedy(tf32, 0.01).verdict == "inconclusive"  # diagnose's reading of it


def test_a_candidate_slower_in_one_round_is_inconclusive_too():
    tf32 = _tf32(budget_end=3.0, speedup=0.5)  # 2x slower: the rule needs its least rounds either way
    assert tf32.rounds == 1 < MIN_ROUNDS and tf32.speedup.slower()  # slower on its one round, by the rule's numbers
    assert tf32.verdict == "rejected_not_faster" and tf32.not_faster() == "inconclusive"
    assert tf32.reason.startswith("inconclusive: 1 of 6 rounds before the budget's end")
    assert measured_remedy(tf32, 0.01).verdict == "inconclusive"


def test_the_rules_least_rounds_judge_it():
    tf32 = _tf32(budget_end=5.0)
    assert tf32.rounds == MIN_ROUNDS and tf32.verdict == "accepted" and tf32.not_faster() is None
    slower = _tf32(budget_end=5.0, speedup=0.5)
    assert slower.rounds == MIN_ROUNDS and slower.verdict == "rejected_slower"


def test_one_predicate_reads_too_few_rounds_for_the_table_and_for_diagnose():
    # a one-round rejected_slower stored before the rule needed its least rounds either way: diagnose reads it as
    # the table's rule does, inconclusive; one stored before rounds were kept (None) is judged as stored
    stored = replace(_tf32(budget_end=3.0, speedup=0.5), verdict="rejected_slower")
    assert stored.too_few_rounds() and measured_remedy(stored, 0.01).verdict == "inconclusive"
    older = replace(stored, rounds=None)
    assert not older.too_few_rounds() and measured_remedy(older, 0.01).verdict == "slower"
