"""This process's place in a multi-process run. :func:`detect_rank_env` reads torchrun's ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT`` (PyTorch docs, "torchrun (Elastic Launch)") or
srun's ``SLURM_PROCID``, ``SLURM_NTASKS``/``SLURM_STEP_NUM_TASKS``, ``SLURM_LOCALID`` (Slurm docs, srun(1));
:func:`init_groups` starts torch.distributed (NCCL on CUDA, gloo on the CPU; PyTorch docs, "Which backend to
use?") with a gloo group beside it for barriers and Python objects, so aligning ranks queues no GPU work.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from surrobench.errors import UsageError

#: torchrun's default ``--master-port`` (PyTorch docs "torchrun"), used under srun without MASTER_PORT.
DEFAULT_MASTER_PORT = 29500
#: How long a rank waits for the others at start-up and each barrier: a slow model build, not a dead rank.
GROUP_TIMEOUT = timedelta(minutes=10)


@dataclass(frozen=True)
class RankEnv:
    """This process's place as its ``launcher`` (``"torchrun"``, ``"srun"``) gave it; ``local_rank``: its GPU."""

    rank: int
    world_size: int
    local_rank: int
    launcher: str


def _int(environ: Mapping[str, str], name: str) -> int:
    try:
        return int(environ[name])
    except ValueError:
        raise UsageError(f"environment variable {name}={environ[name]!r} is not an integer") from None


def detect_rank_env(environ: Mapping[str, str] | None = None) -> RankEnv | None:
    """This process's rank environment, torchrun's over Slurm's; None for a world of one.

    Raises:
        UsageError: a variable is not an integer, or the rank is outside the world.
    """
    environ = os.environ if environ is None else environ
    if "RANK" in environ and "WORLD_SIZE" in environ:
        rank, world, local = _int(environ, "RANK"), _int(environ, "WORLD_SIZE"), _int(environ, "LOCAL_RANK")
        launcher = "torchrun"
    elif "SLURM_PROCID" in environ and ("SLURM_STEP_NUM_TASKS" in environ or "SLURM_NTASKS" in environ):
        rank = _int(environ, "SLURM_PROCID")
        # the step's task count is srun's own; SLURM_NTASKS is the allocation's (they differ in a batch script)
        world = _int(environ, "SLURM_STEP_NUM_TASKS" if "SLURM_STEP_NUM_TASKS" in environ else "SLURM_NTASKS")
        local = _int(environ, "SLURM_LOCALID") if "SLURM_LOCALID" in environ else 0
        launcher = "srun"
    else:
        return None
    if world <= 1:
        return None
    if not 0 <= rank < world:
        raise UsageError(f"{launcher} environment: rank {rank} is outside a world of {world}")
    return RankEnv(rank, world, local, launcher)


def first_slurm_host(nodelist: str) -> str:
    """The first host of a Slurm node list, where rank 0 runs: ``node[03-05,9],gpu7`` -> ``node03`` (scontrol(1)).

    Raises:
        UsageError: an empty list.
    """
    match = re.match(r"\s*([^,\[]+)(?:\[([^\],\-]+))?", nodelist)
    if not match:
        raise UsageError(f"SLURM node list {nodelist!r}: cannot read its first host")
    return match.group(1) + (match.group(2) or "")


@dataclass(frozen=True)
class RankGroups:
    """``world``, the default group (handed to user models); ``control``, gloo for barriers and gathers; ``solo``,
    rank 0 alone for the one-device reference run (None on the other ranks)."""

    world: dist.ProcessGroup
    control: dist.ProcessGroup
    solo: dist.ProcessGroup | None


def init_groups(env: RankEnv, device: str) -> RankGroups:
    """Start torch.distributed for this rank (``env://``, on CUDA with ``cuda:LOCAL_RANK`` current) and its groups.

    Raises:
        UsageError: CUDA asked for but this host has fewer GPUs than ``LOCAL_RANK + 1``.
    """
    backend = "gloo"
    if device == "cuda":
        if env.local_rank >= torch.cuda.device_count():
            raise UsageError(
                f"rank {env.rank}: LOCAL_RANK {env.local_rank} but torch sees "
                f"{torch.cuda.device_count()} GPU(s) on {socket.gethostname()}"
            )
        torch.cuda.set_device(env.local_rank)
        backend = "nccl"
    if env.launcher == "srun":  # the variables init_process_group(init_method="env://") reads, where srun did not
        os.environ.setdefault("RANK", str(env.rank))
        os.environ.setdefault("WORLD_SIZE", str(env.world_size))
        os.environ.setdefault("LOCAL_RANK", str(env.local_rank))
        if "MASTER_ADDR" not in os.environ:
            nodes = os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
            if not nodes:
                raise UsageError(
                    "srun environment without MASTER_ADDR or SLURM_STEP_NODELIST: set MASTER_ADDR to rank 0's host"
                )
            os.environ["MASTER_ADDR"] = first_slurm_host(nodes)
        os.environ.setdefault("MASTER_PORT", str(DEFAULT_MASTER_PORT))
    if not dist.is_initialized():
        dist.init_process_group(backend=backend, timeout=GROUP_TIMEOUT)
    control = dist.new_group(backend="gloo", timeout=GROUP_TIMEOUT)
    solo = dist.new_group([0], backend=backend, timeout=GROUP_TIMEOUT)
    return RankGroups(dist.group.WORLD, control, solo if env.rank == 0 else None)


def device_uuid() -> str | None:
    """The UUID of the current CUDA device (``GPU-...``, as ``nvidia-smi -L`` prints it), None on CPU."""
    if not torch.cuda.is_available():
        return None
    return f"GPU-{torch.cuda.get_device_properties(torch.cuda.current_device()).uuid}"
