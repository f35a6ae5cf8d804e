"""Write a Kineto trace of a few inference steps of a zoo model, for ``surrobench report --trace``.

Follows the course text's profiler recipe (ch. 3, section 2): schedule wait=2, warmup=5, active=3, a
synchronize per step, inference_mode. Usage:
    python3 benchmarks/profile_step.py OUT.json [--model fno2d] [--shape 128] [--batch 1] [--device cuda]
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile, schedule

from surrobench.workload.spec import parse_shapes
from surrobench.workload.zoo import get_surrogate

WAIT, WARMUP, ACTIVE = 2, 5, 3


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--model", default="fno2d")
    p.add_argument("--shape", default="128")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    surrogate = get_surrogate(a.model)
    module = surrogate.build().eval().to(a.device)
    generator = torch.Generator(device=a.device).manual_seed(0)
    inputs = surrogate.example_inputs(a.batch, parse_shapes(a.shape)[0], generator=generator, device=a.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if a.device == "cuda" else [])
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    with torch.inference_mode(), profile(activities=activities, schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE)) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            module(*inputs)
            sync()
            prof.step()
    prof.export_chrome_trace(a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
