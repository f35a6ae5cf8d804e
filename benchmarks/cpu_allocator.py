"""The CPU allocator's state and the timing of a model with large fp32 temporaries: each case in a fresh process.

For each size N of a two-input model (``(B, 64)`` and ``(N, 2)``, two ``(B, N, 64)`` fp32 temporaries per call,
batch 4) and each order (the config timed first in the process, or after optimize's fp32 and fp64 references),
with glibc's dynamic mmap threshold (as before) and with the thresholds pinned
(:func:`surrobench.execution.memory.pin_malloc_thresholds`): the median of 40 timed calls (ms) and the minor page
faults per timed call. Prints the docs/benchmarks/cpu-allocator.md table (markdown).

    PYTHONPATH=src python benchmarks/cpu_allocator.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MODEL = """
import torch


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)

    def forward(self, u, y):
        h = torch.tanh(self.lin(u)[:, None, :] * y[None, :, :1]) * y[None, :, 1:2]
        return (h * h).sum(-1)


def build():
    return TwoInputs()


def example_inputs(batch, shape):
    return torch.randn(batch, 64), torch.randn(shape, 2)
"""

CASE = """
import json, sys, torch
import surrobench.execution.runner as runner
from surrobench.execution.config import ExecConfig
from surrobench.execution.reference import reference_outputs
from surrobench.workload.loader import resolve_model
from surrobench.workload.spec import ShapeSpec

spec, n, order, pinned = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "pinned"
if not pinned:
    runner.pin_malloc_thresholds = lambda: False  # glibc's dynamic threshold, as before the fix
torch.set_num_threads(1)
cfg = ExecConfig(spec, ShapeSpec(size=n), 4, "fp32", "cpu", "eager", 5, 40, False, 0, 1, threads=1)
prepared = runner.prepare_model(resolve_model(spec), "cpu", 0)
if order == "after_references":
    reference_outputs(cfg, prepared)
r = runner.run_config(cfg, prepared)
print(json.dumps([r.latency_ms.median, r.extra["minor_faults_per_call"]]))
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "two_inputs.py"
        model.write_text(MODEL)
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        print("| N | temporary MiB | thresholds | order | median ms | minor faults per call |")
        print("|---|---|---|---|---|---|")
        for n in (4096, 16384):
            for pinned in ("dynamic", "pinned"):
                for order in ("first", "after_references"):
                    out = subprocess.run(
                        [sys.executable, "-c", CASE, f"{model}:build", str(n), order, pinned],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=True,
                    )
                    median, faults = json.loads(out.stdout.strip().splitlines()[-1])
                    mib = 4 * n * 64 * 4 / 2**20
                    print(f"| {n} | {mib:.0f} | {pinned} | {order} | {median:.2f} | {faults:.0f} |", flush=True)


if __name__ == "__main__":
    main()
