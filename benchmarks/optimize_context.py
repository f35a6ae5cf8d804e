"""Does the state of the optimize process move its recipe's speedup away from a fresh ``surrobench run``?

On the H200 (docs/benchmarks/h200-optimize.md, "Re-runs") the fresh check differed from optimize's speedup
by -1.3% to +6.4% on GPU-bound configs whose intervals are about 1% wide. Inside the search every timed
variant (its module copy, inputs, compiled code and CUDA-graph pool) stays alive until all are profiled; a
fresh process holds one model. This script runs the real search of one config
(:class:`surrobench.tune.search.Search` on a :class:`surrobench.tune.bench.DeviceBench`, singles and stacking),
then times the recipe with the baseline
in windows of the search's size under three states, two windows each, in this order:

1. ``crowded``: every timed variant alive, as at the end of the search;
2. ``released``: every variant but the recipe and the baseline released (garbage collected, CUDA cache
   emptied);
3. ``rebuilt``: the recipe released as well, Dynamo reset, and the recipe built again from scratch;

then runs ``pairs`` pairs of fresh ``surrobench run`` processes of the baseline and the recipe (order
alternating, as ``--verify`` does). Prints and writes DIR/context.json: per window the baseline and recipe
medians and the speedup with its CI; the fresh speedup.

    python benchmarks/optimize_context.py --model meshgraphnet --shape 65536 --out DIR
    python benchmarks/optimize_context.py --model unet2d --shape 16 --device cpu --budget-s 20 --out DIR  # trial
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from surrobench.api.benchmark import sweep_plan
from surrobench.execution.interleave import open_variant
from surrobench.execution.remedies import candidate_remedies
from surrobench.execution.runner import prepare_model
from surrobench.records.paired import PairedSamples
from surrobench.tune.bench import DeviceBench, free_device
from surrobench.tune.fresh import _one_run
from surrobench.tune.request import DEFAULT_BUDGET_S, OptimizeRequest, remedy_names
from surrobench.tune.search import Search


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="meshgraphnet")
    ap.add_argument("--shape", type=int, default=65536)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--only", default=None, help="comma-separated remedy names (default: all)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    plan = sweep_plan(
        args.model, shapes=[args.shape], batches=[1], device=args.device, warmup=10, iters=100, input_sets=2
    )
    (cfg,) = plan.configs  # fp32 eager, seed 0, cudnn.benchmark off
    prepared = prepare_model(plan.surrogates[args.model], args.device, 0)
    request = OptimizeRequest(sweeps=(), budget_s=args.budget_s)
    started = time.monotonic()
    bench = DeviceBench.start(cfg, prepared, request, started + request.budget_s)
    search = Search(bench, request.rounds, budget_s=request.budget_s, deadline=started + request.budget_s)
    only = remedy_names(args.only, cfg.device)
    remedies = [r for r in candidate_remedies(cfg.device) if only is None or r.name in only]
    singles, best = search.singles(remedies)
    stacked, recipe, variant = search.stack(singles, best)
    print(f"# search {time.monotonic() - started:.0f} s: recipe {recipe.name or '(none)'}", flush=True)
    out: dict = {"config": f"{args.model}-{args.shape}", "recipe": recipe.name, "windows": [], "fresh": None}
    if variant is None:
        print("# no recipe: nothing to time", flush=True)
        (args.out / "context.json").write_text(json.dumps(out, indent=1))
        return
    for c in (*(c for _, c in singles), *stacked):
        sp = f"{c.speedup.median:.3f}x" if c.speedup else "-"
        print(f"#   {c.name}: {c.verdict} {sp}", flush=True)

    def window(state: str, v) -> None:
        search.window([v])
        base, rec = (h.samples_ms()[-search.last_rounds :] for h in (bench.baseline, v))
        sp = PairedSamples.interleaved(base, rec).speedup()
        row = {
            "state": state,
            "baseline_ms": float(np.median(base)),
            "recipe_ms": float(np.median(rec)),
            "speedup": sp.to_json(),
            "t_s": round(time.monotonic() - started, 1),
        }
        if cfg.device == "cuda":
            row["cuda_allocated_bytes"] = torch.cuda.memory_allocated()
        out["windows"].append(row)
        print(json.dumps(row), flush=True)

    for _ in range(2):
        window("crowded", variant)
    search.timed.clear()
    del singles, stacked, best
    free_device(cfg.device)
    for _ in range(2):
        window("released", variant)
    del variant
    free_device(cfg.device)
    torch._dynamo.reset()
    rebuilt = open_variant(recipe.apply(cfg), prepared)
    for _ in range(2):
        window("rebuilt", rebuilt)
    del rebuilt
    free_device(cfg.device)

    configs = {"baseline": cfg.to_json(), "recipe": recipe.apply(cfg).to_json()}
    rounds: dict[str, list] = {"baseline": [], "recipe": []}
    for i in range(args.pairs):
        for side in ("baseline", "recipe") if i % 2 == 0 else ("recipe", "baseline"):
            samples, _ = _one_run(configs[side], side, args.out / "fresh.db", args.out / f"{i}-{side}.json", 600)
            rounds[side].append(samples)
    n = min(len(r) for side in rounds.values() for r in side)
    fresh = PairedSamples.separate([r[:n] for r in rounds["baseline"]], [r[:n] for r in rounds["recipe"]]).speedup()
    out["fresh"] = {
        "speedup": fresh.to_json(),
        "baseline_ms": [float(np.median(r)) for r in rounds["baseline"]],
        "recipe_ms": [float(np.median(r)) for r in rounds["recipe"]],
        "configs": configs,
    }
    print(json.dumps(out["fresh"]), flush=True)
    (args.out / "context.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
