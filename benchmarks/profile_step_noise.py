"""How many profiled steps an op table needs: each step's op table against the table of many steps.

Records ``--steps`` active steps of one config under torch.profiler (as the profiling child does: the
schedule's wait and warm-up first, ``record_shapes`` and ``profile_memory`` on), splits the events by their
``ProfilerStep*`` range, and compares the op table of every window of N consecutive steps with the table of
all of them: the largest error of a category share and of an op share (percentage points), whether the top
op and the four readings' verdicts (structure matched, fragmented) are the same, and the calls per step.
The numbers are in docs/benchmarks/profile-cost.md::

    PYTHONPATH=src OMP_NUM_THREADS=2 python benchmarks/profile_step_noise.py --model fno2d --shape 32 --batch 4
"""

from __future__ import annotations

import argparse
import bisect
import contextlib

from surrobench.analysis.op_readings import read_table
from surrobench.collect.kineto_ops import ops_from_kineto
from surrobench.collect.op_events import tables_from_events
from surrobench.execution.config import ExecConfig
from surrobench.execution.ranges import annotated_step
from surrobench.execution.runner import config_step, prepare_model
from surrobench.execution.timing import warm_up
from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import ShapeSpec


def _steps(args) -> tuple[list[list], tuple[int, ...]]:
    """The op events of each recorded step, and the input shape."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    cfg = ExecConfig(args.model, ShapeSpec(size=args.shape), args.batch, "fp32", "cpu", "eager", 10, 60, False, 0, 3)
    prepared = prepare_model(resolve_model(cfg.model, False), cfg.device, cfg.seed)
    with contextlib.ExitStack() as stack:
        step, input_sets = stack.enter_context(config_step(cfg, prepared))
        warm_up(step, cfg.warmup + 1, cfg.device)
        phased = annotated_step(step, cfg.device)
        got = []
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=2, warmup=5, active=args.steps, repeat=1),
            record_shapes=True,
            profile_memory=True,
            on_trace_ready=lambda p: got.append(ops_from_kineto(p.profiler.kineto_results, use_device=False)),
        ) as prof:
            for i in range(7 + args.steps):
                phased(i)
                prof.step()
    events = got[0]
    marks = sorted((e.start_ns, e.end_ns) for e in events if e.name == "ProfilerStep*")
    starts = [s for s, _ in marks]
    per_step: list[list] = [[] for _ in marks]
    for e in events:
        i = bisect.bisect_right(starts, e.start_ns) - 1
        if 0 <= i < len(marks) and e.start_ns <= marks[i][1]:
            per_step[i].append(e)
    del torch
    return per_step, tuple(input_sets[0][0].shape)


def _summary(table, model: str, shape) -> dict:
    readings = read_table(table, model, shape).to_json()
    return {
        "ops": {op.name: op.share for op in table.ops},
        "cats": dict(table.category_shares),
        "top": table.top_op().name,
        "verdicts": (readings["structure"]["matches"], readings["fragmentation"]["flagged"]),
        "calls": {op.name: op.calls / table.active_steps for op in table.ops},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="fno2d")
    p.add_argument("--shape", type=int, default=32)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--windows", default="1,2,3,5,10")
    args = p.parse_args()
    per_step, shape = _steps(args)
    n = len(per_step)

    def table(lo: int, hi: int):
        events = [e for s in per_step[lo:hi] for e in s]
        return _summary(tables_from_events(events, active_steps=hi - lo)[0], args.model, shape)

    ref = table(0, n)
    print(f"{args.model} {args.shape}² b{args.batch}: {n} steps, top op {ref['top']}, verdicts {ref['verdicts']}")
    print("N | windows | category err pp (median, worst) | op err pp (median, worst) | top op | verdicts | calls")
    for size in map(int, args.windows.split(",")):
        cat_err, op_err, top, verdicts, calls = [], [], 0, 0, 0
        windows = [(lo, lo + size) for lo in range(0, n - size + 1, size)]
        for lo, hi in windows:
            got = table(lo, hi)
            cat_err.append(100 * max(abs(got["cats"].get(k, 0) - v) for k, v in ref["cats"].items()))
            op_err.append(100 * max(abs(got["ops"].get(k, 0) - v) for k, v in ref["ops"].items()))
            top += got["top"] == ref["top"]
            verdicts += got["verdicts"] == ref["verdicts"]
            calls += got["calls"] == ref["calls"]
        cat_err.sort(), op_err.sort()
        print(
            f"{size} | {len(windows)} | {cat_err[len(cat_err) // 2]:.1f}, {cat_err[-1]:.1f} | "
            f"{op_err[len(op_err) // 2]:.1f}, {op_err[-1]:.1f} | {top}/{len(windows)} | {verdicts}/{len(windows)} | "
            f"{calls}/{len(windows)}"
        )


if __name__ == "__main__":
    main()
