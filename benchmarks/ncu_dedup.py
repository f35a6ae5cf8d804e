"""``--counters`` with and without identical launches measured once, on one CUDA config: launches, launches
replayed, replay passes and ncu's wall time of each (surrobench.collect.ncu_dedup).

    python3 benchmarks/ncu_dedup.py MODEL SHAPE BATCH [PRECISION [MODE]] --json OUT.json

Both runs measure every kernel of the step (no kernel table: no name filter), so their launches must match one
for one; the script says so (``same_launches``).
"""

import argparse
import json

from surrobench.analysis.roofline import H200_FALLBACK
from surrobench.api.benchmark import sweep_plan
from surrobench.api.counters import counters_config
from surrobench.collect.ncu_dedup import signature


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("shape")
    parser.add_argument("batch", type=int)
    parser.add_argument("precision", nargs="?", default="fp32")
    parser.add_argument("mode", nargs="?", default="eager")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    plan = sweep_plan(
        args.model, shapes=args.shape, batches=args.batch, precisions=args.precision, modes=args.mode, device="cuda"
    )
    cfg = plan.configs[0]
    runs = {}
    for dedup in (True, False):
        got = counters_config(cfg, None, H200_FALLBACK, dedup=dedup)
        runs["dedup" if dedup else "all"] = got
        print(
            f"dedup={dedup}: {len(got.kernels)} launches, {got.measured_launches or len(got.kernels)} replayed, "
            f"{got.passes} passes, {got.ncu_wall_s or 0:.1f} s under ncu"
            + (f", problem: {got.problem.message}" if got.problem else ""),
            flush=True,
        )
    same = [signature(k.counters) for k in runs["dedup"].kernels] == [
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
