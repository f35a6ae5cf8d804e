"""Summarize ``benchmarks/gpu_optimize.sh``: per config the recipe, its interleaved speedup and CI from
``surrobench optimize``, and what the fresh processes of ``optimize --verify`` measured for it.

Usage: python3 benchmarks/optimize_summary.py OUT_DIR   (reads OUT_DIR/opt-*.json)

The optimize speedup of a recipe is the one pooled over every window it shared with the baseline
(optimize-v1 ``recipe.speedup``; the recipe's candidate row in reports written before it existed).

Prints two tables: the configs (the fresh verdict as the call printed it and as the rule of
src/surrobench/results/optimize.py decides it now, from the stored medians; the fresh and the optimize time of the
config) and every candidate with its verdict, speedup, top op, error and time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from surrobench.results.measured_remedies import recipe_speedup, speedup_text
from surrobench.results.optimize import fresh_verdict, process_speedups
from surrobench.records.paired import Speedup


def _fresh(fresh: dict | None) -> tuple[str, str, str, str]:
    """(fresh speedup [CI], verdict, per-process baseline medians, per-process recipe medians) of a config's
    ``fresh`` object."""
    if not fresh:
        return "-", "-", "-", "-"
    base = "/".join(f"{ms:.3f}" for ms in fresh["baseline_ms"]) or "-"
    recipe = "/".join(f"{ms:.3f}" for ms in fresh["recipe_ms"]) or "-"
    return speedup_text(fresh.get("speedup")), fresh["verdict"], base, recipe


def _speedup(d: dict) -> Speedup:
    return Speedup(d["median"], tuple(d["ci95"]), d["noise_floor"])


def _verdict_now(c: dict) -> str:
    """The fresh verdict of the rule in force, recomputed from the stored config (the call may have printed
    another under an earlier rule)."""
    fresh, pooled = c.get("fresh"), recipe_speedup(c)
    if not fresh or not fresh.get("speedup") or not pooled:
        return "-"
    recipe = c["recipe"]
    units = process_speedups(recipe.get("window_speedups") or [], recipe.get("process_windows") or 0)
    return fresh_verdict(_speedup(pooled), _speedup(fresh["speedup"]), fresh["baseline_ms"], fresh["recipe_ms"], units)[
        0
    ]


def _per_window(c: dict) -> str:
    """The recipe's speedup in each timing window it shared with the baseline, in time order; the windows
    timed in pairs of fresh processes (the last ones) after ``proc``."""
    each = c["recipe"].get("window_speedups") or []
    procs = c["recipe"].get("process_windows") or 0
    inside = " ".join(f"{w:.2f}" for w in each[: len(each) - procs])
    return (inside + (f"; proc {' '.join(f'{w:.2f}' for w in each[len(each) - procs :])}" if procs else "")) or "-"


def _top(x: dict) -> str:
    """The top op and its share; a kernel name (what a CUDA-graph replay shows) cut to 40 characters."""
    top = x.get("top_op")
    if not top:
        return "-"
    name = top["name"] if len(top["name"]) <= 40 else top["name"][:39] + "…"
    return f"{name} {top['share']:.0%}"


def _ladder_order(path: Path) -> tuple[str, int]:
    """opt-fno2d-128 before opt-fno2d-512 (by model, then rung size)."""
    stem, _, size = path.stem.rpartition("-")
    return (stem, int(size)) if size.isdigit() else (path.stem, 0)


def main(out: Path) -> None:
    rows, cands = [], []
    for path in sorted(out.glob("opt-*.json"), key=_ladder_order):
        name = path.stem.removeprefix("opt-")
        for c in json.loads(path.read_text())["configs"]:
            best = next((x for x in c["candidates"] if x["name"] == "+".join(c["recommended"])), None)
            fresh = c.get("fresh")
            rows.append(
                (
                    name,
                    c["baseline"]["median_ms"],
                    "+".join(c["recommended"]) or "none",
                    speedup_text(recipe_speedup(c)) if best else "-",
                    _per_window(c),
                    *_fresh(fresh),
                    _verdict_now(c),
                    f"{best['rel_l2']:.1e}" if best and best["rel_l2"] is not None else "-",
                    f"{c['elapsed_s']:.0f}",
                    f"{fresh['elapsed_s']:.0f}" if fresh else "-",
                )
            )
            cands.append((name, "baseline", "-", "-", _top(c["baseline"]), "-", "-", "-", "-"))
            for x in c["candidates"]:
                cands.append(
                    (
                        name,
                        x["name"],
                        x["verdict"],
                        speedup_text(x.get("speedup")),
                        _top(x),
                        "-" if x["rel_l2"] is None else f"{x['rel_l2']:.1e}",
                        "-" if x["setup_s"] is None else f"{x['setup_s']:.1f}",
                        f"{x['time_s']:.1f}",
                        x["reason"][:110],
                    )
                )
            cands += [(name, t["name"], "not tried", "-", "-", "-", "-", "-", t["reason"]) for t in c["not_tried"]]
            if fresh:
                print(f"{name}: fresh {fresh['verdict']}: {fresh['reason']}")
    print()
    print(
        "| config | baseline ms | recipe | optimize speedup [95% CI] | per window | fresh speedup [95% CI] "
        "| fresh verdict | fresh baseline ms per process | fresh recipe ms per process | verdict by today's rule "
        "| rel L2 | optimize s | fresh s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(v if not isinstance(v, float) else f"{v:.3f}") for v in r) + " |")
    print()
    print("| config | candidate | verdict | speedup [95% CI] | top op | rel L2 | setup s | time s | reason |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cands:
        print("| " + " | ".join(str(v).replace("|", "/") for v in c) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
