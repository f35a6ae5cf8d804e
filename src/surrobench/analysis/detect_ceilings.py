"""The ceiling_suspect detector: an op past ``calibration_stale_ratio`` of a calibrated ceiling means the ceiling
is too low (a machine cannot beat its roofline: Williams et al., CACM 52(4), 2009), or for the copy bandwidth
that its data stays in cache; the operator detectors give no verdict against it."""

from __future__ import annotations

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.roofline import SuspectCeiling, format_tflops
from surrobench.analysis.thresholds import Thresholds
from surrobench.records.ceilings import calibrate_command
from surrobench.records.findings import Evidence, Finding


def _rate(suspect: SuspectCeiling, value: float) -> str:
    return f"{value:.0f} GB/s" if suspect.ceiling == "copy" else f"{format_tflops(value)} TFLOP/s"


def _name(suspect: SuspectCeiling) -> str:
    return "copy bandwidth" if suspect.ceiling == "copy" else f"{suspect.precision} matmul peak"


def ceiling_suspect(ev: ConfigEvidence, th: Thresholds) -> Finding | None:
    """Ceilings ``ev``'s ops exceed (``suspect_ceilings``); None if none. Severity ``low``, no gain."""
    roof = ev.roofline
    if roof is None:
        return None
    suspects = roof.suspect_ceilings(th.calibration_stale_ratio, th.bound_op_share_min)
    if not suspects:
        return None
    c = roof.ceilings
    when = f"calibrated {c.measured}" if c.measured else c.note
    texts = [f"{', '.join(s.ops[:3])}: {_rate(s, s.achieved)} = {s.ratio:.1f}x the {_name(s)}" for s in suspects]
    evidence = tuple(
        Evidence("roofline", f"{t} {_rate(s, s.calibrated)} ({when})", s.ratio, "ratio")
        for t, s in zip(texts, suspects)
    )
    names = " and the ".join(_name(s) for s in suspects)
    top = max(suspects, key=lambda s: s.ratio)
    threads = ev.result.extra.get("threads") if ev.result is not None else None  # a config's --threads
    command = calibrate_command("cpu", threads) if ev.on_cpu() else "surrobench calibrate"
    action = f"re-run {command} on an idle machine, then diagnose again"
    if any(s.ceiling == "copy" for s in suspects):
        action += "; if the new copy bandwidth holds, those ops' bytes stay in cache (counted here from memory)"
    summary = (
        f"the calibrated {names} is suspect: {', '.join(top.ops[:3])} measured {top.ratio:.1f}x it; no roofline "
        "verdict against it"
    )
    return Finding("ceiling_suspect", "low", summary, evidence, action, None, ev.label)
