"""Record a planted straggler with torch.profiler on every rank: one Kineto trace per rank, for the
cross-rank analysis (``surrobench analyze`` / ``diagnose`` on the folder).

Run with one process per GPU (or ``--device cpu`` for gloo)::

    NCCL_NVLS_ENABLE=0 python3 -m torch.distributed.run --standalone --nproc_per_node 2 \\
        benchmarks/straggler_traces.py --out traces/ --rows 16384

Each rank runs ``examples/straggler.py``'s model (the last rank does ``--extra`` more matmuls before the
all-reduce), warms up, then records ``wait + warmup + active`` steps with surrobench's own profiling
loop (:func:`surrobench.collect.torch_profiler.profile_steps`: ``ProfilerStep#N`` ranges, CPU and CUDA
activities) into ``OUT/rank{R}.json.gz``. Rank 0 prints each rank's median step time.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from straggler import WIDTH, Straggler  # noqa: E402

from surrobench.collect.torch_profiler import ProfileSchedule, profile_steps  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rows", type=int, default=16384, help="M of the (1, M, 1024) input")
    parser.add_argument("--extra", type=int, default=40, help="extra matmuls on the slow (last) rank")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--warmup-steps", type=int, default=5)
    args = parser.parse_args()
    if args.device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    rank = dist.get_rank()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = Straggler(dist.group.WORLD, extra=args.extra).to(args.device).eval()
    x = torch.randn(1, args.rows, WIDTH, device=args.device)

    def step(i: int) -> None:
        model(x)
        if args.device == "cuda":
            torch.cuda.synchronize()

    with torch.inference_mode():
        for i in range(args.warmup_steps):
            step(i)
        capture = profile_steps(
            step, ProfileSchedule(wait=1, warmup=2, active=5), args.device, trace_path=args.out / f"rank{rank}.json.gz"
        )
    medians = [None] * dist.get_world_size()
    dist.all_gather_object(medians, sorted(capture.active_step_ms)[len(capture.active_step_ms) // 2])
    if rank == 0:
        slow = dist.get_world_size() - 1
        print(
            f"straggler traces in {args.out}: rank {slow} does {args.extra} extra matmuls of "
            f"(1, {args.rows}, {WIDTH}) x ({WIDTH}, {WIDTH}) before the all-reduce"
        )
        for r, ms in enumerate(medians):
            print(f"  rank {r}: median profiled step {ms:.2f} ms")
        if capture.errors:
            print("  profiler problems: " + "; ".join(capture.errors))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
