"""Synthetic runs with known answers for the compare and report tests, and a planted serving service."""

from __future__ import annotations

import numpy as np

from surrobench.execution.batcher import VirtualClock
from surrobench.records.run import ConfigResult, RunRecord
from surrobench.records.stats import LatencyStats


def latency_samples(median_ms: float, noise: float, n: int = 100, seed: int = 0) -> np.ndarray:
    """``n`` latencies around ``median_ms`` with relative Gaussian noise ``noise`` (0.05 = 5%)."""
    rng = np.random.default_rng(seed)
    return median_ms * (1 + noise * rng.standard_normal(n))


def config(
    samples,
    *,
    model="fno2d",
    size=64,
    batch=1,
    mode="eager",
    precision="fp32",
    status="ok",
    peak_mem_bytes=1 << 20,
    top_op=None,
    extra=None,
) -> ConfigResult:
    """An ``ok`` (or failed, then without samples) config of ``model`` at ``(batch, 3, size, size)``."""
    samples = tuple(float(s) for s in samples) if status == "ok" else ()
    latency = LatencyStats.from_samples(samples) if samples else None
    return ConfigResult(
        model=model,
        shape_label=str(size),
        input_shape=(batch, 3, size, size),
        batch=batch,
        precision=precision,
        device="cpu",
        mode=mode,
        status=status,
        error=None if status == "ok" else "CUDA out of memory",
        warmup=10,
        iters=len(samples),
        cold_start_ms=50.0,
        latency_ms=latency,
        samples_per_s=batch / (latency.median / 1e3) if latency else None,
        points_per_s=batch * size * size / (latency.median / 1e3) if latency else None,
        peak_mem_bytes=peak_mem_bytes,
        peak_reserved_bytes=None,
        top_op=top_op,
        samples_ms=samples,
        extra=extra if extra is not None else {"cudnn_benchmark": False},
    )


def run(
    run_id: str, results, *, device_name="Test CPU", created="2026-11-30T12:00:00+00:00", tag=None, env=None
) -> RunRecord:
    """A run of ``results`` with a minimal environment."""
    base_env = {"device": "cpu", "device_name": device_name, "torch": "2.13.0", "cuda": None}
    return RunRecord(run_id, created, tag, {**base_env, **(env or {})}, tuple(results))


def multi_rank_rows(solo_ms, rank_ms, *, samples_per_step: int, config_index: int = 0, comm=None):
    """The rows a multi-rank run stores for one config (``config`` results, batch 1): the one-device
    reference with ``solo_ms`` samples, one rank per entry of ``rank_ms``, and the step (max per iteration);
    ``comm`` (one dict per rank, as :func:`surrobench.results.scaling.comm_breakdown` returns) goes on the
    rank rows."""
    from dataclasses import replace

    from surrobench.records.run import Placement
    from surrobench.results.scaling import placed, step_result

    world = len(rank_ms)
    ranks = [config(ms) for ms in rank_ms]
    if comm is not None:
        ranks = [replace(r, extra={**r.extra, "comm": c}) for r, c in zip(ranks, comm)]
    step = step_result(ranks, samples_per_step, 64 * 64, ranks[0])
    return [
        placed(config(solo_ms), Placement(config_index, "reference", 0, 1, "h", None)),
        *(placed(r, Placement(config_index, "rank", i, world, "h", None)) for i, r in enumerate(ranks)),
        placed(step, Placement(config_index, "step", None, world)),
    ]


class PlantedService:
    """A batch of k taking ``a_ms + b_ms * k`` ms of virtual time (a serve ``Service``); a fresh clock per load
    (``clock_factory=service.new_clock``)."""

    def __init__(self, a_ms: float, b_ms: float = 0.0) -> None:
        self.a, self.b, self.clock = a_ms, b_ms, VirtualClock()

    def new_clock(self) -> VirtualClock:
        self.clock = VirtualClock()
        return self.clock

    def __call__(self, k: int) -> float:
        seconds = (self.a + self.b * k) / 1e3
        self.clock.advance(seconds)
        return seconds


def optimize_entry(partial: dict) -> dict:
    """An optimize config object as optimize-v3 writes it: ``partial``'s keys over an empty config's, its
    ``baseline`` and ``recipe`` merged key by key and each candidate completed alike."""
    from surrobench.results.optimize import CandidateResult, ConfigOptimization

    empty = ConfigOptimization(baseline=config(latency_samples(1.0, 0.01))).to_json()
    blank = CandidateResult("-", "failed", "-").to_json()
    out = {**empty, **partial}
    if "label" not in partial and "model" in partial:
        shape = "x".join(map(str, partial["input_shape"]))
        out["label"] = f"{partial['model']} {shape} b{partial['batch']} {partial['precision']} {partial['mode']}"
    for key in ("baseline", "recipe"):
        out[key] = {**empty[key], **partial.get(key, {})}
    out["candidates"] = [{**blank, **c} for c in out["candidates"]]
    return out


def optimize_doc(partial: dict) -> dict:
    """An optimize-v3 document: ``partial``'s keys over an empty report's, each config completed by
    :func:`optimize_entry`."""
    from surrobench.results.optimize import OptimizeReport

    empty = OptimizeReport("o1", "2026-12-01T00:00:00+00:00", {}, 0.01, 120.0, 1, "b1", None, ()).to_json()
    return {**empty, **partial, "configs": [optimize_entry(c) for c in partial.get("configs", ())]}


#: the workload of :func:`serve_record`
SERVE_WORKLOAD = {"model": "m", "shape_label": "8", "precision": "fp32", "mode": "eager", "device": "cpu"}


def serve_record() -> dict:
    """A serve-v1 JSON object with no policy: 5 ms target, constant arrivals, ``SERVE_WORKLOAD``."""
    return {
        "schema": "surrobench/serve-v1",
        "run_id": "r",
        "created": "2026-01-01T00:00:00",
        "tag": None,
        "env": {},
        "workload": dict(SERVE_WORKLOAD),
        "url": None,
        "arrival": "constant",
        "duration_s": 2.0,
        "warmup_s": 0.2,
        "seed": 0,
        "target_p99_ms": 5.0,
        "policies": [],
        "notes": [],
    }
