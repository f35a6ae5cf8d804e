"""optimize's table tells a candidate not faster because it was measured slower (its interval below 1, within the
margin ``rejected_slower`` needs) from one whose interval holds 1 (inconclusive), from the candidate's structured
fields: its deciding interval and its rounds."""

from __future__ import annotations

from synthetic import optimize_entry

from surrobench.report.optimize import rows


def _cand(name: str, lo: float, hi: float, noise: float = 0.11, **more) -> dict:
    speedup = {"median": (lo + hi) / 2, "ci95": [lo, hi], "noise_floor": noise}
    return {"name": name, "verdict": "rejected_not_faster", "reason": "planted", "speedup": speedup, **more}


def test_not_faster_reads_slower_inconclusive_or_unchanged_by_its_interval():
    entry = optimize_entry(
        {
            "candidates": [
                _cand("bf16", 0.80, 0.95),  # below 1, not below 1 / 1.11: not rejected_slower
                _cand("compile", 0.90, 1.10),
                _cand("tf32", 0.995, 1.005, noise=0.01),  # within 2% on both sides: the rule's unchanged
                _cand("channels_last", 1.04, 1.06, rounds=1),  # one round: not judged
                _cand("cudagraph", 0.90, 1.10) | {"verdict": "rejected_slower"},
            ]
        }
    )
    verdicts = {row["name"]: row["verdict"] for row in rows(entry)}
    assert verdicts == {
        "baseline": "-",
        "bf16": "rejected_not_faster (slower)",
        "compile": "rejected_not_faster (inconclusive)",
        "tf32": "rejected_not_faster (unchanged)",
        "channels_last": "rejected_not_faster (inconclusive)",
        "cudagraph": "rejected_slower",
    }
