"""Summarize ``benchmarks/gpu_optimize.sh``: per config the recipe, its interleaved speedup and CI from
``surrobench optimize``, and the speedup a fresh pair of ``surrobench run`` processes measured for it.

Usage: python3 benchmarks/optimize_summary.py OUT_DIR   (reads OUT_DIR/opt-*.json and OUT_DIR/verify-*.json)

Prints two tables: the configs (reproduced = the fresh runs' speedup lies inside the optimize CI) and every
candidate with its verdict, speedup, error and the time it took.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _speed(sp: dict | None) -> str:
    if not sp:
        return "-"
    return f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]"


def _fresh(verify: dict | None) -> tuple[str, str]:
    """Speedup base/recipe of the fresh runs (compare gives NEW/BASE: its inverse) and whether it lies in CI."""
    if not verify or not verify.get("configs"):
        return "-", None
    ratio = verify["configs"][0].get("median_ratio")
    if not ratio:
        return "-", None
    lo, hi = ratio["ci95"]
    return f"{1 / ratio['ratio']:.2f}x [{1 / hi:.2f}, {1 / lo:.2f}]", 1 / ratio["ratio"]


def main(out: Path) -> None:
    rows, cands = [], []
    for path in sorted(out.glob("opt-*.json")):
        name = path.stem.removeprefix("opt-")
        doc = json.loads(path.read_text())
        verify_path = out / f"verify-{name}.json"
        verify = json.loads(verify_path.read_text()) if verify_path.exists() else None
        for c in doc["configs"]:
            best = next((x for x in c["candidates"] if x["name"] == "+".join(c["recommended"])), None)
            fresh, value = _fresh(verify)
            inside = "-"
            if best and value is not None:
                lo, hi = best["speedup"]["ci95"]
                inside = "yes" if lo <= value <= hi else "no"
            rows.append(
                (
                    name,
                    c["baseline"]["median_ms"],
                    "+".join(c["recommended"]) or "none",
                    _speed(best["speedup"]) if best else "-",
                    fresh,
                    inside,
                    f"{best['rel_l2']:.1e}" if best and best["rel_l2"] is not None else "-",
                    f"{c['elapsed_s']:.0f}",
                )
            )
            for x in c["candidates"]:
                cands.append(
                    (
                        name,
                        x["name"],
                        x["verdict"],
                        _speed(x.get("speedup")),
                        "-" if x["rel_l2"] is None else f"{x['rel_l2']:.1e}",
                        "-" if x["setup_s"] is None else f"{x['setup_s']:.1f}",
                        f"{x['time_s']:.1f}",
                        x["reason"][:110],
                    )
                )
            cands += [
                (name, n, "not tried", "-", "-", "-", "-", r)
                for n, r in ((t["name"], t["reason"]) for t in c["not_tried"])
            ]
    print(
        "| config | baseline ms | recipe | optimize speedup [95% CI] | fresh runs speedup [95% CI] | reproduced | rel L2 | config s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(v if not isinstance(v, float) else f"{v:.3f}") for v in r) + " |")
    print()
    print("| config | candidate | verdict | speedup [95% CI] | rel L2 | setup s | time s | reason |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cands:
        print("| " + " | ".join(str(v).replace("|", "/") for v in c) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
