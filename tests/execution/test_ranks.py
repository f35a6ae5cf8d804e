"""Rank detection from torchrun's and srun's environment variables, and Slurm node lists."""

from __future__ import annotations

import pytest

from surrobench.errors import UsageError
from surrobench.execution.ranks import RankEnv, detect_rank_env, first_slurm_host


def test_ordinary_process_and_world_of_one_are_not_ranked():
    assert detect_rank_env({}) is None
    assert detect_rank_env({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}) is None


def test_torchrun_environment():
    env = detect_rank_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "9"})
    assert env == RankEnv(rank=3, world_size=4, local_rank=1, launcher="torchrun")  # torchrun wins over Slurm


def test_srun_environment_prefers_the_step_task_count():
    env = detect_rank_env({"SLURM_PROCID": "1", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "2", "SLURM_LOCALID": "1"})
    assert env == RankEnv(rank=1, world_size=2, local_rank=1, launcher="srun")
    assert detect_rank_env({"SLURM_PROCID": "2", "SLURM_NTASKS": "4"}) == RankEnv(2, 4, 0, "srun")


@pytest.mark.parametrize(
    "environ",
    [
        {"RANK": "x", "WORLD_SIZE": "2", "LOCAL_RANK": "0"},
        {"RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0"},
        {"SLURM_PROCID": "5", "SLURM_NTASKS": "2"},
    ],
)
def test_bad_rank_environment_is_a_usage_error(environ):
    with pytest.raises(UsageError):
        detect_rank_env(environ)


@pytest.mark.parametrize(
    "nodes, first",
    [
        ("gpu7", "gpu7"),
        ("node[03-05,9],gpu7", "node03"),
        ("a,b", "a"),
        ("n[12]", "n12"),
        ("node-a[1-2]", "node-a1"),
    ],
)
def test_first_slurm_host(nodes, first):
    assert first_slurm_host(nodes) == first
