"""Summary of benchmarks/gpu_diagnose_thirdparty.sh: per model, what the diagnosis said and what was measured.

    python3 benchmarks/thirdparty_summary.py DB WORK_DIR

Reads ``WORK_DIR/diagnose_NAME.json`` (the findings and the per-operator roofline) and the runs tagged
``diagnose:NAME``, ``run:NAME`` and ``compile:NAME`` in the database ``DB`` (configs finished before a
timeout are there too). Prints markdown: for each model the top findings, the head of its roofline, a table of
median latency by precision and mode (failed configs show their explained cause), and the speedups the
findings' actions predict, measured against eager fp32.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from surrobench.execution.failures import recorded_cause
from surrobench.results.store import ResultStore

MODES = ("eager", "cudagraph", "compile")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def _results(store: ResultStore, name: str) -> list:
    """Configs of the measurement runs of ``name`` (the diagnosed run's eager fp32 config too)."""
    found = []
    for tag in (f"run:{name}", f"compile:{name}", f"diagnose:{name}"):
        for summary in store.list_runs(tag=tag):
            found += store.load_run(summary.run_id).results
    return found


def _cell(r) -> str:
    if r.status == "ok":
        return f"{r.latency_ms.median:.3f}"
    return f"{r.status}: {recorded_cause(r.error, r.extra).cause_id}"


def _findings(doc: dict) -> list[str]:
    lines = ["| kind | severity | est. gain ms | summary |", "|---|---|---|---|"]
    for f in doc["findings"][:5]:
        gain = "-" if f["estimated_gain_ms"] is None else f"{f['estimated_gain_ms']:.3f}"
        lines.append(f"| {f['kind']} | {f['severity']} | {gain} | {f['summary']} |")
    return lines


def _roofline(doc: dict) -> list[str]:
    lines = []
    for config, roof in doc["context"].get("roofline", {}).items():
        lines += [
            f"roofline of {config} ({roof['precision']}, ridge {roof['ridge_flop_per_byte']:.1f} FLOP/byte, "
            f"{roof['ceilings_note']}):",
            "",
            "| op | share | FLOPs | bytes | FLOP/byte | TFLOP/s | GB/s | bound |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for o in roof["ops"][:6]:
            intensity = "unknown" if o["intensity"] is None else f"{o['intensity']:.2f}"
            tflops = "-" if o["achieved_tflops"] is None else f"{o['achieved_tflops']:.2f}"
            flops = "unknown" if o["flops"] is None else f"{o['flops']:.3g}"
            lines.append(
                f"| {o['name']} | {o['share']:.0%} | {flops} | {o['bytes']:.3g} | {intensity} | {tflops} | "
                f"{o['achieved_gbps']:.0f} | {o['bound']} |"
            )
    return lines


def _measured(results: list) -> tuple[list[str], list[str]]:
    """The latency table and the speedup / failure lines."""
    by = {(r.precision, r.mode): r for r in results}  # a later run of the same config replaces an earlier one
    lines = ["| precision | " + " | ".join(f"{m} ms" for m in MODES) + " |", "|---" * (len(MODES) + 1) + "|"]
    for p in PRECISIONS:
        lines.append(f"| {p} | " + " | ".join(_cell(by[(p, m)]) if (p, m) in by else "-" for m in MODES) + " |")
    base = by.get(("fp32", "eager"))
    checks = []
    if base is not None and base.status == "ok":
        for (p, m), r in sorted(by.items()):
            if r.status == "ok" and (p, m) != ("fp32", "eager"):
                checks.append(
                    f"- {p} {m}: {base.latency_ms.median / r.latency_ms.median:.2f}x eager fp32 "
                    f"({base.latency_ms.median:.3f} -> {r.latency_ms.median:.3f} ms)"
                )
    for (p, m), r in sorted(by.items()):
        if r.status != "ok":
            cause = recorded_cause(r.error, r.extra)
            checks.append(f"- {p} {m} failed [{cause.cause_id}]: {cause.line} (error: {r.error})")
    return lines, checks


def main(db: str, work: str) -> None:
    names = sorted(p.stem.removeprefix("diagnose_") for p in Path(work).glob("diagnose_*.json"))
    with ResultStore(Path(db)) as store:
        print("# Third-party models: diagnosis and measurements\n")
        for name in names:
            doc = json.loads((Path(work) / f"diagnose_{name}.json").read_text())
            print(f"## {name} (run {doc['context'].get('run_id')} on {doc['context'].get('device_name')})\n")
            table, checks = _measured(_results(store, name))
            for block in (_findings(doc), _roofline(doc), table, checks or ["- no measurement"]):
                if block:
                    print("\n".join(block) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: thirdparty_summary.py DB WORK_DIR")
    main(sys.argv[1], sys.argv[2])
