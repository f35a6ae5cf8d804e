"""One step of a surrobench config inside the NVTX range ``surrobench_step``, for Nsight Compute.

    ncu --nvtx --nvtx-include 'surrobench_step/' ... python3 benchmarks/ncu_step.py MODEL SHAPE BATCH [PRECISION [MODE]]

The step is the config's own (``surrobench.api.benchmark.sweep_plan`` and ``execution.runner.config_step``,
the work ``run`` times), warmed up for 5 calls before the range; one call inside it.
"""

import sys

import torch

from surrobench.api.benchmark import sweep_plan
from surrobench.execution.runner import config_step, prepare_model


def main(model: str, shape: str, batch: str, precision: str = "fp32", mode: str = "eager") -> None:
    plan = sweep_plan(model, shapes=shape, batches=int(batch), precisions=precision, modes=mode, device="cuda")
    cfg = plan.configs[0]
    prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed)
    with config_step(cfg, prepared) as (step, _):
        for i in range(5):
            step(i)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("surrobench_step")
        step(5)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    print("step done", cfg.model, cfg.shape.label(), cfg.batch, cfg.precision, cfg.mode, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
