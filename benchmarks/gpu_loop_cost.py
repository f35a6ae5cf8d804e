"""What serve's ``loop_ms`` charge stands for on a GPU service (docs/benchmarks/h200-capacity.md).

``loop_ms`` as the sixth session's serve computed it (the removed ``loop_overhead``) was a backlog's mean period per batch less the mean
of the back-to-back samples taken just before it. Per model and padded size this prints, three times interleaved,
one JSON line: the back-to-back samples (mean, median, P99), the backlog's periods between batch ends (mean, median,
P99, max and the five longest with their index), the backlog's service times and the loop's own time per batch
(elapsed less serving, per batch), and ``loop_ms`` as serve computes it. Then one Poisson load per rate: per padded
size, the batches' service times under load (mean, median).

Usage: PYTHONPATH=src python3 benchmarks/gpu_loop_cost.py MODEL SHAPE [RATE ...]   (device cuda when present)
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

import surrobench.api.serve as api_serve
from surrobench.api.benchmark import sweep_plan
from surrobench.execution import batcher
from surrobench.execution.arrivals import poisson_arrivals
from surrobench.execution.runner import prepare_model
from surrobench.execution.serve_step import model_service
from surrobench.records.serve import ServePolicy, padded_size, padded_sizes


def ms(values) -> dict:
    a = 1e3 * np.asarray(values, dtype=float)
    return dict(
        mean=round(float(a.mean()), 3), median=round(float(np.median(a)), 3), p99=round(float(np.quantile(a, 0.99)), 3)
    )


def main(model: str, shape: str, rates: list[float]) -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    plan = sweep_plan(model, caller=api_serve.serve, batches=1, iters=1, shapes=shape, device=device, warmup=3)
    cfg = plan.configs[0]
    prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed)
    clock = batcher.WallClock()
    with model_service(cfg, prepared, 8, 3) as (service, _):
        for rep in range(3):
            for k in (1, 8):
                back = []
                for _ in range(100):
                    t0 = clock.now()
                    service(k)
                    back.append(clock.now() - t0)
                n = int(max(10, 2.0 / max(float(np.median(back)), 1e-9)))
                t = batcher.serve_open_loop(np.zeros(n * k), service, ServePolicy(k, 0.0), clock, drain_s=float("inf"))
                period = np.diff([0.0, *t.batch_end_s])
                served = np.asarray(t.batch_end_s) - np.asarray(t.batch_start_s)
                longest = np.argsort(period)[-5:][::-1]
                row = dict(model=model, rep=rep, k=k, back_to_back_ms=ms(back), backlog_batches=len(period))
                row |= dict(period_ms=ms(period) | dict(max=round(1e3 * float(period.max()), 3)))
                row |= dict(longest=[(int(i), round(1e3 * float(period[i]), 3)) for i in longest])
                row |= dict(service_ms=ms(served), loop_own_ms=round(1e3 * t.loop_s / len(period), 4))
                row |= dict(loop_ms_as_serve=round(1e3 * max(0.0, t.elapsed_s / len(period) - float(np.mean(back))), 4))
                print(json.dumps(row), flush=True)
        for rate in rates:
            arrivals = poisson_arrivals(rate, 3.0, 0)
            t = batcher.serve_open_loop(arrivals, service, ServePolicy(8, 1.0), clock)
            served = np.asarray(t.batch_end_s) - np.asarray(t.batch_start_s)
            size = np.asarray([padded_size(b, padded_sizes(8)) for b in t.batch_size])
            by = {int(s): ms(served[size == s]) | dict(n=int((size == s).sum())) for s in np.unique(size)}
            print(
                json.dumps(
                    dict(model=model, rate_rps=rate, loop_own_ms=round(1e3 * t.loop_s / len(served), 4), by_size=by)
                ),
                flush=True,
            )


if __name__ == "__main__":
    began = time.time()
    main(sys.argv[1], sys.argv[2], [float(r) for r in sys.argv[3:]])
    print(json.dumps(dict(wall_s=round(time.time() - began, 1))))
