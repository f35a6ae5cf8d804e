"""``api.rank_traces``: rank traces analyzed in worker processes, only summaries sent back, the same
answer as in one process."""

from __future__ import annotations

import pytest
from kineto_synth import allreduce_steps, write_ranks

import surrobench
from surrobench.api.rank_traces import RankTraces, analyze_rank_traces, rank_trace_set
from surrobench.errors import UsageError
from surrobench.records.system import SystemView


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
    assert pooled.to_json()["schema"] == "surrobench/rank-traces-v4"


def test_one_trace_is_not_a_rank_set(tmp_path):
    folder = write_ranks(tmp_path / "one", {0: allreduce_steps(0, {0: 10.0})})
    assert rank_trace_set([folder]) is None and rank_trace_set([folder / "rank0.json"]) is None
    two = write_ranks(tmp_path / "two", {r: allreduce_steps(r, {0: 10.0, 1: 10.0}) for r in (0, 1)})
    assert len(rank_trace_set([two])) == 2


def test_the_verbs_take_a_rank_set_as_one_call(tmp_path):
    arrivals = {0: 30_040.0, 1: 95_040.0}
    ranks = {0: allreduce_steps(0, arrivals), 1: allreduce_steps(1, arrivals, extra_us=65_000.0)}
    folder = write_ranks(tmp_path / "ranks", ranks)
    analysis = surrobench.analyze_trace(folder, workers=1)
    assert isinstance(analysis, RankTraces) and [r.rank for r in analysis.ranks] == [0, 1]
    assert all(r.findings == () for r in analysis.ranks)  # each rank diagnosed on its own is diagnose's
    diagnosis = surrobench.diagnose(trace=[folder / "rank1.json", folder / "rank0.json"], workers=1)
    assert diagnosis.cross_rank.ranks == (0, 1) and diagnosis.findings[0].kind == "straggler"
    assert sorted(diagnosis.context["traces"]) == [str(folder / "rank0.json"), str(folder / "rank1.json")]
    one = surrobench.analyze_trace(folder / "rank0.json")
    assert one.cross_rank is None and "cross_rank" not in one.to_json()
    with pytest.raises(UsageError) as raised:
        surrobench.diagnose(trace=folder, system=SystemView.from_json({}))
    assert raised.value.parameter == "system"
