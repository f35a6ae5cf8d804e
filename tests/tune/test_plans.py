"""Plans read from a stored run: ``optimize --run``'s sweeps."""

from __future__ import annotations

import torch

import surrobench
from surrobench.tune.plans import sweeps_from_run


def test_a_stored_runs_configs_are_planned_with_every_execution_setting_they_ran_with():
    """matmul_precision was dropped here while channels_last, compile_mode and threads were mapped by hand."""
    torch.set_num_threads(1)
    run = surrobench.benchmark(
        "pinn-mlp", shapes="16", batches="1", device="cpu", warmup=1, iters=3, threads=1, matmul_precision="high"
    )
    (plan,) = sweeps_from_run(run)
    (cfg,) = plan.configs
    assert (cfg.matmul_precision, cfg.threads, cfg.channels_last) == ("high", 1, False)
