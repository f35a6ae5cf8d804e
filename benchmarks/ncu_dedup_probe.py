"""Probe of a deduplicated ``--counters`` run (docs/benchmarks/h200-measured-advice.md, "What --counters costs"):
each ncu run of :func:`surrobench.collect.ncu.run_ncu` logged (wall s, launches read, problem, command), with the
enumeration's launch count, distinct signatures, :func:`replay_depth` and the launches a run at that depth replays.

Usage (repository root, a CUDA machine with ncu): PYTHONPATH=src python3 benchmarks/ncu_dedup_probe.py MODEL SHAPE BATCH
"""

import json
import sys
import tempfile
import time
from pathlib import Path

from surrobench.api.benchmark import sweep_plan
from surrobench.collect import ncu, ncu_dedup
from surrobench.collect.child import config_to_json

model, shape, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cfg = sweep_plan(model, shapes=[shape], batches=[batch], device="cuda").configs[0]
once = ncu._run_once


def logged(*args, **kwargs):
    t0 = time.perf_counter()
    run = once(*args, **kwargs)
    launches = run.kernels
    print(
        json.dumps(
            {
                "wall_s": round(time.perf_counter() - t0, 1),
                "launches": len(launches),
                "signatures": ncu_dedup.measured_count(launches) if launches else 0,
                "depth": (depth := ncu_dedup.replay_depth(launches)),
                "replayed": ncu_dedup.replayed_count(launches, depth),
                "problem": None if run.problem is None else [run.problem.kind, run.problem.message[:300]],
                "command": " ".join(run.command)[:400],
            }
        ),
        flush=True,
    )
    return run


ncu._run_once = logged
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "config.json"
    path.write_text(json.dumps(config_to_json(cfg)))
    t0 = time.perf_counter()
    done = ncu.run_ncu(path, Path(tmp), (), timeout_s=150)
    passes = sum(k.passes or 0 for k in done.kernels) + done.enumerated_passes
    print(json.dumps({"total_s": round(time.perf_counter() - t0, 1), "kernels": len(done.kernels), "passes": passes}))
