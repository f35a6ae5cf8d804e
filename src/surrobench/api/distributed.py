"""Multi-process runs: one process per device, started by torch.distributed's own launcher.

``run --nproc N`` (:func:`launch`) starts torchrun on :mod:`surrobench.api.rank_entry`; under the user's own
``torchrun`` or ``srun`` a rank is found in the environment (:func:`~surrobench.execution.ranks.detect_rank_env`).
Either way every rank runs :func:`run_on_ranks` with the same request; rank 0 stores the run and returns it. How
the ranks share the work (:data:`~surrobench.results.scaling.PARALLEL_MODES`):

- ``replicas``: every rank runs each config on its own device, iterations started together.
- ``model``: a distributed model (a factory taking ``group``) runs over all ranks at once.
- ``configs``: the sweep's configs are dealt out over the ranks (``run --devices``), each rank storing
  its own as they finish.

For ``replicas`` and ``model`` each config is measured on rank 0 alone (the scaling table's one-device reference),
then on all ranks together; ``--rounds`` repeats the pair interleaved, so a slow spell touches both sides.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.execution.env import gpu_readings
from surrobench.execution.ranked import run_config_together
from surrobench.execution.ranks import RankEnv, RankGroups, device_uuid, init_groups
from surrobench.execution.runner import PreparedModel, merge_rounds, prepare_model, run_config
from surrobench.execution.sweep import SweepPlan, SweepRequest, new_run_id, run_environment
from surrobench.results.scaling import PARALLEL_MODES, comm_breakdown, comm_ms_per_step, placed, step_result
from surrobench.records.run import ConfigResult, Placement, RunRecord, created_now
from surrobench.results.store import ResultStore


def check_parallel(parallel: str, *, several: bool) -> None:
    """Raises UsageError: ``parallel`` neither ``auto`` nor a :data:`PARALLEL_MODES` entry, or other than ``auto``
    where not ``several`` processes run."""
    if parallel != "auto" and parallel not in PARALLEL_MODES:
        raise UsageError.bad("parallel", f"{parallel!r}: choose auto, {', '.join(PARALLEL_MODES)}")
    if not several and parallel != "auto":
        detail = f"{parallel} without {{nproc}} or {{devices}}: it shares a multi-process run's work; give one"
        raise UsageError.bad("parallel", detail, others=("nproc", "devices"))


def choose_parallel(plan: SweepPlan, parallel: str) -> str:
    """The parallel mode to use: ``auto`` is ``model`` when every model's factory takes ``group``, else ``replicas``.

    Raises:
        UsageError: an unknown mode, or ``model`` for a model whose factory takes no ``group``.
    """
    surrogates = plan.surrogates
    distributed = {spec for spec, s in surrogates.items() if s.takes_group}
    if parallel == "auto":
        return "model" if distributed == set(surrogates) else "replicas"
    check_parallel(parallel, several=True)
    if parallel == "model" and distributed != set(surrogates):
        plain = ", ".join(sorted(set(surrogates) - distributed))
        detail = (
            f"'model': {plain} is not a distributed model; its factory must take a `group` parameter "
            "(the torch.distributed process group)"
        )
        raise UsageError.bad("parallel", detail)
    return parallel


def deal_configs(n_configs: int, world_size: int) -> list[list[int]]:
    """Config indices per rank, dealt round-robin (rank r gets r, r + N, ...), spreading small and large configs."""
    return [list(range(rank, n_configs, world_size)) for rank in range(world_size)]


def visible_devices(devices: list[int], environ: dict | None = None) -> str:
    """``CUDA_VISIBLE_DEVICES`` for the ranks of ``--devices``: the chosen indices, taken within the
    parent's own ``CUDA_VISIBLE_DEVICES`` where it is set (CUDA docs, "CUDA Environment Variables").

    Raises:
        UsageError: an index beyond the GPUs visible to the parent.
    """
    environ = os.environ if environ is None else environ
    parent = environ.get("CUDA_VISIBLE_DEVICES")
    visible = [v.strip() for v in parent.split(",")] if parent else [str(i) for i in range(torch.cuda.device_count())]
    if any(d >= len(visible) for d in devices):
        detail = f"{','.join(map(str, devices))}: only {len(visible)} GPU(s) visible (indices 0-{len(visible) - 1})"
        raise UsageError.bad("devices", detail)
    return ",".join(visible[d] for d in devices)


def launch(
    plan: SweepPlan,
    parallel: str,
    nproc: int,
    db: Path,
    *,
    devices: list[int] | None = None,
    command: str | None = None,
) -> RunRecord:
    """Start ``nproc`` ranks with torchrun on this host (``plan`` planned again in each; one per GPU, on ``devices``,
    None: the first ``nproc``), wait for them and return the run stored in ``db``. ``parallel``: a
    :data:`PARALLEL_MODES` entry or ``auto``; ``command`` is stored with the run.

    Raises:
        UsageError: more ranks than GPUs, or the ranks did not finish (their output says why).
    """
    parallel = choose_parallel(plan, parallel)
    request = plan.request
    if nproc < 2:
        raise UsageError.bad("nproc", f"{nproc}: a multi-process run needs at least 2 processes (leave it out for one)")
    if request.device == "cuda" and nproc > torch.cuda.device_count() and devices is None:
        raise UsageError.bad("nproc", f"{nproc}: one process per GPU, and torch sees {torch.cuda.device_count()}")
    # torchrun's own default for several ranks, set here so that it prints no banner saying it set it
    environ = {"OMP_NUM_THREADS": "1", **os.environ}
    if request.device == "cuda":
        environ["CUDA_VISIBLE_DEVICES"] = visible_devices(devices or list(range(nproc)), environ)
    with tempfile.TemporaryDirectory(prefix="surrobench-ranks-") as tmp:
        req_path, out_path = Path(tmp) / "request.json", Path(tmp) / "run_id"
        req_path.write_text(json.dumps(request.to_json()))
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", "-m"]
        argv += ["surrobench.api.rank_entry", "--request", str(req_path), "--parallel", parallel, "--db", str(db)]
        argv += ["--run-id-out", str(out_path), "--command", command or ""]
        code = subprocess.run(argv, env=environ).returncode
        run_id = out_path.read_text().strip() if out_path.exists() else None
    if code != 0 or not run_id:
        raise UsageError(
            f"the {nproc} ranks did not finish (torchrun exit code {code}); their output above "
            "says why" + (f"; what finished is stored as run {run_id}" if run_id else "")
        )
    with ResultStore(db) as store:
        return store.load_run(run_id)


def distributed_run(
    plan: SweepPlan,
    parallel: str,
    db: Path,
    *,
    nproc: int = 0,
    devices: list[int] | None = None,
    rank_env: RankEnv | None = None,
    command: str | None = None,
) -> RunRecord | None:
    """A multi-process run as ``surrobench run`` asks for it: ``devices`` spreads the configs over those GPUs,
    ``nproc`` starts that many ranks, with neither this process is a rank of the user's launcher (``rank_env``, then
    not None). Returns the stored run on the process that started the ranks or on rank 0; None on the other ranks.

    Raises:
        UsageError: ``devices`` off CUDA or with another parallel mode, ``nproc`` inside torchrun or
            srun, or as :func:`launch` and :func:`run_on_ranks`.
    """
    if (nproc or devices is not None) and rank_env is not None:
        detail = (
            f"or {{devices}} inside {rank_env.launcher} (rank {rank_env.rank} of {rank_env.world_size}): the "
            "launcher already started the ranks; drop the option"
        )
        raise UsageError.bad("nproc", detail, others=("devices",))
    if devices is not None:
        if plan.request.device != "cuda":
            detail = "spreads configs over GPUs: it needs {device} cuda (or auto with a GPU)"
            raise UsageError.bad("devices", detail, others=("device",))
        if parallel not in ("auto", "configs"):
            detail = (
                f"with {{parallel}} {parallel}: it deals out configs; use {{nproc}} for replicas or a distributed model"
            )
            raise UsageError.bad("devices", detail, others=("parallel", "nproc"))
        return launch(plan, "configs", len(devices), db, devices=devices, command=command)
    if nproc:
        return launch(plan, parallel, nproc, db, command=command)
    return run_on_ranks(plan, parallel, db, rank_env, command=command)


class _Models:
    """One model resident at a time per role (``solo``: rank 0 alone, ``world``: all ranks)."""

    def __init__(self, request: SweepRequest, surrogates: dict, groups: RankGroups | None, parallel: str) -> None:
        self._request, self._surrogates, self._groups, self._parallel = request, surrogates, groups, parallel
        self._cache: dict[str, tuple[str, PreparedModel]] = {}

    def get(self, spec: str, role: str) -> PreparedModel:
        """The prepared model of ``spec`` for ``role``: replicas share one module between rank 0's
        reference run and the run together; a distributed model is built once per group."""
        role = role if self._parallel == "model" else "world"
        held = self._cache.get(role)
        if held is None or held[0] != spec:
            self._cache.pop(role, None)
            surrogate = self._surrogates[spec]
            if self._parallel == "model":
                surrogate = surrogate.with_group(self._groups.solo if role == "solo" else self._groups.world)
            self._cache[role] = (spec, prepare_model(surrogate, self._request.device, self._request.seed))
        return self._cache[role][1]


def _rows(
    cfg_index: int,
    cfg: ExecConfig,
    solo: ConfigResult | None,
    ranks: list[ConfigResult],
    comm: list[np.ndarray],
    facts: list[dict],
    parallel: str,
) -> list[ConfigResult]:
    """Rank 0's rows of one config: the one-device reference, each rank, and the step."""
    world = len(ranks)
    rows = []
    if solo is not None:
        rows.append(placed(solo, Placement(cfg_index, "reference", 0, 1, facts[0]["host"], facts[0]["device_uuid"])))
    breakdown = comm_breakdown(comm) if comm and len({c.size for c in comm}) == 1 and comm[0].size else None
    for rank, r in enumerate(ranks):
        if breakdown is not None:
            r = dataclasses.replace(r, extra={**r.extra, "comm": breakdown[rank]})
        where = Placement(cfg_index, "rank", rank, world, facts[rank]["host"], facts[rank]["device_uuid"])
        rows.append(placed(r, where))
    like = solo if solo is not None else ranks[0]
    if parallel == "replicas":
        per_step, points = cfg.batch * world, ranks[0].points_per_sample()
    else:
        local = [r.points_per_sample() for r in ranks]
        per_step, points = cfg.batch, sum(local) if all(p is not None for p in local) else None
    rows.append(placed(step_result(ranks, per_step, points, like), Placement(cfg_index, "step", None, world)))
    return rows


def _together(
    plan: SweepPlan,
    store: ResultStore | None,
    run_id: str,
    facts: list[dict],
    env: RankEnv,
    groups: RankGroups,
    parallel: str,
) -> None:
    """``replicas`` / ``model``: each config on rank 0 alone, then on every rank in step."""
    request, configs = plan.request, plan.configs
    models = _Models(request, plan.surrogates, groups, parallel)
    barrier = lambda: dist.barrier(group=groups.control)  # noqa: E731
    solo_rounds: list[list[ConfigResult]] = [[] for _ in configs]
    rank_rounds: list[list[ConfigResult]] = [[] for _ in configs]
    comm_rounds: list[list[np.ndarray]] = [[] for _ in configs]
    for round_index in range(request.rounds):
        for i, cfg in enumerate(configs):
            if env.rank == 0:
                solo_rounds[i].append(run_config(cfg, models.get(cfg.model, "solo")))
            barrier()
            result, intervals = run_config_together(cfg, models.get(cfg.model, "world"), barrier)
            rank_rounds[i].append(result)
            comm_rounds[i].append(comm_ms_per_step(intervals))
            if round_index < request.rounds - 1:
                continue
            mine = (merge_rounds(rank_rounds[i]), np.concatenate(comm_rounds[i]))
            gathered: list = [None] * env.world_size if env.rank == 0 else None
            dist.gather_object(mine, gathered, dst=0, group=groups.control)
            if env.rank != 0:
                continue
            ranks = [g[0] for g in gathered]
            comm = [g[1] for g in gathered] if any(g[1].sum() > 0 for g in gathered) else []
            for row in _rows(i, cfg, merge_rounds(solo_rounds[i]), ranks, comm, facts, parallel):
                store.add_result(run_id, row)


def _spread(
    plan: SweepPlan,
    store: ResultStore,
    run_id: str,
    facts: list[dict],
    env: RankEnv,
) -> None:
    """``configs``: this rank's share of the sweep, each config stored by this rank as it finishes."""
    request, configs = plan.request, plan.configs
    mine = deal_configs(len(configs), env.world_size)[env.rank]
    models = _Models(request, plan.surrogates, None, "configs")  # one model resident at a time, of no group
    rounds: dict[int, list[ConfigResult]] = {i: [] for i in mine}
    me = facts[env.rank]
    for round_index in range(request.rounds):
        for i in mine:
            rounds[i].append(run_config(configs[i], models.get(configs[i].model, "world")))
            if round_index == request.rounds - 1:
                where = Placement(i, "spread", env.rank, 1, me["host"], me["device_uuid"])
                store.add_result(run_id, placed(merge_rounds(rounds[i]), where))


def run_on_ranks(
    plan: SweepPlan,
    parallel: str,
    db: Path,
    env: RankEnv,
    *,
    command: str | None = None,
) -> RunRecord | None:
    """This rank's part of a multi-process run (every rank calls it with the same arguments); returns on rank 0 the
    stored run (every rank's rows), None on the others.

    Raises:
        UsageError: as :func:`choose_parallel`, or a rank's device is missing.
    """
    parallel = choose_parallel(plan, parallel)
    request = plan.request
    groups = init_groups(env, request.device)
    try:
        store = ResultStore(db) if env.rank == 0 or parallel == "configs" else None
        try:
            # every rank's facts gathered; rank 0 stores the run row and shares its id with all ranks
            facts: list = [None] * env.world_size
            uuid = device_uuid() if request.device == "cuda" else None
            own = {"rank": env.rank, "local_rank": env.local_rank, "host": socket.gethostname(), "device_uuid": uuid}
            dist.all_gather_object(facts, own, group=groups.control)
            run_ids, run_env = [None], None
            if env.rank == 0:
                run_env = run_environment(request)
                run_env.update(
                    parallel=parallel,
                    world_size=env.world_size,
                    launcher=env.launcher,
                    ranks=facts,
                    nccl_env={k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
                )
                run = RunRecord(new_run_id(), created_now(), request.tag, run_env)
                store.begin_run(run, command)
                run_ids = [run.run_id]
            dist.broadcast_object_list(run_ids, src=0, group=groups.control)
            run_id = run_ids[0]
            if parallel == "configs":
                _spread(plan, store, run_id, facts, env)
            else:
                _together(plan, store, run_id, facts, env, groups, parallel)
            dist.barrier(group=groups.control)  # every rank's rows are in before rank 0 reads the run
            if env.rank != 0:
                return None
            if request.device == "cuda":  # rank 0's GPU after the run, as a single-process run records it
                run_env["gpu_clocks"]["after"] = gpu_readings()
                store.update_env(run_id, run_env)
            store.finish_run(run_id)
            return store.load_run(run_id)
        finally:
            if store is not None:
                store.close()
    finally:
        if dist.is_initialized():  # torch.distributed torn down, every group with it
            dist.destroy_process_group()
