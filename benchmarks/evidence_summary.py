"""The tables of docs/benchmarks/h200-evidence.md from the folder benchmarks/gpu_evidence.sh fills.

    python3 benchmarks/evidence_summary.py FOLDER > docs/benchmarks/h200-evidence.md

Reads ``*-coverage.json`` and ``*-headroom.json`` (``diagnose --json``: ``context.evidence_checks``,
``context.headroom``, ``context.counters``), ``*-dedup.json`` (benchmarks/ncu_dedup.py), each step's ``.txt``
(its exit code and wall seconds) and ``versions.txt``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def _ms(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _wall(folder: Path, name: str) -> str:
    text = (folder / f"{name}.txt").read_text() if (folder / f"{name}.txt").is_file() else ""
    m = re.search(r"rc=(\d+) wall_s=(\d+)", text)
    return f"{m[2]} s (exit {m[1]})" if m else "not run"


def coverage_rows(folder: Path) -> list[str]:
    rows = []
    for path in sorted(folder.glob("*-coverage.json")) + sorted(folder.glob("*-headroom.json")):
        checks = json.loads(path.read_text())["context"].get("evidence_checks", {})
        for label, c in checks.items():
            own = None if c["coverage"] is None else c["coverage"] - (c.get("matched_coverage") or 0.0)
            rows.append(
                f"| {label} | {path.stem} | {_pct(own)} | {_pct(c.get('matched_coverage'))} | {_pct(c['coverage'])} "
                f"| {_pct(c['module_coverage'])} | {c['verdict']} | {_ms(c['timed_ms'])} | {_ms(c['profiled_step_ms'])} |"
            )
    return rows


def headroom_rows(folder: Path) -> list[str]:
    rows = []
    for path in sorted(folder.glob("*-headroom.json")):
        context = json.loads(path.read_text())["context"]
        for label, h in context.get("headroom", {}).items():
            c = context.get("counters", {}).get(label, {})
            times = "n/a" if h["headroom"] is None else f"{h['headroom']:.2f}x"
            rows.append(
                f"| {label} | {_ms(h['step_ms'])} | {_ms(h['roofline_bound_ms'])} | {times} | {_ms(h['kernel_ms'])} | "
                f"{h['launches']} ({h.get('past_ceiling', 0)} past a ceiling) | {_pct(h['covered_share'])} | "
                f"{c.get('passes', 'n/a')} | {c.get('ncu_wall_s') or 0:.1f} s |"
            )
    return rows


def dedup_rows(folder: Path) -> list[str]:
    rows = []
    for path in sorted(folder.glob("*-dedup.json")):
        d = json.loads(path.read_text())
        for name in ("all", "dedup"):
            r = d[name]
            problem = f" ({r['problem']['kind']})" if r.get("problem") else ""
            rows.append(
                f"| {d['config']} | {'identical launches once' if name == 'dedup' else 'every launch'}{problem} | "
                f"{r['launches']} | {r['replayed']} | {r['passes']} | {r['ncu_wall_s'] or 0:.1f} s | "
                f"{'yes' if d['same_launches'] else 'NO'} |"
            )
    return rows


def main(folder: Path) -> None:
    versions = (folder / "versions.txt").read_text().strip() if (folder / "versions.txt").is_file() else "(none)"
    steps = sorted(p.stem for p in folder.glob("*.txt") if p.stem != "versions")
    print("## Coverage of recipe steps, roofline headroom, bounded --counters (H200)\n")
    print("`OUT=... benchmarks/gpu_evidence.sh`, then `python3 benchmarks/evidence_summary.py evidence/`.\n")
    print("```\n" + versions + "\n```\n")
    print("Steps: " + "; ".join(f"{s} {_wall(folder, s)}" for s in steps) + ".\n")
    print("### Coverage: the share of kernel time attributed to ops and modules\n")
    print(
        "| config | run | by the profile | matched from eager | ops, in all | modules | verdict | timed ms | profiled ms |"
    )
    print("|---|---|---:|---:|---:|---:|---|---:|---:|")
    print("\n".join(coverage_rows(folder)) + "\n")
    print("### The recipe step against its roofline bound (Nsight Compute counters)\n")
    print("| config | step ms | roofline bound ms | headroom | kernels ms (ncu) | launches | covered | passes | ncu |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    print("\n".join(headroom_rows(folder)) + "\n")
    print("### --counters: identical launches measured once\n")
    print("| config | launches measured | launches | replayed | passes | ncu | same launches |")
    print("|---|---|---:|---:|---:|---:|---|")
    print("\n".join(dedup_rows(folder)))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
