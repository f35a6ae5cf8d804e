"""The measured diagnosis against what optimize measured, config by config (docs/benchmarks/h200-counters.md).

    python benchmarks/counters_vs_optimize.py tests/fixtures/h200

For each ``diagnose_NAME.json(.gz)`` with an ``opt-*.json(.gz)`` of the same config label in the folder: the
measured findings that today's code derives from the run's Nsight Compute counters (stored in the diagnose
JSON, ``context.counters``) against the ceilings in ``calibrate.json``, each with the remedies it names
(structured ids, :attr:`surrobench.records.findings.Finding.remedies`); then, per remedy, what optimize measured
on its own (its single candidate: verdict, speedup and the ms it saved, baseline median minus its median) and
whether its recommended recipe holds it; a stacked clause (``tf32`` and ``compile`` together) by the candidate of
exactly its remedies, in any order (:func:`stack_candidate`), ``faster`` when its speedup
over the baseline is faster by the rule. The check of the measured diagnosis: each named remedy is ``faster``
(accepted alone, or part of the recipe), ``slower``, ``accuracy`` (rejected by the accuracy guard, which no
counter sees), ``infeasible`` or ``untried``; and the top measured finding's estimated gain is within 2x of the
largest gain one of its remedies measured alone.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from surrobench.analysis.detect_counters import counter_findings, merge_measured
from surrobench.analysis.diagnose import HostFloor, cap_at_host_floor
from surrobench.results.measured_remedies import attach_one, cited_measurements
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import ConfigCounters
from surrobench.records.findings import Finding, rank_findings
from surrobench.records.paired import Speedup
from surrobench.records.vocab import remedy_id

#: The issue's tolerance for the top finding's gain against its remedy's measured gain (a factor, both ways).
GAIN_FACTOR = 2.0


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _ceilings(folder: Path) -> Ceilings:
    doc = _load(folder / "calibrate.json")
    return Ceilings(doc["device_name"], doc["copy_gbps"], doc["matmul_tflops"])


def stored_findings(doc: dict, label: str, ceilings: Ceilings) -> list[Finding]:
    """The measured findings today's code derives from a stored diagnosis ``doc``'s counters of config ``label``,
    merged as diagnose merges them with the config's stored ``launch_bound`` finding
    (:func:`surrobench.analysis.detect_counters.merge_measured`; its kind, severity and config are what the merge
    reads), kernel-side gains capped at the host's floor where the document holds it (``context.host_floor``,
    diagnosis-v5: :mod:`surrobench.analysis.diagnose`), ranked; the launch_bound finding itself left out."""
    launch = [
        Finding(f["kind"], f["severity"], f["summary"], (), "", config=label)
        for f in doc["findings"]
        if f["kind"] == "launch_bound" and f["config"] == label
    ]
    measured = counter_findings(label, ConfigCounters.from_json(doc["context"]["counters"][label]), ceilings)
    merged = [f for f in merge_measured(launch, {label: measured}) if f.kind != "launch_bound"]
    floors = {k: HostFloor.from_json(v) for k, v in doc["context"].get("host_floor", {}).items()}
    return rank_findings(cap_at_host_floor(merged, floors))


def checks(folder: Path) -> list[dict]:
    """One row per config with both a diagnosis and an optimize report in ``folder``."""
    ceilings = _ceilings(folder)
    optimized = {}
    for path in sorted(folder.glob("opt-*.json*")):
        for cfg in _load(path)["configs"]:
            optimized[cfg["label"]] = cfg
    rows = []
    for path in sorted(folder.glob("diagnose_*.json*")):
        doc = _load(path)
        for label, stored in doc["context"].get("counters", {}).items():
            if label not in optimized or stored.get("problem"):
                continue
            findings = stored_findings(doc, label, ceilings)
            opt = optimized[label]
            base_ms = opt["baseline"]["median_ms"]
            singles = {c["name"]: c for c in opt["candidates"] if c.get("stacked_on") is None}
            measured, advised_slower = [], []
            cited = cited_measurements(opt)
            for f in findings:
                # each clause as the diagnosis cites optimize's measurements: still advised where it names a remedy
                for clause, kept in zip(f.clauses, [bool(c.remedies) for c in attach_one(f, cited, cited, {}).clauses]):
                    if clause.stacked:
                        c = stack_candidate(opt, clause.remedies) or {}
                        outcome = (
                            ("faster" if Speedup.from_json(c["speedup"]).faster() else "slower") if c else "untried"
                        )
                        measured.append((f.kind, "+".join(clause.remedies), outcome, *_gain(c, base_ms)))
                        if outcome == "slower" and kept:
                            advised_slower.append((f.kind, "+".join(clause.remedies)))
                        continue
                    for remedy in clause.remedies:
                        c = singles.get(remedy, {})
                        outcome = _outcome(c.get("verdict"), remedy, opt)
                        measured.append((f.kind, remedy, outcome, *_gain(c, base_ms)))
                    if kept and clause.remedies and not clause.stacked:
                        outcomes = [m[2] for m in measured[-len(clause.remedies) :]]
                        if all(o == "slower" for o in outcomes):
                            advised_slower.append((f.kind, "+".join(clause.remedies)))
            top = findings[0] if findings else None
            saved_by_top = [m[4] for m in measured if top and m[0] == top.kind and m[4] is not None]
            best = max(saved_by_top) if saved_by_top else None
            ratio = top.estimated_gain_ms / best if top and top.estimated_gain_ms and best else None
            rows.append(
                {
                    "config": label,
                    "baseline_ms": base_ms,
                    "findings": [(f.kind, f.severity, f.estimated_gain_ms, f.remedies) for f in findings],
                    "measured": measured,
                    "advised_slower": advised_slower,
                    "outcomes": sorted({m[2] for m in measured}),
                    "top": top.kind if top else None,
                    "top_gain_ms": top.estimated_gain_ms if top else None,
                    "top_remedy_saved_ms": best,
                    "gain_ratio": ratio,
                    "within_factor": ratio is not None and 1 / GAIN_FACTOR <= ratio <= GAIN_FACTOR,
                    "recipe": opt["recommended"],
                }
            )
    return rows


def stack_candidate(entry: dict, remedies: tuple[str, ...]) -> dict | None:
    """The timed candidate of exactly ``remedies`` applied together, in any order, or None."""
    wanted = set(remedies)
    return next(
        (c for c in entry["candidates"] if c.get("speedup") and {remedy_id(n) for n in c["name"].split("+")} == wanted),
        None,
    )


def _gain(candidate: dict, base_ms: float) -> tuple[float | None, float | None]:
    """A candidate's speedup over the baseline and the ms it saved (baseline median minus its median)."""
    speedup = (candidate.get("speedup") or {}).get("median")
    saved = base_ms - candidate["median_ms"] if candidate.get("median_ms") is not None else None
    return speedup, saved


def _outcome(verdict: str | None, remedy: str, opt: dict) -> str:
    """What optimize made of ``remedy`` (module docstring): its single's verdict, or its place in the recipe."""
    if verdict == "accepted" or remedy in opt["recommended"]:
        return "faster"
    not_faster = {"rejected_slower": "slower", "rejected_not_faster": "slower"}  # v2 documents: both one verdict
    return {**not_faster, "rejected_accuracy": "accuracy", "infeasible": "infeasible"}.get(verdict or "", "untried")


def main(folder: str) -> None:
    for row in checks(Path(folder)):
        print(f"## {row['config']} (baseline {row['baseline_ms']:.3f} ms; optimize's recipe {'+'.join(row['recipe'])})")
        for kind, severity, gain, remedies in row["findings"]:
            gain_text = "-" if gain is None else f"{gain:.3f} ms"
            print(f"  finding {kind:16s} {severity:6s} gain {gain_text:>10s}  remedies {','.join(remedies) or '-'}")
        for kind, remedy, outcome, speedup, saved in row["measured"]:
            sp = "-" if speedup is None else f"{speedup:.2f}x"
            sv = "-" if saved is None else f"{saved:.3f} ms"
            print(f"  optimize {kind:16s} {remedy:26s} {outcome:10s} alone {sp:>7s} saved {sv}")
        ratio = "-" if row["gain_ratio"] is None else f"{row['gain_ratio']:.2f}"
        print(
            f"  check: named remedies {', '.join(row['outcomes'])}; top {row['top']} gain "
            f"{row['top_gain_ms'] or 0:.3f} ms / measured {row['top_remedy_saved_ms'] or 0:.3f} ms = {ratio} "
            f"(within {GAIN_FACTOR:g}x: {row['within_factor']})"
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
