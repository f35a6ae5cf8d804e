"""Re-simulate a stored serve record's load points from its unloaded samples, for docs/benchmarks/h200-capacity.md.

For each measured load point of the record's first policy: the measured P99 beside the simulation's
(:func:`surrobench.analysis.capacity.simulated_point`, Poisson arrivals at the same rate) with the loop's time
charged as recorded (``loop_ms``, and ``saturated_ms``'s loaded excess) and without them, and the ratio simulated over measured.

Usage: PYTHONPATH=src python benchmarks/resimulate_serve.py SERVE.json
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

from surrobench.analysis.capacity import simulated_point
from surrobench.records.serve import ServePolicy, UnloadedLatency


def main(path: str) -> None:
    doc = json.load(open(path))
    unloaded = {u["batch"]: UnloadedLatency.from_json(u) for u in doc["unloaded"]}
    no_loop = {k: replace(u, loop_ms=0.0, saturated_ms=None) for k, u in unloaded.items()}
    served = doc["policies"][0]
    policy, target = ServePolicy(**served["policy"]), doc["target_p99_ms"]
    print(f"{doc['workload']['model']} {doc['env'].get('device_name')}, {policy.label()}, P99 target {target} ms")
    print("| rate rps | measured P99 ms | simulated | ratio | simulated, no loop charge | ratio |")
    print("|---|---|---|---|---|---|")
    for point in sorted(served["points"], key=lambda p: p["target_rps"]):
        rate = point["target_rps"]
        pcts = point["percentiles"]
        pcts = pcts[1] if isinstance(pcts[0], int) else pcts  # a stored (version, list) pair
        measured = next(p["value_ms"] for p in pcts if p["q"] == 0.99)
        sims = [simulated_point(u, policy, rate, target).p99_ms for u in (unloaded, no_loop)]
        cells = " | ".join(f"{s:.2f} | {s / measured:.2f}" for s in sims)
        print(f"| {rate:.1f} | {measured:.2f} | {cells} |")


if __name__ == "__main__":
    main(sys.argv[1])
