"""Multi-rank results: the step over ranks, the time inside collectives, and the scaling table.

A multi-rank run (``surrobench run --nproc N``) stores, per config, the one-device reference (rank 0 alone),
one row per rank, and the step row: iteration i of the step is the slowest rank's iteration i (a synchronous
job advances at the pace of its slowest rank). Each row's ``placement`` (:class:`Placement`) says which it is.

Strong scaling (Amdahl 1967; Hager & Wellein, "Introduction to High Performance Computing for Scientists and
Engineers", 2010, ch. 5): speedup = throughput on N devices / throughput on one, efficiency = speedup / N; for
replicas the N-device throughput counts every rank's batch, for a distributed model one global batch per step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from surrobench.records import schemas
from surrobench.records.intervals import merge, total
from surrobench.records.paired import PairedSamples, split_rounds
from surrobench.records.run import ConfigResult
from surrobench.records.stats import LatencyStats

MS_PER_S = 1000.0
NS_PER_MS = 1e6
#: How the ranks of a run share the work (``run --parallel``): every rank the same config
#: (``replicas``), one distributed model over the ranks (``model``), or the sweep's configs dealt
#: out over the ranks (``configs``, what ``run --devices`` does).
PARALLEL_MODES = ("replicas", "model", "configs")


#: A row's role in a multi-process run: the one-device reference (rank 0 alone), one rank of the job,
#: the step (max over ranks), or a config dealt to one of several devices (``configs``).
ROLES = ("reference", "rank", "step", "spread")


@dataclass(frozen=True)
class Placement(schemas.Plain):
    """Where a result was measured in a multi-process run: the ``config``'s index in the run's plan, its ``role``
    (:data:`ROLES`), the process's ``rank`` (None for the step row), the ``world_size`` that ran it together (1 for
    ``reference`` and ``spread``), the rank's ``host`` and GPU (``device_uuid``, None on the CPU)."""

    config: int
    role: str
    rank: int | None
    world_size: int
    host: str | None = None
    device_uuid: str | None = None

    def label(self) -> str:
        """``ref 1``, ``rank 1/2``, ``step 2``, ``dev 1``: the rank column of the results table."""
        return {
            "reference": "ref 1",
            "rank": f"rank {self.rank}/{self.world_size}",
            "step": f"step {self.world_size}",
            "spread": f"proc {self.rank}",
        }[self.role]


def placement(result: ConfigResult) -> Placement | None:
    """The result's placement, or None for a result of an ordinary single-process run."""
    d = result.extra.get("placement")
    return None if d is None else Placement(**d)


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
        return replace(failed, input_shape=like.input_shape, inputs=like.inputs, samples_ms=(), device_samples_ms=(),
                       **untimed)  # fmt: skip
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


@dataclass(frozen=True)
class ScalingRow(schemas.Plain):
    """One config of a multi-rank run (``world_size`` N, the step row's ``label``) against its one-device
    reference (``solo_``): median latencies (the step's is of the max over ranks per iteration; the ranks' in rank
    order) and throughputs; ``speedup`` ``samples_per_s / solo_samples_per_s`` with its bootstrap 95% interval;
    ``efficiency`` speedup / N; ``rank_skew`` slowest rank median / fastest - 1; ``comm_ms``, ``comm_wait_ms`` per
    rank, the median time inside collectives and waiting in them per step (None without torch.distributed calls).
    """

    label: str
    world_size: int
    solo_median_ms: float | None
    step_median_ms: float | None
    rank_median_ms: tuple[float, ...]
    solo_samples_per_s: float | None
    samples_per_s: float | None
    speedup: float | None
    speedup_ci95: tuple[float, float] | None
    efficiency: float | None
    rank_skew: float | None
    comm_ms: tuple[float, ...] | None
    comm_wait_ms: tuple[float, ...] | None


def _scaling_row(solo: ConfigResult | None, ranks: list[ConfigResult], step: ConfigResult) -> ScalingRow:
    world = len(ranks)
    ok_ranks = [r for r in ranks if r.latency_ms is not None]
    medians = tuple(r.latency_ms.median for r in ok_ranks)
    speedup = ci = None
    solo_ok = solo is not None and solo.status == "ok" and solo.samples_per_s
    if solo_ok and step.status == "ok" and step.samples_per_s:
        speedup = step.samples_per_s / solo.samples_per_s
        # samples per step of the N-rank job over the reference's: N for replicas, 1 for a distributed model
        factor = speedup * step.latency_ms.median / solo.latency_ms.median
        rounds = [split_rounds(r.samples_ms, r.extra.get("rounds", 1)) for r in (solo, step)]
        _, (lo, hi) = PairedSamples.separate(*rounds).ratio(0.5)  # median(solo) / median(step)
        ci = (factor * lo, factor * hi)
    comm = [r.extra.get("comm") for r in ranks]
    has_comm = all(comm) and len(comm) == world
    return ScalingRow(
        label=step.label(),
        world_size=world,
        solo_median_ms=solo.latency_ms.median if solo is not None and solo.latency_ms else None,
        step_median_ms=step.latency_ms.median if step.latency_ms else None,
        rank_median_ms=medians,
        solo_samples_per_s=solo.samples_per_s if solo is not None else None,
        samples_per_s=step.samples_per_s,
        speedup=speedup,
        speedup_ci95=ci,
        efficiency=speedup / world if speedup is not None else None,
        rank_skew=max(medians) / min(medians) - 1 if len(medians) == world and min(medians) > 0 else None,
        comm_ms=tuple(c["comm_ms"]["median"] for c in comm) if has_comm else None,
        comm_wait_ms=tuple(c["comm_wait_ms"]["median"] for c in comm) if has_comm else None,
    )


def scaling_rows(results: tuple[ConfigResult, ...] | list[ConfigResult]) -> list[ScalingRow]:
    """The scaling table of a multi-rank run's results (empty for an ordinary run), in plan order."""
    groups: dict[int, dict] = {}
    for r in results:
        where = placement(r)
        if where is None:
            continue
        group = groups.setdefault(where.config, {"solo": None, "ranks": {}, "step": None})
        if where.role == "step":
            group["step"] = r
        elif where.role == "reference":
            group["solo"] = r
        elif where.role == "rank":
            group["ranks"][where.rank] = r
    return [
        _scaling_row(g["solo"], [g["ranks"][k] for k in sorted(g["ranks"])], g["step"])
        for _, g in sorted(groups.items())
        if g["step"] is not None and g["ranks"]
    ]
