"""Turn the output folder of benchmarks/gpu_capacity.sh into the tables of docs/benchmarks/h200-capacity.md.

Usage: PYTHONPATH=src python3 benchmarks/capacity_summary.py /tmp/capacity   (the unpacked capacity.tar.gz)

Reads each step's JSON (serve-v2 for a serve step, capacity-v1 for an ``opt-*`` step) and the ``wall_s`` the
script appended to its text; prints markdown: predicted against measured capacity per serve setting, the
capacity objective against the latency recipe's serve run of the same model (same load), and the infeasible
target's answer with its wall time.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from surrobench.records.serve import Capacity, serve_from_json  # PYTHONPATH=src


def _wall_s(folder: Path, name: str) -> float | None:
    text = (folder / f"{name}.txt").read_text() if (folder / f"{name}.txt").exists() else ""
    found = re.findall(r"wall_s=([0-9.]+)", text)
    return float(found[-1]) if found else None


def _rps(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}" if v >= 10 else f"{v:.3g}"


def _capacity(doc: dict) -> dict | None:
    caps = [p["capacity"] for p in doc["policies"] if p.get("capacity")]
    return caps[0] if caps else None


def serve_rows(folder: Path) -> list[str]:
    rows = [
        "| setting | batch-1 isolated P50 / P99 ms | back to back P50 / P99 ms | idle threshold ms (batch 1 / 8) | "
        "batch-8 saturated / back-to-back mean ms | "
        "predicted rps | measured rps [first failing] | predicted / measured | loads | search s | step wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("*.json")):
        doc = json.loads(path.read_text())
        if not doc.get("schema", "").startswith("surrobench/serve") or path.stem == "infeasible":
            continue
        cap = _capacity(doc)
        by_size = {u.batch: u for u in serve_from_json(doc).unloaded}
        one = by_size.get(1)
        idle = " / ".join(f"{by_size[k].gap_ms:.2f}" if k in by_size else "-" for k in (1, 8))
        iso = f"{one.isolated_p50_ms:.2f} / {one.isolated_p99_ms:.2f}" if one else "-"
        b2b = f"{one.back_to_back_p50_ms:.2f} / {one.back_to_back_p99_ms:.2f}" if one else "-"
        full = by_size.get(8)
        loaded = "-" if full is None or full.saturated_ms is None else f"{full.saturated_ms:.3f}"
        loaded += f" / {sum(full.back_to_back_ms) / len(full.back_to_back_ms):.3f}" if full else ""
        if cap is None:
            continue
        if cap.get("infeasible"):  # answered without a load, or after loads that found no rate
            pred = "-" if cap.get("predicted_rps") is None else f"{cap['predicted_rps']:,.0f}"
            rows.append(
                f"| {path.stem} | {iso} | {b2b} | {idle} | {loaded} | {pred} | no rate found | - | {len(cap['steps'])} | "
                f"{cap['search_s'] or 0:.0f} | {_wall_s(folder, path.stem)} |"
            )
            continue
        lo, hi, pred = cap["capacity_rps"], cap["failing_rps"], cap.get("predicted_rps")
        mid = Capacity.from_json(cap).searched_rps
        ratio = f"{pred / mid:.2f}" if pred and mid else "-"
        search = f"{cap['search_s']:.0f}" if cap.get("search_s") is not None else "-"
        wall = _wall_s(folder, path.stem)
        rows.append(
            f"| {path.stem} | {iso} | {b2b} | {idle} | {loaded} | {_rps(pred)} | {_rps(lo)} [{_rps(hi)}] | {ratio} | "
            f"{len(cap['steps'])} | {search} | {'-' if wall is None else f'{wall:.0f}'} |"
        )
    return rows


def _policy(doc: dict) -> str:
    top = next((c for c in doc["candidates"] if c["recipe"] == doc["top"]), None)
    p = top and top.get("best_policy")
    return f"batch<={p['max_batch']} wait<={p['max_wait_ms']:g}ms" if p else "-"


def optimize_rows(folder: Path) -> list[str]:
    rows = [
        "| model | candidates: predicted rps at their best policy | top (its policy) | baseline measured | "
        "top measured | "
        "verdict | recipe | latency recipe's serve (batch<=8 wait<=1ms) | search s | step wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("opt-*.json")):
        doc = json.loads(path.read_text())
        model = path.stem.removeprefix("opt-")
        cands = "; ".join(
            f"{c['recipe']} {_rps(max(c['predicted_rps'].values(), default=0))}"
            + (" (inaccurate)" if c["accurate"] is False else "")
            for c in doc["candidates"]
        )
        latency = folder / f"{model}-recipe.json"
        lat = _capacity(json.loads(latency.read_text())) if latency.exists() else None

        def bracket(b):
            return "-" if not b else f"{_rps(b[0])} [{_rps(b[1])}]"

        wall = _wall_s(folder, path.stem)
        rows.append(
            f"| {model} | {cands} | {doc['top']} ({_policy(doc)}) | {bracket(doc['baseline_rps'])} | "
            f"{bracket(doc['top_rps'])} | "
            f"{doc['verdict'] or '-'} | {doc['recipe']} | "
            f"{bracket((lat['capacity_rps'], lat['failing_rps'])) if lat else '-'} | {doc['search_s']:.0f} | "
            f"{'-' if wall is None else f'{wall:.0f}'} |"
        )
    return rows


def infeasible_rows(folder: Path) -> list[str]:
    path = folder / "infeasible.json"
    if not path.exists():
        return []
    cap = _capacity(json.loads(path.read_text()))
    answer = cap.get("infeasible") if cap else None
    return [
        "| setting | answer | step wall s |",
        "|---|---|---|",
        f"| infeasible | {answer or 'searched (not infeasible)'} | {_wall_s(folder, 'infeasible') or '-'} |",
    ]


def main(folder: str) -> None:
    root = Path(folder)
    versions = (root / "versions.txt").read_text().strip() if (root / "versions.txt").exists() else ""
    print("# Capacity on the H200: predicted from the unloaded service times, verified under load\n")
    print(
        "Machine and date (`benchmarks/gpu_capacity.sh`'s versions.txt):\n\n"
        + "\n".join(f"    {v}" for v in versions.splitlines())
    )
    print(
        "\nMeasured with `OUT=... bash benchmarks/gpu_capacity.sh` (P99 <= 5 ms, requests of one 128² field, Poisson "
        "arrivals, 2 s per rate after a 0.5 s warm-up; serve steps at max batch 8, max wait 1 ms) and summarised by "
        "`PYTHONPATH=src python3 benchmarks/capacity_summary.py /tmp/capacity`. Goals: prediction within ±10% of the measured "
        "capacity; a verified search <= 3 minutes per setting; an infeasible target answered in <= 30 s.\n"
    )
    for title, rows in (
        ("Predicted against measured capacity", serve_rows(root)),
        ("optimize --objective capacity against the latency recipe", optimize_rows(root)),
        ("An infeasible target", infeasible_rows(root)),
    ):
        if len(rows) > 2:
            print(f"## {title}\n\n" + "\n".join(rows) + "\n")
    total = root / "total.txt"
    if total.exists():
        print(total.read_text().strip())


if __name__ == "__main__":
    main(sys.argv[1])
