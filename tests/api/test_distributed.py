"""Multi-process runs: the pieces on their own, and 2-process gloo runs on the CPU end to end."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import run_cli, torchrun_variables, two_ranks

from surrobench.api.distributed import (
    choose_parallel,
    deal_configs,
    distributed_run,
    visible_devices,
)
from surrobench.api.run import measure
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.errors import UsageError
from surrobench.execution.ranks import RankEnv
from surrobench.execution.sweep import SweepRequest, plan_sweep
from surrobench.records.run import placement, scaling_rows
from surrobench.results.store import ResultStore
from surrobench.workload.spec import ShapeSpec, parse_devices

ROOT = Path(__file__).resolve().parents[2]
HALO = str(ROOT / "examples" / "halo_conv2d.py")
FAST = ["--warmup", "1", "--iters", "4", "--input-sets", "1", "--device", "cpu"]


def _request(models=("fno2d",), shapes=(ShapeSpec(size=8), ShapeSpec(full=(1, 3, 8, 8)))) -> SweepRequest:
    return SweepRequest(
        models=models,
        shapes=shapes,
        batches=(1, 2),
        precisions=("fp32",),
        modes=("eager",),
        device="cpu",
        warmup=1,
        iters=2,
        seed=0,
        cudnn_benchmark=False,
        input_sets=1,
        tag="t",
    )


def test_configs_are_dealt_round_robin_and_each_once():
    dealt = deal_configs(7, 3)
    assert dealt == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(i for share in deal_configs(10, 4) for i in share) == list(range(10))
    assert deal_configs(1, 2) == [[0], []]


def test_devices_are_taken_within_the_visible_ones():
    assert visible_devices([1, 3], {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}) == "5,7"
    with pytest.raises(UsageError, match="only 2 GPU"):
        visible_devices([2], {"CUDA_VISIBLE_DEVICES": "0,1"})
    assert parse_devices("0, 2") == [0, 2]
    for bad in ("0,0", "-1", "a", "0,,1"):
        with pytest.raises(UsageError):
            parse_devices(bad)


def test_request_survives_json():
    request = _request()
    assert SweepRequest.from_json(json.loads(json.dumps(request.to_json()))) == request
    assert SweepRequest.from_json(_request(shapes=None).to_json()).shapes is None


def test_parallel_mode_follows_the_factory():
    assert choose_parallel(plan_sweep(_request()), "auto") == "replicas"
    assert choose_parallel(plan_sweep(_request(models=(f"{HALO}:build",))), "auto") == "model"
    with pytest.raises(UsageError, match="not a distributed model"):
        choose_parallel(plan_sweep(_request()), "model")
    with pytest.raises(UsageError, match="parallel 'pipeline'"):
        choose_parallel(plan_sweep(_request()), "pipeline")


def test_multi_process_options_that_cannot_work_are_usage_errors(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(UsageError, match="inside torchrun"):
        distributed_run(plan_sweep(_request()), "auto", db, nproc=2, rank_env=RankEnv(0, 2, 0, "torchrun"))
    with pytest.raises(UsageError, match="^devices spreads configs over GPUs: it needs device cuda"):
        distributed_run(plan_sweep(_request()), "auto", db, devices=[0, 1])
    with pytest.raises(UsageError, match="at least 2 processes"):
        distributed_run(plan_sweep(_request()), "auto", db, nproc=1)
    assert not db.exists()


@pytest.fixture
def importable_src(monkeypatch):
    """The ranks (torchrun's children) import surrobench from this checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _stored(db: Path, out: Path):
    run_id = json.loads(out.read_text())["run_id"]
    with ResultStore(db) as store:
        return store.load_run(run_id)


def test_two_replicas_on_gloo(tmp_path, importable_src, capsys):
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    code = run_cli(
        [
            "run",
            "--nproc",
            "2",
            "--model",
            "pinn-mlp",
            "--shape",
            "64",
            "--batch",
            "1",
            "--db",
            str(db),
            "--json",
            str(out),
            *FAST,
        ]
    )
    assert code == 0
    assert "scaling: one device" in capsys.readouterr().out
    run = _stored(db, out)
    assert run.env["parallel"] == "replicas" and run.env["world_size"] == 2 and len(run.env["ranks"]) == 2
    roles = [(placement(r).role, placement(r).rank, placement(r).world_size) for r in run.results]
    assert roles == [("reference", 0, 1), ("rank", 0, 2), ("rank", 1, 2), ("step", None, 2)]
    ref, rank0, rank1, step = run.results
    assert all(r.status == "ok" and len(r.samples_ms) == 4 for r in run.results)
    assert step.samples_ms == tuple(max(a, b) for a, b in zip(rank0.samples_ms, rank1.samples_ms))
    (row,) = scaling_rows(run.results)
    assert row.speedup == pytest.approx(step.samples_per_s / ref.samples_per_s)
    assert row.speedup == pytest.approx(2 * ref.latency_ms.median / step.latency_ms.median)  # 2 x batch per step
    assert row.comm_ms is None  # replicas make no collective calls


def srun_variables(rank: int) -> dict[str, str]:
    """What srun gives task ``rank`` of 2 (SLURM_* variables only; Slurm docs, srun(1))."""
    return {
        "SLURM_NTASKS": "2",
        "SLURM_STEP_NUM_TASKS": "2",
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_PROCID": str(rank),
        "SLURM_LOCALID": str(rank),
    }


def test_distributed_factory_over_two_ranks_on_gloo(tmp_path):
    """Two ranks of ``surrobench run`` under torchrun's variables (``launch`` itself: the test above)."""
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    argv = ["run", "--model", f"{HALO}:build", "--shape", "16", "--batch", "1", "--db", str(db), "--json", str(out)]
    two_ranks([sys.executable, "-m", "surrobench", *argv, *FAST], torchrun_variables)
    run = _stored(db, out)
    assert run.env["parallel"] == "model"
    ref, rank0, rank1, step = run.results
    assert ref.input_shape == step.input_shape == (1, 64, 16, 16)
    assert rank0.input_shape == rank1.input_shape == (1, 64, 8, 16)  # each rank its half of the rows
    assert step.samples_per_s == pytest.approx(1 / (step.latency_ms.median / 1000))  # one global batch per step
    (row,) = scaling_rows(run.results)
    assert row.comm_ms is not None and all(c > 0 for c in row.comm_ms)  # the halo exchange was timed
    assert min(row.comm_wait_ms) == 0.0 or min(row.comm_wait_ms) < max(row.comm_ms)


def test_configs_spread_over_two_processes_into_one_run(tmp_path):
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    argv = ["run", "--parallel", "configs", "--model", "pinn-mlp", "--shape", "32,64", "--batch", "1,2"]
    two_ranks(
        [sys.executable, "-m", "surrobench", *argv, "--db", str(db), "--json", str(out), *FAST], torchrun_variables
    )
    run = _stored(db, out)
    places = sorted((placement(r).config, placement(r).rank) for r in run.results)
    assert places == [(0, 0), (1, 1), (2, 0), (3, 1)]
    assert all(placement(r).role == "spread" and r.status == "ok" for r in run.results)
    assert {r.input_shape for r in run.results} == {(1, 32, 3), (2, 32, 3), (1, 64, 3), (2, 64, 3)}


def test_run_under_srun_finds_its_rank_in_the_slurm_environment(tmp_path):
    """Two processes started as srun would start them (SLURM_* variables only, no launcher)."""
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    argv = ["run", "--model", "pinn-mlp", "--shape", "32", "--batch", "1", "--db", str(db), "--json", str(out)]
    outputs = two_ranks([sys.executable, "-m", "surrobench", *argv, *FAST], srun_variables)
    assert "stored in" in outputs[0][0] and "stored in" not in outputs[1][0]  # rank 0 reports, rank 1 is quiet
    run = _stored(db, out)
    assert run.env["launcher"] == "srun" and [placement(r).role for r in run.results] == [
        "reference",
        "rank",
        "rank",
        "step",
    ]


def test_rank_rows_keep_their_placement_through_run_json():
    import numpy as np
    from synthetic import multi_rank_rows, run

    from surrobench.results.scaling import comm_breakdown
    from surrobench.records.run import run_from_json

    comm = comm_breakdown([np.array([2.0, 3.0]), np.array([1.0, 1.0])])
    record = run("multi", multi_rank_rows([1.0, 1.0], [[2.0, 2.0], [1.5, 2.5]], samples_per_step=2, comm=comm))
    doc = json.loads(json.dumps(record.to_json()))
    assert doc["results"][1]["placement"] == {
        "config": 0,
        "role": "rank",
        "rank": 0,
        "world_size": 2,
        "host": "h",
        "device_uuid": None,
    }
    assert doc["results"][1]["comm"]["comm_wait_ms"]["median"] == 1.5 and "comm" not in doc["results"][0]
    back = run_from_json(doc)
    assert [placement(r) for r in back.results] == [placement(r) for r in record.results]
    assert scaling_rows(back.results) == scaling_rows(record.results)


def test_measure_refuses_what_several_processes_cannot_do(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(UsageError) as raised:
        measure("pinn-mlp", db=db, nproc=2, then=ProfileOptions(), device="cpu")
    assert raised.value.parameter == "then" and str(raised.value).startswith("then with nproc 2: ")
    with pytest.raises(UsageError) as raised:  # before the sweep's own checks
        measure("pinn-mlp", db=db, devices=[0, 1], then=ProfileOptions(), shapes="0", device="cpu")
    assert raised.value.parameter == "then" and str(raised.value).startswith("then with devices: ")
    with pytest.raises(UsageError) as raised:
        measure("pinn-mlp", db=db, nproc=2, timeout_s=5, device="cpu")
    assert raised.value.parameter == "timeout_s"
    with pytest.raises(UsageError) as raised:
        measure("pinn-mlp", nproc=2, device="cpu")
    assert raised.value.parameter == "db"
    assert not db.exists()


@pytest.mark.parametrize("parallel", ["bogus", "model"])
def test_parallel_is_refused_when_unknown_or_without_ranks(tmp_path, parallel):
    import surrobench
    from conftest import run_cli

    from surrobench.errors import EXIT_USAGE

    with pytest.raises(UsageError) as info:
        surrobench.measure("fno2d", shapes=[16], device="cpu", db=tmp_path / "r.db", parallel=parallel)
    assert info.value.parameter == "parallel" and parallel in str(info.value)
    argv = ["run", "--model", "fno2d", "--shape", "16", "--device", "cpu", "--iters", "12", "--warmup", "2"]
    assert run_cli([*argv, "--db", str(tmp_path / "r.db"), "--parallel", parallel]) == EXIT_USAGE
    assert not (tmp_path / "r.db").exists()
