"""Why torch.compile ran slower than eager on three H200 configs (docs/benchmarks/h200-counters.md,
"The check against optimize"): the U-Net at 256² batch 8 (compile 0.54x), the PINN MLP at 65,536 points
(compile 0.91x) and the zoo FNO at 256² batch 8 (compile 0.69x, tf32+compile 0.89x).

Each variant is opened as ``surrobench optimize`` opens a candidate (:func:`surrobench.execution.interleave.open_variant`:
its own copy of the module, Dynamo reset for a compiled one), timed in ``--rounds`` rounds interleaved with the
fp32 eager baseline (:func:`surrobench.execution.interleave.time_round`), then, after its timing, profiled for
one kernel table (torch.profiler, 3 steps: kernels by device time). The profiler never shares a timing.

Variants: ``compile`` (Inductor defaults), ``compile`` with ``torch._inductor.config.layout_optimization = False``
(Inductor's choice of channels_last for convolutions turned off), eager ``channels_last``, ``tf32`` and
``tf32+compile``. The candidate cause for the U-Net: Inductor's layout optimization runs the fp32 convolutions
in NHWC, where cuDNN picks slower fp32 kernels (eager channels_last alone ran 0.44x); with TF32 the NHWC
tensor-core kernels are fast. For the PINN: Inductor lowers ``addmm`` to an extern cuBLAS ``mm`` and fuses the
bias add with ``tanh`` in one Triton kernel, so the step launches as many kernels as eager does. For the FNO, whose
spectral layers run on complex tensors (cuFFT, complex einsum): the same variants as the U-Net's but eager
channels_last, the candidate causes being Inductor's layout optimization (NHWC convolutions with copies to and
from the NCHW layout the complex fallbacks keep) and the complex operators Inductor leaves to eager.

    python benchmarks/compile_causes.py --out DIR                  # every config
    python benchmarks/compile_causes.py --only pinn --device cpu --shape-pinn 1024 --out DIR   # a CPU trial

Writes DIR/compile_causes.json (every round and every kernel table) and prints one line per variant.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from surrobench.api.benchmark import sweep_plan
from surrobench.execution.interleave import open_variant, time_round
from surrobench.execution.config import execution_settings
from surrobench.execution.runner import prepare_model

#: (variant name, ExecConfig changes, Inductor config overrides) per model.
VARIANTS = {
    "unet2d": [
        ("compile", {"mode": "compile"}, {}),
        ("compile, layout_optimization off", {"mode": "compile"}, {"layout_optimization": False}),
        ("channels_last", {"channels_last": True}, {}),
        ("tf32", {"precision": "tf32"}, {}),
        ("tf32+compile", {"precision": "tf32", "mode": "compile"}, {}),
    ],
    "pinn-mlp": [("compile", {"mode": "compile"}, {})],
    "fno2d": [
        ("compile", {"mode": "compile"}, {}),
        ("compile, layout_optimization off", {"mode": "compile"}, {"layout_optimization": False}),
        ("tf32", {"precision": "tf32"}, {}),
        ("tf32+compile", {"precision": "tf32", "mode": "compile"}, {}),
        (
            "tf32+compile, layout_optimization off",
            {"precision": "tf32", "mode": "compile"},
            {"layout_optimization": False},
        ),
    ],
}


def kernel_table(variant, device: str, top: int = 10) -> list[dict]:
    """The variant's kernels over 3 steps by device time (torch.profiler), ``top`` rows; on a CPU, its ops by
    self CPU time (a trial of the script)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with execution_settings(variant.cfg), torch.inference_mode(), torch.profiler.profile(activities=activities) as prof:
        for i in range(3):
            variant.step(i)
        if device == "cuda":
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        if device == "cuda":
            if getattr(e, "device_type", None) != torch.autograd.DeviceType.CUDA:
                continue
            us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        else:
            us = e.self_cpu_time_total
        if us:
            rows.append({"kernel": e.key[:160], "calls": e.count // 3, "us_per_step": us / 3})
    rows.sort(key=lambda r: -r["us_per_step"])
    return rows[:top]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=sorted(VARIANTS), default=None)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shape-unet", type=int, default=256)
    ap.add_argument("--shape-pinn", type=int, default=65536)
    ap.add_argument("--shape-fno", type=int, default=256)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    configs = {"unet2d": (args.shape_unet, 8), "pinn-mlp": (args.shape_pinn, 1), "fno2d": (args.shape_fno, 8)}
    doc = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu", "torch": torch.__version__}
    results = doc.setdefault("results", [])
    t0 = time.monotonic()
    for model, variants in VARIANTS.items():
        if args.only and model != args.only:
            continue
        shape, batch = configs[model]
        plan = sweep_plan(
            model, shapes=[shape], batches=[batch], device=args.device, warmup=args.warmup, iters=args.iters
        )
        (base_cfg,) = plan.configs
        prepared = prepare_model(plan.surrogates[model], args.device, 0)
        baseline = open_variant(base_cfg, prepared)
        results.append({"model": model, "variant": "eager fp32", "kernels": kernel_table(baseline, args.device)})
        for name, changes, inductor in variants:
            patch = torch._inductor.config.patch(**inductor) if inductor else contextlib.nullcontext()
            with patch:
                variant = open_variant(replace(base_cfg, **changes), prepared)
            base_ms, ms = [], []
            for _ in range(args.rounds):
                for v, out in ((baseline, base_ms), (variant, ms)):
                    time_round(v, args.warmup, args.iters)
                    out.append(float(np.median(v.rounds[-1].samples_ms)))
            ratios = np.array(base_ms) / np.array(ms)
            row = {
                "model": model,
                "shape": shape,
                "batch": batch,
                "variant": name,
                "setup_s": variant.setup_ms / 1e3,
                "baseline_round_ms": base_ms,
                "variant_round_ms": ms,
                "speedup_median": float(np.median(ratios)),
                "speedup_range": [float(ratios.min()), float(ratios.max())],
                "kernels": kernel_table(variant, args.device),
                "t_s": round(time.monotonic() - t0, 1),
            }
            results.append(row)
            print(
                f"{model} {shape} b{batch} {name}: {np.median(ms):.3f} ms vs {np.median(base_ms):.3f} ms, "
                f"speedup {row['speedup_median']:.2f}x [{ratios.min():.2f}, {ratios.max():.2f}] over "
                f"{args.rounds} rounds, setup {row['setup_s']:.1f} s",
                flush=True,
            )
            (args.out / "compile_causes.json").write_text(json.dumps(doc, indent=1))
            del variant
            gc.collect()
            if args.device == "cuda":
                torch.cuda.empty_cache()
    (args.out / "compile_causes.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
