"""Comparing multi-rank runs: rows match by their place (rank r of N, the step, one device)."""

from __future__ import annotations

from synthetic import config, latency_samples, multi_rank_rows, run

from surrobench.report.comparison import comparison_columns, comparison_rows
from surrobench.results.compare import compare_runs
from surrobench.records.run import placement


def _multi(rank1_ms: float):
    return multi_rank_rows(
        latency_samples(2.0, 0.01, seed=1),
        [latency_samples(2.2, 0.01, seed=2), latency_samples(rank1_ms, 0.01, seed=3)],
        samples_per_step=2,
    )


def test_each_rank_is_compared_with_the_same_rank():
    cmp = compare_runs(run("base", _multi(2.2)), run("new", _multi(3.0)))
    pairs = [(placement(c.base).label(), placement(c.new).label(), c.verdict) for c in cmp.configs]
    assert pairs == [
        ("ref 1", "ref 1", "unchanged"),
        ("rank 0/2", "rank 0/2", "unchanged"),
        ("rank 1/2", "rank 1/2", "regressed"),
        ("step 2", "step 2", "regressed"),
    ]
    assert comparison_columns(cmp)[0] == "ranks" and comparison_rows(cmp)[2]["ranks"] == "rank 1/2"


def test_an_ordinary_run_matches_the_one_device_reference():
    ordinary = run("one", [config(latency_samples(2.0, 0.01, seed=1))])
    cmp = compare_runs(ordinary, run("multi", _multi(2.2)))
    (pair,) = cmp.configs
    assert placement(pair.new).role == "reference" and pair.verdict == "unchanged"
    assert [placement(r).role for r in cmp.only_new] == ["rank", "rank", "step"]
    assert comparison_columns(cmp)[0] == "model"  # BASE is an ordinary run: no ranks column
