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


def test_the_reason_reads_the_interval_as_the_verdict_cell_does():
    """A fresh-user trial: channels_last 0.79x [0.66, 0.95] at a 6.1% noise floor, all below 1 but not past 1 / 1.061,
    read "rejected_not_faster (slower)" beside the reason "inconclusive, too noisy to judge" and the test for faster.
    The reason (:meth:`~surrobench.records.paired.Speedup.reason`) starts with the word the cell gives."""
    from surrobench.records.paired import Speedup

    planted = {
        "channels_last": (0.66, 0.95, 0.061),  # the trial's
        "tf32": (0.985, 0.995, 0.01),  # all below 1, inside the 2% band: slower all the same, by less than it
        "compile": (0.90, 1.10, 0.05),
    }
    candidates = []
    for name, (lo, hi, noise) in planted.items():
        reason = Speedup((lo + hi) / 2, (lo, hi), noise).reason("the baseline")
        candidates.append(_cand(name, lo, hi, noise, rounds=6) | {"reason": reason})
    got = {
        row["name"]: (row["verdict"], row["reason"].split(":")[0])
        for row in rows(optimize_entry({"candidates": candidates}))
    }
    assert got["channels_last"] == got["tf32"] == ("rejected_not_faster (slower)", "slower, within the margin")
    assert got["compile"] == ("rejected_not_faster (inconclusive)", "inconclusive, too noisy to judge")
