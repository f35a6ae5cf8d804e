"""Multi-rank results: the step over ranks and the time inside collectives.

A multi-rank run (``surrobench run --nproc N``) stores, per config, the one-device reference (rank 0 alone), one row per
rank, and the step row: iteration i of the step is the slowest rank's iteration i (a synchronous job advances at the
pace of its slowest rank). Each row's ``placement`` (:class:`~surrobench.records.run.Placement`) says which it is; its
scaling table is the run record's (:func:`~surrobench.records.run.scaling_rows`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from surrobench.records.intervals import merge, total
from surrobench.records.run import ConfigResult, Placement, placement
from surrobench.records.stats import MS_PER_S, NS_PER_MS, LatencyStats

#: How the ranks of a run share the work (``run --parallel``): every rank the same config
#: (``replicas``), one distributed model over the ranks (``model``), or the sweep's configs dealt
#: out over the ranks (``configs``, what ``run --devices`` does).
PARALLEL_MODES = ("replicas", "model", "configs")


def rank_key(result: ConfigResult) -> tuple:
    """What a result's placement adds to its config identity when runs are matched: a one-device result
    (an ordinary run's, a multi-rank run's reference, a config dealt to one device) is ``("one",)``, so
    those match each other; a rank row is ``("rank", rank, N)`` and a step row ``("step", N)``."""
    where = placement(result)
    if where is None or where.role in ("reference", "spread"):
        return ("one",)
    if where.role == "rank":
        return ("rank", where.rank, where.world_size)
    return ("step", where.world_size)


def placed(result: ConfigResult, where: Placement) -> ConfigResult:
    """A copy of ``result`` carrying ``where``."""
    return replace(result, extra={**result.extra, "placement": where.to_json()})


def comm_ms_per_step(intervals: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Time inside collectives per step, ms: the union of each step's call intervals (ns), so overlapping
    asynchronous calls count once. Shape ``(steps,)``."""
    return np.array([total(*merge(start, end)) / NS_PER_MS for start, end in intervals], dtype=np.float64)


def comm_breakdown(per_rank_ms: list[np.ndarray]) -> list[dict]:
    """``{"comm_ms", "comm_wait_ms"}`` latency statistics per rank (``per_rank_ms``: rank-ordered
    :func:`comm_ms_per_step` arrays of equal length): its time inside collectives, and that minus the least any rank
    spent in them in the step (the last rank to arrive waits for no peer; the "wait time" of the NVIDIA Nsight
    Systems User Guide, "NCCL ... analysis", as HTA splits it)."""
    comm = np.vstack(per_rank_ms)
    wait = comm - comm.min(axis=0, keepdims=True)
    return [
        {"comm_ms": LatencyStats.from_samples(c).to_json(), "comm_wait_ms": LatencyStats.from_samples(w).to_json()}
        for c, w in zip(comm, wait)
    ]


def step_result(
    ranks: list[ConfigResult], samples_per_step: int, points_per_sample: float | None, like: ConfigResult
) -> ConfigResult:
    """The step row of one config from its rank rows (``ranks``, rank order): iteration i is the max over ranks;
    a failed rank makes the step its failure. ``samples_per_step``: N x batch for replicas, the batch for a
    distributed model; ``points_per_sample`` of the whole job; ``like``: the result whose inputs the step row takes
    (the one-device reference where there is one)."""
    first = ranks[0]
    failed = next((r for r in ranks if r.status != "ok" or not r.samples_ms), None)
    if failed is not None:
        untimed = dict.fromkeys(("latency_ms", "device_ms", "samples_per_s", "points_per_s"))
        return replace(
            failed, input_shape=like.input_shape, inputs=like.inputs, samples_ms=(), device_samples_ms=(), **untimed
        )
    rounds = first.extra.get("rounds", 1)
    latency = np.max(np.vstack([r.samples_ms for r in ranks]), axis=0)
    stats = LatencyStats.from_samples(latency, rounds=rounds)
    device = None
    if all(r.device_samples_ms for r in ranks):
        device = np.max(np.vstack([r.device_samples_ms for r in ranks]), axis=0)
    samples_per_s = samples_per_step / (stats.median / MS_PER_S)
    return replace(
        first,
        input_shape=like.input_shape,
        inputs=like.inputs,
        cold_start_ms=max(r.cold_start_ms or 0.0 for r in ranks),
        latency_ms=stats,
        device_ms=LatencyStats.from_samples(device, rounds=rounds) if device is not None else None,
        samples_per_s=samples_per_s,
        points_per_s=samples_per_s * points_per_sample if points_per_sample is not None else None,
        peak_mem_bytes=max(r.peak_mem_bytes or 0 for r in ranks),
        peak_reserved_bytes=None if first.peak_reserved_bytes is None else max(r.peak_reserved_bytes for r in ranks),
        samples_ms=tuple(latency.tolist()),
        device_samples_ms=tuple(device.tolist()) if device is not None else (),
        extra={k: v for k, v in first.extra.items() if k not in ("comm", "placement")},
    )
