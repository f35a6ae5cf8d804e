"""Cross-check one config against ``torch.utils.benchmark.Timer`` in the same process (issue 2).

    python benchmarks/timer_crosscheck.py --model fno2d --shape 256 --batch 1 [--device cuda]

Prints surrobench's median (synchronized per call) and Timer's ``blocked_autorange`` median (calls run
back to back, one synchronize per block). The two agree when the GPU is the bottleneck; when the host is
(launch-bound), Timer's pipelined calls hide host time and read lower: that gap is the information.
"""

from __future__ import annotations

import argparse

import torch
import torch.utils.benchmark as tbench

from surrobench.execution.config import ExecConfig, numeric_settings
from surrobench.execution.runner import prepare_model, run_config
from surrobench.workload.inputs import make_input_sets
from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import parse_shapes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="fno2d")
    parser.add_argument("--shape", default="256")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--iters", type=int, default=200)
    args = parser.parse_args()
    shape = parse_shapes(args.shape)[0]
    cfg = ExecConfig(args.model, shape, args.batch, "fp32", args.device, "eager", 20, args.iters, False, 0, 1)
    prepared = prepare_model(resolve_model(args.model), args.device, 0)
    ours = run_config(cfg, prepared)
    inputs = make_input_sets(prepared.surrogate, args.batch, shape, device=args.device, seed=0, n_sets=1)[0]
    # same TF32 / cuDNN settings as the fp32 config, so both measure the same kernels
    with numeric_settings("fp32", cudnn_benchmark=False), torch.inference_mode():
        timer = tbench.Timer(stmt="model(*inputs)", globals={"model": prepared.module, "inputs": inputs})
        measurement = timer.blocked_autorange(min_run_time=2.0)
    print("| config | surrobench median ms | surrobench device_ms median | Timer median ms |\n|---|---|---|---|")
    device_ms = f"{ours.device_ms.median:.4f}" if ours.device_ms else "-"
    print(f"| {cfg.label()} | {ours.latency_ms.median:.4f} | {device_ms} | {measurement.median * 1e3:.4f} |")


if __name__ == "__main__":
    main()
