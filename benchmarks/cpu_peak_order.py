"""A CPU config's peak memory by where its bracket starts, for configs run in a given order in one process.

The configs are run as ``run`` runs one (the module built once, each config's inputs and step, its first call, the
input set's check, 10 warm-up and 30 timed calls, fp32 eager, one input set), with the peak tracker
(:class:`surrobench.execution.memory.PeakMemoryTracker`) started at ``start`` (the config's start, as before),
``first`` (after its first calls: its warm-up and timed calls, as now), or ``warm`` (after its warm-up). Prints one
line: the model, the shape, where, then per config its batch, peak MiB and the growth of the file-backed resident
set (``RssFile``, libtorch's code paged in) over the bracket, MiB. docs/benchmarks/cpu-allocator.md, "The first
config of the process".

    PYTHONPATH=src python benchmarks/cpu_peak_order.py unet2d 32 1,1,1 first
"""

from __future__ import annotations

import sys

from surrobench.execution.config import ExecConfig
from surrobench.execution.memory import PeakMemoryTracker, _status_bytes
from surrobench.execution.runner import config_step, prepare_model
from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import ShapeSpec

MIB = 2**20


def main(model: str, shape: str, batches: str, where: str) -> None:
    prepared = prepare_model(resolve_model(model), "cpu", 0)
    dims = tuple(int(x) for x in shape.split("x"))
    spec = ShapeSpec(size=dims[0]) if len(dims) == 1 else ShapeSpec(full=dims)
    out = []
    for batch in (int(b) for b in batches.split(",")):
        cfg = ExecConfig(
            model=model, shape=spec, batch=batch, precision="fp32", device="cpu", mode="eager", warmup=10,
            iters=30, cudnn_benchmark=False, seed=0, input_sets=1,
        )  # fmt: skip
        tracker = PeakMemoryTracker("cpu")
        tracker.start()
        file0 = _status_bytes("RssFile")
        with config_step(cfg, prepared) as (step, _):
            step(0)
            step(0)  # the input set's check
            if where == "first":
                tracker.start()
                file0 = _status_bytes("RssFile")
            for _ in range(cfg.warmup):
                step(0)
            if where == "warm":
                tracker.start()
                file0 = _status_bytes("RssFile")
            for _ in range(cfg.iters):
                step(0)
        peak = tracker.stop().peak_bytes / MIB
        out.append(f"b{batch} {peak:.1f} (file +{(_status_bytes('RssFile') - file0) / MIB:.2f})")
    print(model.split(":")[-1], shape, where, " ".join(out), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
