"""The batcher loop's own time on the CPU, and serve's predicted against measured capacity of a tiny CPU service
(docs/benchmarks/cpu-loop.md).

Usage:
    PYTHONPATH=src python3 benchmarks/cpu_loop.py loop                 # the loop's own time per batch size
    PYTHONPATH=src python3 benchmarks/cpu_loop.py capacity 20 [before]  # one serve --find-max at P99 <= 20 ms

The service is ``nn.Conv2d(3, 1, 1)`` on one 3x8x8 request (about 13 us a batch of up to 8, one thread).
``loop``: per batch size, a backlog of 20,000 batches through ``serve_open_loop``; the loop's own time per batch
is the median batch period less the median service time (robust to preemption), beside the mean period and the
process's CPU share. ``capacity``: ``serve(find_max=True)`` at max batch 8, max wait 1 ms, 2 s per rate after a
0.5 s warm-up; ``before`` charges no loop time (the prediction as it was); one JSON line with the predicted and
measured capacity, the measured ``loop_ms`` and ``saturated_ms`` per size and the CPU share of the saturated probes
(``execution.batcher.saturated_cycles``) and of each load.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

import numpy as np
import torch
from torch import nn

import surrobench.api.serve as api_serve
from surrobench.api.benchmark import sweep_plan
from surrobench.execution import batcher
from surrobench.execution.runner import prepare_model
from surrobench.execution.serve_step import model_service
from surrobench.records.serve import ServePolicy

OPTIONS = dict(shapes="8", device="cpu", threads=1, warmup=3)


def _share(fn, shares: list[float]):
    """``fn`` that appends its process CPU time / wall time to ``shares``."""

    def timed(*args, **kwargs):
        c0, w0 = time.process_time(), time.perf_counter()
        out = fn(*args, **kwargs)
        shares.append(round((time.process_time() - c0) / (time.perf_counter() - w0), 2))
        return out

    return timed


def loop_rows() -> None:
    plan = sweep_plan(nn.Conv2d(3, 1, 1), caller=api_serve.serve, batches=1, iters=1, **OPTIONS)
    cfg = plan.configs[0]
    prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed)
    with model_service(cfg, prepared, 8, 3) as (service, _):
        for rep in range(3):
            for k in (1, 2, 4, 8):
                shares: list[float] = []
                run = _share(batcher.serve_open_loop, shares)
                t = run(np.zeros(20000 * k), service, ServePolicy(k, 0.0), drain_s=float("inf"))
                service_s, period_s = np.asarray(t.batch_compute_s), np.diff(t.batch_end_s)
                row = dict(rep=rep, k=k, load=round(os.getloadavg()[0], 2), cpu=shares[0])
                row |= dict(loop_us=round(1e6 * (np.median(period_s) - np.median(service_s)), 2))
                row |= dict(period_median_us=round(1e6 * np.median(period_s), 1))
                row |= dict(period_mean_us=round(1e6 * t.elapsed_s / len(service_s), 1))
                print(json.dumps(row), flush=True)


def capacity_row(p99_ms: float, before: bool) -> None:
    calib: list[float] = []
    loads: list[float] = []
    measured = api_serve.saturated_cycles

    def probe(*args):
        out = measured(*args)
        return {k: replace(u, loop_ms=0.0, saturated_ms=None) for k, u in out.items()} if before else out

    api_serve.saturated_cycles = _share(probe, calib)
    api_serve.serve_open_loop = _share(api_serve.serve_open_loop, loads)
    began = time.time()
    record = api_serve.serve(
        nn.Conv2d(3, 1, 1), find_max=True, p99_ms=p99_ms, max_batch=8, max_wait_ms=1.0, duration_s=2.0, warmup_s=0.5,
        min_requests=0, **OPTIONS,
    )  # fmt: skip
    c = record.policies[0].capacity
    row = dict(before=before, p99_ms=p99_ms, predicted=round(c.predicted_rps), capacity=round(c.capacity_rps))
    row |= dict(failing=round(c.failing_rps) if c.failing_rps else None, load=round(os.getloadavg()[0], 2))
    row |= dict(loop_ms={u.batch: u.loop_ms and round(u.loop_ms, 4) for u in record.unloaded}, probe_cpu=calib)
    row |= dict(load_cpu=loads)
    row |= dict(saturated_ms={u.batch: u.saturated_ms and round(u.saturated_ms, 4) for u in record.unloaded})
    print(json.dumps(row | dict(wall_s=round(time.time() - began, 1))), flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1] == "loop":
        loop_rows()
    else:
        capacity_row(float(sys.argv[2]), sys.argv[3:] == ["before"])
