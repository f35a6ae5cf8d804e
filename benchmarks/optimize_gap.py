"""Why can a torch.compile recipe time faster inside ``surrobench optimize`` than in a fresh ``surrobench run``?

On the H200 (docs/benchmarks/h200-optimize.md, "Ladder run") the U-Net at 512² with compile+tf32 timed
1.80 ms in its pairing inside optimize, ~2.9 ms as the parent of the next stack in the same process, and
2.56-2.60 ms in fresh processes. This script replays the search's sequence for one config with surrobench's
own interleaving (:mod:`surrobench.execution.interleave`) and records, per round of the recipe: the host
latency median, the CUDA-event device time median (a gap between the two is host overhead, e.g. guard
evaluation or launch), the SM clock (NVML) and the number of Dynamo cache entries on the model's
``forward`` code object. Then it times the recipe in fresh ``surrobench run`` processes with the default
and with a long warm-up.

    python benchmarks/optimize_gap.py --model unet2d --shape 512 --out DIR
    python benchmarks/optimize_gap.py --fresh-only --fresh host --out DIR   # fresh processes only

Writes DIR/gap.json (every round) and prints one line per round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from surrobench.api.benchmark import sweep_plan
from surrobench.execution.config import ExecConfig
from surrobench.execution.env import gpu_readings
from surrobench.execution.interleave import open_variant, time_round
from surrobench.execution.runner import prepare_model


#: Fresh ``surrobench run`` processes of the recipe: (label, extra options, extra environment). ``host``
#: alternates the default with Inductor's compile workers kept in-process (TORCHINDUCTOR_COMPILE_THREADS=1:
#: no subprocess pool alive while timing) and with CUDA graphs under torch.compile (reduce-overhead), which
#: removes the per-kernel launch cost if the compiled forward is bound by the host.
FRESH_SETS = {
    "first": [
        ("default", [], {}),
        ("long warm-up", ["--warmup", "300", "--iters", "200"], {}),
        ("cudnn-benchmark", ["--cudnn-benchmark"], {}),
        ("default again", [], {}),
    ],
    "host": [
        ("default", [], {}),
        ("compile threads 1", [], {"TORCHINDUCTOR_COMPILE_THREADS": "1"}),
        ("reduce-overhead", ["--compile-mode", "reduce-overhead"], {}),
        ("reduce-overhead", ["--compile-mode", "reduce-overhead"], {}),
        ("compile threads 1", [], {"TORCHINDUCTOR_COMPILE_THREADS": "1"}),
        ("default", [], {}),
    ],
}


def _cache_entries(code) -> int | None:
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list

        return len(_debug_get_cache_entry_list(code))
    except Exception:  # a private helper; absent in some versions
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="unet2d")
    ap.add_argument("--shape", type=int, default=512)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=42)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--fresh", choices=sorted(FRESH_SETS), default="first", help="which fresh runs follow")
    ap.add_argument("--fresh-only", action="store_true", help="skip the in-process rounds")
    ap.add_argument("--device", default="cuda", help="cpu for a trial of the script itself")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []

    plan = sweep_plan(
        args.model,
        shapes=[args.shape],
        batches=[1],
        device=args.device,
        warmup=args.warmup,
        iters=args.iters,
        input_sets=2,
    )
    (base,) = plan.configs  # fp32 eager, seed 0, cudnn.benchmark off
    prepared = prepare_model(plan.surrogates[args.model], args.device, 0)
    code = type(prepared.module).forward.__code__
    recipe_cfg = replace(base, precision="tf32", mode="compile")

    def record(phase: str, name: str, variant) -> None:
        r = variant.rounds[-1]
        row = {
            "phase": phase,
            "variant": name,
            "latency_median_ms": float(np.median(r.samples_ms)),
            "device_median_ms": float(np.median(r.device_samples_ms)) if r.device_samples_ms else None,
            "sm_clock_mhz": (gpu_readings() or {}).get("sm_clock_mhz"),
            "cache_entries": _cache_entries(code),
            "cudnn_benchmark_flag": torch.backends.cudnn.benchmark,
            "t_s": round(time.monotonic() - t0, 2),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)

    def rounds(phase: str, named: list[tuple[str, object]]) -> None:
        for _ in range(args.rounds):
            for name, v in named:
                time_round(v, args.warmup, args.iters)
                record(phase, name, v)

    t0 = time.monotonic()

    def opened_variant(name: str, cfg: ExecConfig):
        t = time.monotonic()
        v = open_variant(cfg, prepared)
        print(f"# opened {name}: setup {v.setup_ms / 1e3:.1f} s (wall {time.monotonic() - t:.1f} s)", flush=True)
        return v

    if not args.fresh_only:
        recipe = opened_variant("compile+tf32", recipe_cfg)
        rounds("1 recipe alone", [("compile+tf32", recipe)])
        baseline = opened_variant("baseline", base)
        rounds("2 with baseline", [("baseline", baseline), ("compile+tf32", recipe)])
        bench = opened_variant("cudnn_benchmark", replace(base, cudnn_benchmark=True))
        rounds("3 after eager cudnn_benchmark", [("cudnn_benchmark", bench), ("compile+tf32", recipe)])
        compiled = opened_variant("compile", replace(base, mode="compile"))
        rounds("4 after compile (dynamo reset)", [("compile", compiled), ("compile+tf32", recipe)])
        stack = opened_variant("compile+tf32+cudnn_benchmark", replace(recipe_cfg, cudnn_benchmark=True))
        rounds(
            "5 with compile+tf32+cudnn_benchmark", [("compile+tf32", recipe), ("compile+tf32+cudnn_benchmark", stack)]
        )
        rounds("6 recipe alone again", [("compile+tf32", recipe)])
        del recipe, baseline, bench, compiled, stack
        if args.device == "cuda":
            torch.cuda.empty_cache()

    fresh = []
    run = [sys.executable, "-m", "surrobench", "run", "--model", args.model, "--shape", str(args.shape)]
    run += ["--batch", "1", "--precision", "tf32", "--mode", "compile", "--device", args.device]
    for label, extra, env in FRESH_SETS[args.fresh]:
        out = args.out / f"fresh-{len(fresh)}.json"
        t = time.monotonic()
        argv = run + extra + ["--json", str(out)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ, **env})
        res = json.loads(out.read_text())["results"][0] if out.exists() else {}
        row = {
            "fresh": label,
            "rc": done.returncode,
            "wall_s": round(time.monotonic() - t, 1),
            "latency_median_ms": (res.get("latency_ms") or {}).get("median"),
            "device_median_ms": (res.get("device_ms") or {}).get("median"),
            "p95_ms": (res.get("latency_ms") or {}).get("p95"),
            "first_10_ms": [round(x, 3) for x in res.get("samples_ms", [])[:10]],
            "last_10_ms": [round(x, 3) for x in res.get("samples_ms", [])[-10:]],
        }
        if done.returncode:
            row["stderr"] = done.stderr[-500:]
        fresh.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "gap.json").write_text(json.dumps({"rounds": rows, "fresh": fresh}, indent=1))


if __name__ == "__main__":
    main()
