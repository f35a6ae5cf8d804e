"""map_rank_traces: per-rank work in worker processes, results ordered by rank, errors as UsageError."""

from __future__ import annotations

import resource
from functools import partial
from pathlib import Path

import pytest
from kineto_synth import kernel, launch, write

from surrobench.errors import UsageError
from surrobench.trace import load_trace, parallel
from surrobench.trace.parallel import map_rank_traces, rank_trace_files


def rank_summary(tl, scale=1):
    """What a worker sends back: the rank and its kernel count (times ``scale``)."""
    return tl.meta.ranks[0], len(tl.kernels) * scale, tl.meta.paths


def worker_data_limit(tl):
    return resource.getrlimit(resource.RLIMIT_DATA)[0]


def make_ranks(folder: Path, ranks=(2, 0, 1)) -> Path:
    folder.mkdir(exist_ok=True)
    for rank in ranks:  # rank r has r + 1 kernels; file names do not sort like ranks
        events = [e for k in range(rank + 1) for e in launch(10 * k, 1, k + 1, 10 * k + 5, 2)]
        write(folder / f"trace_{9 - rank}.json", events, distributedInfo={"rank": rank})
    return folder


@pytest.mark.parametrize("workers", [1, 2])
def test_results_come_back_ordered_by_rank(tmp_path, workers):
    folder = make_ranks(tmp_path / "run")
    out = map_rank_traces(folder, partial(rank_summary, scale=10), workers=workers)
    assert [(r, n) for r, n, _ in out] == [(0, 10), (1, 20), (2, 30)]
    assert all(len(paths) == 1 for _, _, paths in out)  # each call saw one rank's trace only


def test_same_answer_as_the_merged_folder_timeline(tmp_path):
    folder = make_ranks(tmp_path / "run")
    merged = load_trace(folder)
    per_rank = map_rank_traces(folder, rank_summary, workers=2)
    assert sum(n for _, n, _ in per_rank) == len(merged.kernels)
    assert tuple(r for r, _, _ in per_rank) == merged.meta.ranks


def test_list_of_files_and_workers_get_the_memory_cap(tmp_path):
    files = rank_trace_files(make_ranks(tmp_path / "run", ranks=(0, 1)))
    limits = map_rank_traces([str(f) for f in files], worker_data_limit, workers=2, worker_memory_bytes=3 << 30)
    assert limits == [3 << 30, 3 << 30]


def test_one_file_without_rank_is_rank_zero(tmp_path):
    path = write(tmp_path / "t.json", [kernel(0, 1, 1)])
    assert map_rank_traces(path, rank_summary)[0][:2] == (0, 1)


def test_bad_inputs_are_usage_errors(tmp_path):
    folder = make_ranks(tmp_path / "run", ranks=(0, 1))
    write(folder / "dup.json", [kernel(0, 1, 1)], distributedInfo={"rank": 1})
    with pytest.raises(UsageError, match="rank 1 also in"):
        map_rank_traces(folder, rank_summary, workers=2)
    (folder / "dup.json").write_text("{not json")
    with pytest.raises(UsageError, match="dup.json: invalid JSON"):
        map_rank_traces(folder, rank_summary, workers=2)
    files = rank_trace_files(folder)
    with pytest.raises(UsageError, match="given twice"):
        rank_trace_files([files[0], files[0]])
    with pytest.raises(UsageError, match="no such file"):
        map_rank_traces([tmp_path / "missing.json"], rank_summary)
    with pytest.raises(UsageError, match="at least 1"):
        map_rank_traces(folder, rank_summary, workers=0)
    with pytest.raises(UsageError, match="no rank trace"):
        rank_trace_files([])


def test_worker_over_its_memory_cap_is_a_usage_error(tmp_path):
    folder = make_ranks(tmp_path / "run", ranks=(0, 1))
    with pytest.raises(UsageError, match="memory"):
        map_rank_traces(folder, rank_summary, workers=2, worker_memory_bytes=64 << 20)


def test_dask_scheduler_runs_the_ranks_on_its_workers(tmp_path):
    distributed = pytest.importorskip("distributed", reason="the optional Dask backend is not installed")
    folder = make_ranks(tmp_path / "run")
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster:
        out = map_rank_traces(folder, rank_summary, dask_scheduler=cluster.scheduler_address)
    assert [(r, n) for r, n, _ in out] == [(0, 1), (1, 2), (2, 3)]


def test_unreachable_dask_scheduler_is_a_usage_error(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="the optional Dask backend is not installed")
    monkeypatch.setattr(parallel, "DASK_CONNECT_TIMEOUT_S", 1)
    folder = make_ranks(tmp_path / "run", ranks=(0,))
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler"):
        map_rank_traces(folder, rank_summary, dask_scheduler="tcp://127.0.0.1:9")
