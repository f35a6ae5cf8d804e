"""How much does surrobench's timing loop add to each iteration? (issue 2)

Measures, per device, the per-iteration time that the harness reports for
  1. a step that does nothing (the measurement floor: clock reads, events, synchronize),
  2. a single tiny kernel (``x.add_(1)`` on 1 element),
and compares (2) with a bare loop of the same call + synchronize timed in bulk, and with
``torch.utils.benchmark.Timer`` (which synchronizes per block, not per call). The difference between
the harness and the bare loop is the harness's own overhead per iteration.

    python benchmarks/harness_overhead.py [--iters 2000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.utils.benchmark as tbench

from surrobench.execution.timing import time_loop, warm_up


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def bare_loop_ms(step, iters: int, device: str) -> float:
    """Mean per-iteration ms of ``step(); synchronize`` run back to back, timed once around the loop."""
    _sync(device)
    t0 = time.perf_counter_ns()
    for i in range(iters):
        step(i)
        _sync(device)
    return (time.perf_counter_ns() - t0) / 1e6 / iters


def measure(device: str, iters: int) -> list[tuple[str, float]]:
    x = torch.ones(1, device=device)
    noop = lambda i: None  # noqa: E731
    tiny = lambda i: x.add_(1)  # noqa: E731
    warm_up(tiny, 100, device)
    rows = []
    floor = time_loop(noop, iters, device)
    rows.append(("harness, empty step: latency_ms median", float(np.median(floor.latency_ms))))
    timed = time_loop(tiny, iters, device)
    rows.append(("harness, x.add_(1): latency_ms median", float(np.median(timed.latency_ms))))
    if timed.device_ms is not None:
        rows.append(("harness, x.add_(1): device_ms median", float(np.median(timed.device_ms))))
    rows.append(("bare loop add_ + sync: mean per iter", bare_loop_ms(tiny, iters, device)))
    timer = tbench.Timer(stmt="x.add_(1)", globals={"x": x}).blocked_autorange(min_run_time=1.0)
    rows.append(("torch.utils.benchmark.Timer: median", timer.median * 1e3))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    args = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}; iters {args.iters}")
    for device in devices:
        name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
        print(f"\n| {device} ({name}) | ms per iteration |\n|---|---|")
        for label, ms in measure(device, args.iters):
            print(f"| {label} | {ms:.4f} |")


if __name__ == "__main__":
    main()
