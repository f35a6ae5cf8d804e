"""Cross-rank analysis: steps aligned, collectives matched, waits for late ranks, and the straggler,
comm_wait and comm_not_overlapped findings, on synthetic rank traces with planted answers and on a real
two-rank gloo trace."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from kineto_synth import allreduce_steps, write_ranks

from surrobench.analysis.cross_rank import cross_rank_report, timeline_cross_rank
from surrobench.analysis.detect_ranks import cross_rank_findings, merge_rank_findings
from surrobench.analysis.diagnose import diagnose_trace
from surrobench.records.findings import Finding
from surrobench.analysis.rank_summary import rank_summary
from surrobench.trace import load_trace

GLOO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "gloo_2rank_straggler"


def straggler_folder(tmp_path, extra_us=65_000.0):
    """Two ranks; rank 1 runs ``extra_us`` of matmul after the common 30 ms convolution, then both
    all-reduce: rank 0 arrives at 30 ms, rank 1 ``extra_us`` later."""
    arrivals = {0: 30_040.0, 1: 30_040.0 + extra_us}
    return write_ranks(
        tmp_path / "ranks", {0: allreduce_steps(0, arrivals), 1: allreduce_steps(1, arrivals, extra_us=extra_us)}
    )


def test_planted_straggler_per_rank_rows(tmp_path):
    report = timeline_cross_rank(load_trace(straggler_folder(tmp_path)))
    r0, r1 = report.rows
    assert report.ranks == (0, 1) and report.steps == (0, 1, 2) and report.step_source == "ProfilerStep"
    assert report.comm_source == "nccl" and report.collectives == 3 and report.unmatched == 0
    assert report.end_spread_ms == 0.0  # every rank's all-reduce ends together, as planted
    assert r0.compute_ms == pytest.approx(30.0) and r1.compute_ms == pytest.approx(95.0)
    assert r0.comm_ms == pytest.approx(66.0) and r1.comm_ms == pytest.approx(1.0)
    assert r0.wait_ms == pytest.approx(65.0) and r1.wait_ms == 0.0
    assert (r0.late_share, r1.late_share) == (0.0, 1.0) and r1.late_ms == pytest.approx(65.0)
    assert [op.name for op in r1.extra_ops] == ["aten::mm"] and r1.extra_ops[0].others_ms == 0.0
    assert r1.extra_ops[0].ms == pytest.approx(65.0) and r0.extra_ops == ()
    assert [s.wait_ms for s in report.per_step if s.rank == 0] == pytest.approx([65.0] * 3)


def test_planted_straggler_findings_name_the_rank_its_extra_ops_and_the_wait(tmp_path):
    findings, report = diagnose_trace(load_trace(straggler_folder(tmp_path)))
    kinds = [f.kind for f in findings]
    assert kinds.index("straggler") < kinds.index("comm_wait")  # the root cause first
    straggler = next(f for f in findings if f.kind == "straggler")
    assert straggler.severity == "high" and "rank 1" in straggler.summary and "aten::mm" in straggler.summary
    assert straggler.estimated_gain_ms == pytest.approx(65.0)
    assert any(e.unit == "rank" and e.value == 1 for e in straggler.evidence)
    assert any("aten::mm" in e.text and e.value == pytest.approx(65.0) for e in straggler.evidence)
    wait = next(f for f in findings if f.kind == "comm_wait")
    assert "rank 0 waits 65.000 ms" in wait.summary and wait.estimated_gain_ms == pytest.approx(65.0)
    assert report.rows[0].wait_ms == pytest.approx(65.0)


def test_balanced_ranks_have_no_cross_rank_alarm(tmp_path):
    arrivals = {0: 30_040.0, 1: 30_050.0}  # 10 us apart; a 0.5 ms transfer, under 2% of the step
    folder = write_ranks(tmp_path / "ranks", {r: allreduce_steps(r, arrivals, transfer_us=500.0) for r in (0, 1)})
    assert cross_rank_findings(timeline_cross_rank(load_trace(folder))) == []


def test_exposed_transfer_is_comm_not_overlapped(tmp_path):
    # Both arrive together; the all-reduce then moves data for 20 ms with nothing else running.
    arrivals = {0: 30_040.0, 1: 30_040.0}
    folder = write_ranks(tmp_path / "ranks", {r: allreduce_steps(r, arrivals, transfer_us=20_000.0) for r in (0, 1)})
    findings = cross_rank_findings(timeline_cross_rank(load_trace(folder)))
    assert [f.kind for f in findings] == ["comm_not_overlapped"]
    assert findings[0].estimated_gain_ms == pytest.approx(20.0)


def test_per_file_summaries_match_the_merged_timeline(tmp_path):
    """Each rank loaded alone has its own time origin; ``meta.origin_ns`` puts them back on one clock."""
    folder = straggler_folder(tmp_path)
    alone = [rank_summary(load_trace(folder / f"rank{r}.json")) for r in (1, 0)]
    assert pickle.loads(pickle.dumps(alone[0])).rank == 1  # travels from a worker
    merged = timeline_cross_rank(load_trace(folder))
    assert cross_rank_report(alone).rows == merged.rows


def test_single_rank_has_no_cross_rank_report():
    assert timeline_cross_rank(load_trace(GLOO / "rank0.json.gz")) is None
    with pytest.raises(ValueError, match="two or more"):
        cross_rank_report([rank_summary(load_trace(GLOO / "rank0.json.gz"))])


def test_real_gloo_trace_finds_the_planted_straggler():
    report = timeline_cross_rank(load_trace(GLOO))
    assert report.comm_source == "gloo" and report.basis == "cpu" and report.collectives == 3
    r0, r1 = report.rows
    assert r1.late_share == 1.0 and r0.wait_ms > 5.0 and r1.wait_ms == 0.0
    assert r1.compute_ms > r0.compute_ms
    findings = cross_rank_findings(report)
    straggler = next(f for f in findings if f.kind == "straggler")
    assert "rank 1" in straggler.summary and "aten::mm" in straggler.summary
    assert any(f.kind == "comm_wait" and "rank 0" in f.summary for f in findings)


def test_forward_ranges_align_steps_without_profiler_steps(tmp_path):
    arrivals = {0: 30_040.0, 1: 30_040.0 + 65_000.0}
    events = {
        r: [
            e if e["name"] != f"ProfilerStep#{k}" else {**e, "name": "forward"}
            for k in range(3)
            for e in allreduce_steps(r, arrivals, extra_us=65_000.0 if r else 0.0)
            if k * 96_140 <= e["ts"] - 5e9 < (k + 1) * 96_140
        ]
        for r in (0, 1)
    }
    report = timeline_cross_rank(load_trace(write_ranks(tmp_path / "ranks", events)))
    assert report.step_source == "forward" and report.steps == (0, 1, 2)
    assert report.rows[0].wait_ms == pytest.approx(65.0)


def test_each_kind_once_over_the_ranks_worst_first():
    def f(kind, severity, gain, rank):
        return Finding(kind, severity, kind, (), "act", gain, f"rank {rank}")

    merged = merge_rank_findings(
        [
            [f("launch_bound", "medium", 2.0, 0), f("host_sync", "low", 1.0, 0)],
            [f("launch_bound", "high", 3.0, 1)],
            [f("launch_bound", "medium", 4.0, 2)],
        ]
    )
    assert [(m.kind, m.severity, m.config) for m in merged] == [
        ("launch_bound", "high", "rank 1 (worst; also rank 0, rank 2)"),
        ("host_sync", "low", "rank 0"),
    ]
    # no rank worse by severity or gain (an info finding with no gain on each): none is called the worst
    (tied,) = merge_rank_findings([[f("compute_bound", "info", None, 0)], [f("compute_bound", "info", None, 1)]])
    assert tied.config == "rank 0 (also rank 1)"


def test_without_collectives_the_slowest_replica_is_the_straggler(tmp_path):
    arrivals = {0: 30_040.0, 1: 50_040.0}
    folder = write_ranks(
        tmp_path / "ranks",
        {
            0: allreduce_steps(0, arrivals, collective=False),
            1: allreduce_steps(1, arrivals, extra_us=20_000.0, collective=False),
        },
    )
    report = timeline_cross_rank(load_trace(folder))
    assert report.collectives == 0 and report.comm_source == ""
    (finding,) = cross_rank_findings(report)
    assert finding.kind == "straggler" and "rank 1" in finding.summary
    assert finding.estimated_gain_ms == pytest.approx(20.0)
