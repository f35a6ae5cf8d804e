"""A run's repr fits a notebook cell: one line per result, the samples counted, never listed."""

from __future__ import annotations

from synthetic import config, latency_samples, run

from surrobench.records.run import RunRecord


def test_run_repr_lists_results_without_their_samples():
    results = [config(latency_samples(1.0 + i, 0.01, n=500, seed=i), size=16 * (i + 1)) for i in range(3)]
    results.append(config((), status="error"))
    text = repr(run("abc123", results))
    lines = text.splitlines()
    assert "abc123" in lines[0] and "4 result(s)" in lines[0]
    assert len(lines) == 1 + len(results)
    for line, r in zip(lines[1:], results):
        assert r.label() in line
        assert ("500 samples" in line) == (r.status == "ok") and (f": {r.status}:" in line) == (r.status != "ok")
    assert repr(results[0].samples_ms[0]) not in text


def test_long_runs_are_cut_and_counted():
    results = [config(latency_samples(1.0, 0.01), batch=b) for b in range(1, RunRecord.REPR_RESULTS + 4)]
    lines = repr(run("r", results)).splitlines()
    assert len(lines) == 1 + RunRecord.REPR_RESULTS + 1 and "3 more" in lines[-1]


def test_the_device_a_run_names_counts_the_processes_of_a_multi_process_run():
    assert run("r", []).device_text() == "Test CPU"
    several = run("r", [], device_name="NVIDIA H100", env={"world_size": 2, "parallel": "configs"})
    assert several.device_text() == "2 x NVIDIA H100 (configs)" and "on 2 x NVIDIA H100 (configs)" in repr(several)
