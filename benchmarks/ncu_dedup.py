"""``--counters`` with and without identical launches measured once, on one CUDA config: launches, launches
replayed, replay passes and ncu's wall time of each (surrobench.collect.ncu_dedup), and one JSON line per ncu run
as it ends (wall s, launches read, distinct signatures, the replay depth and what a run at it replays, the
problem, the command's filter options).

    python3 benchmarks/ncu_dedup.py MODEL SHAPE BATCH [PRECISION [MODE]] --json OUT.json [--dedup-only]

Both runs measure every kernel of the step (no kernel table: no name filter), so their launches must match one
for one; the script says so (``same_launches``). ``--dedup-only`` skips the run that replays every launch.
"""

import argparse
import json
import time

from surrobench.analysis.roofline import H200_FALLBACK
from surrobench.api.benchmark import sweep_plan
from surrobench.api.counters import counters_config
from surrobench.collect import ncu
from surrobench.collect.ncu_dedup import measured_count, replay_depth, replayed_count, signature

_run_once = ncu._run_once


def _logged(*args, **kwargs):
    """:func:`surrobench.collect.ncu._run_once`, one JSON line printed as it ends."""
    t0 = time.perf_counter()
    run = _run_once(*args, **kwargs)
    launches = run.kernels
    depth = replay_depth(launches)
    flags = ("--kernel-name-base", "--filter-mode", "--launch-count")
    filters = {a: run.command[i + 1] for i, a in enumerate(run.command[:-1]) if a in flags}
    line = {"wall_s": round(time.perf_counter() - t0, 1), "launches": len(launches)}
    line.update(signatures=measured_count(launches), depth=depth, replayed=replayed_count(launches, depth))
    line.update(problem=run.problem.kind if run.problem else None, filters=filters)
    print(json.dumps(line), flush=True)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("shape")
    parser.add_argument("batch", type=int)
    parser.add_argument("precision", nargs="?", default="fp32")
    parser.add_argument("mode", nargs="?", default="eager")
    parser.add_argument("--json", required=True)
    parser.add_argument("--dedup-only", action="store_true")
    args = parser.parse_args()
    ncu._run_once = _logged
    plan = sweep_plan(
        args.model, shapes=args.shape, batches=args.batch, precisions=args.precision, modes=args.mode, device="cuda"
    )
    cfg = plan.configs[0]
    runs = {}
    for dedup in (True,) if args.dedup_only else (True, False):
        got = counters_config(cfg, None, H200_FALLBACK, dedup=dedup)
        runs["dedup" if dedup else "all"] = got
        print(
            f"dedup={dedup}: {len(got.kernels)} launches, {got.measured_launches or len(got.kernels)} replayed, "
            f"{got.passes} passes, {got.ncu_wall_s or 0:.1f} s under ncu"
            + (f", problem: {got.problem.message}" if got.problem else ""),
            flush=True,
        )
    same = "all" in runs and [signature(k.counters) for k in runs["dedup"].kernels] == [
        signature(k.counters) for k in runs["all"].kernels
    ]
    doc = {
        "config": f"{args.model} {args.shape} b{args.batch} {args.precision} {args.mode}",
        "same_launches": same,
        **{
            name: {
                "launches": len(c.kernels),
                "replayed": c.measured_launches or len(c.kernels),
                "passes": c.passes,
                "ncu_wall_s": c.ncu_wall_s,
                "problem": c.problem.to_json() if c.problem else None,
            }
            for name, c in runs.items()
        },
    }
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
