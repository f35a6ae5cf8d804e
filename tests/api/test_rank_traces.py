"""``api.rank_traces``: rank traces analyzed in worker processes, only summaries sent back, the same
answer as in one process."""

from __future__ import annotations

import pytest
from kineto_synth import allreduce_steps, write_ranks

from surrobench.api.rank_traces import analyze_rank_traces, rank_trace_set


def test_two_workers_give_the_answer_of_one_process(tmp_path):
    arrivals = {0: 30_040.0, 1: 95_040.0}
    folder = write_ranks(
        tmp_path / "ranks", {0: allreduce_steps(0, arrivals), 1: allreduce_steps(1, arrivals, extra_us=65_000.0)}
    )
    pooled = analyze_rank_traces(folder, workers=2)
    alone = analyze_rank_traces(folder, workers=1)
    assert pooled.cross_rank.rows == alone.cross_rank.rows
    assert [r.rank for r in pooled.ranks] == [0, 1] and pooled.cross_rank.rows[0].wait_ms == pytest.approx(65.0)
    assert [f.kind for f in pooled.findings][:2] == ["straggler", "comm_wait"]
    assert {r.timeline.ranks for r in pooled.ranks} == {(0,), (1,)}
    assert pooled.to_dict()["schema"] == "surrobench/rank-traces-v4"


def test_one_trace_is_not_a_rank_set(tmp_path):
    folder = write_ranks(tmp_path / "one", {0: allreduce_steps(0, {0: 10.0})})
    assert rank_trace_set([folder]) is None and rank_trace_set([folder / "rank0.json"]) is None
    two = write_ranks(tmp_path / "two", {r: allreduce_steps(r, {0: 10.0, 1: 10.0}) for r in (0, 1)})
    assert len(rank_trace_set([two])) == 2
