"""Markdown tables of `surrobench diagnose --counters` runs (docs/benchmarks/h200-counters.md).

    python benchmarks/counters_summary.py tests/fixtures/h200

Per config (one ``diagnose_NAME.json(.gz)`` each): what ``--counters`` cost (launches, replay passes, ncu wall
seconds, share of the profiled kernel time the selected kernels held); then its measured kernel time by kernel
class and verdict (bound and limiting unit), with the median measured arithmetic intensity and achieved rate of
each group's roofline points; then the measured findings today's code derives from the stored counters against
the ceilings in ``calibrate.json``, with the remedies each names.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from surrobench.analysis.detect_counters import counter_findings
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters
from surrobench.records.findings import rank_findings


def _load(path: Path) -> dict:
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as f:
        return json.load(f)


def main(folder: str) -> None:
    root = Path(folder)
    doc = _load(root / "calibrate.json")
    ceilings = Ceilings(doc["device_name"], doc["copy_gbps"], doc["matmul_tflops"])
    print("| config | launches | passes | ncu s | selected kernels' share |")
    print("|---|---|---|---|---|")
    runs = []
    for path in sorted(root.glob("diagnose_*.json*")):
        for label, stored in _load(path)["context"]["counters"].items():
            counters = ConfigCounters.from_json(stored)
            runs.append((label, counters))
            print(
                f"| {label} | {len(counters.kernels)} | {counters.passes} | {counters.ncu_wall_s or 0:.1f} | "
                f"{counters.covered_share or 0:.0%} |"
            )
    for label, counters in runs:
        total = sum(k.counters.duration_ns for k in counters.kernels)
        groups = defaultdict(list)
        for k in counters.kernels:
            groups[(k.kernel_class or "unjoined", k.bound, k.limiter)].append(k)
        print(f"\n**{label}**\n")
        print("| class | verdict (limiter) | share | launches | FLOP/B (median) | TFLOP/s (median) |")
        print("|---|---|---|---|---|---|")
        for (cls, bound, limiter), ks in sorted(
            groups.items(), key=lambda kv: -sum(k.counters.duration_ns for k in kv[1])
        ):
            share = sum(k.counters.duration_ns for k in ks) / total
            if share < 0.02:
                continue
            ai = [k.arithmetic_intensity for k in ks if k.arithmetic_intensity is not None]
            rate = [k.achieved_tflops for k in ks if k.achieved_tflops is not None]
            ai_text = f"{statistics.median(ai):.1f}" if ai else "-"
            rate_text = f"{statistics.median(rate):.2f}" if rate else "-"
            print(f"| {cls} | {bound} ({limiter}) | {share:.0%} | {len(ks)} | {ai_text} | {rate_text} |")
        print()
        for f in rank_findings(counter_findings(label, counters, ceilings)):
            gain = "" if f.estimated_gain_ms is None else f", gain {f.estimated_gain_ms:.2f} ms"
            print(f"- `{f.kind}` {f.severity}{gain}: {f.summary}; remedies {', '.join(f.remedies) or 'none'}")


if __name__ == "__main__":
    main(*sys.argv[1:])
