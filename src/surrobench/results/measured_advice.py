"""The diagnosis's actions rewritten from what diagnose measured (:func:`attach_measured`).

Each clause of an action that names remedies (:attr:`surrobench.records.findings.Clause.remedies`) is matched with
the measurements of those remedies (:class:`surrobench.records.measured.MeasuredRemedy`, from
:mod:`surrobench.tune.advice`): a stacked clause with the measurement of exactly its stack, any other with the
single candidates of its ids (``threads``: every thread count). Then:

- a remedy measured faster is advised with its measurement, ``(cudagraph: measured 1.73x [1.55, 1.87], saves 2.96
  ms/step)``, never against;
- a clause whose every remedy was judged (slower, no difference, rejected by the accuracy guard, failed or not
  applicable) and none faster becomes a statement that names no remedy, with its numbers (``...: measured, not
  faster (compile: measured 0.65x [0.61, 0.70], slower)``);
- a clause with a remedy the budget left out keeps it, saying it was not measured;
- clauses that name no remedy (code changes) stay as written, with the finding's estimate unless a remedy of its
  action was measured (:attr:`surrobench.records.findings.Finding.gain_kind`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.records.findings import Clause, Finding
from surrobench.records.measured import JUDGED, MeasuredRemedy


def clause_measurements(clause: Clause, measured: Sequence[MeasuredRemedy]) -> list[MeasuredRemedy]:
    """The measurements of ``clause``'s remedies: of exactly its stack for a stacked clause, else of the single
    candidates whose id it names that move its way (:attr:`Clause.direction`: ``threads=1``, down, is not a
    measurement of "use every core", up; a clause or measurement without a direction matches either)."""
    wanted = frozenset(clause.remedies)
    if clause.stacked:
        return [m for m in measured if "+" in m.remedy and m.remedy_ids == wanted]
    ways = {None, clause.direction}
    return [
        m
        for m in measured
        if "+" not in m.remedy and m.remedy_ids <= wanted and (clause.direction is None or m.direction in ways)
    ]


def _rewrite(clause: Clause, found: list[MeasuredRemedy]) -> tuple[Clause, bool]:
    """``clause`` with its best faster measurement, or what was not measured (True: still advised); when every
    remedy it names was judged and none was faster, the clause as a statement that names no remedy, ``<text>:
    measured, not faster (<each measurement>)`` (False: no longer advised). Module docstring."""
    faster = [m for m in found if m.verdict == "faster"]
    if faster:
        best = max(faster, key=lambda m: m.saved_ms if m.saved_ms is not None else m.speedup or 0.0)
        return Clause(f"{clause.text} ({best.text()})", clause.remedies, clause.stacked), True
    judged = [m for m in found if m.verdict in JUDGED]
    judged_ids = frozenset().union(*(m.remedy_ids for m in judged))
    if (clause.stacked and judged) or (not clause.stacked and judged_ids >= frozenset(clause.remedies)):
        return Clause(f"{clause.text}: measured, not faster ({'; '.join(m.text() for m in judged)})"), False
    left = [m.text() for m in found if m.verdict == "not-measured"]
    return (Clause(f"{clause.text} ({'; '.join(left)})", clause.remedies, clause.stacked) if left else clause), True


def attach_one(finding: Finding, measured: Sequence[MeasuredRemedy]) -> Finding:
    """``finding`` with its action rewritten from its config's ``measured`` (module docstring) and its remedies'
    measurements in :attr:`Finding.measured`; unchanged when none concerns it. Judged remedies not faster of a
    clause still advised (``threads=1`` beside ``threads=4``) are said in a last clause, ``measured, not faster``."""
    kept: list[Clause] = []
    mine: list[MeasuredRemedy] = []
    lost: list[str] = []
    for clause in finding.clauses:
        found = clause_measurements(clause, measured) if clause.remedies else []
        mine += [m for m in found if m not in mine]
        if not found:
            kept.append(clause)
            continue
        rewritten, advised = _rewrite(clause, found)
        kept.append(rewritten)
        if advised:
            lost += [m.text() for m in found if m.verdict in JUDGED and m.verdict != "faster"]
    if not mine:
        return finding
    if lost:
        kept.append(Clause(f"measured, not faster: {'; '.join(dict.fromkeys(lost))}"))
    return replace(finding, action=tuple(kept), measured=tuple(mine))


def owners(findings: Sequence[Finding], measured: Sequence[MeasuredRemedy]) -> dict[str, Finding]:
    """``{remedy name: the one finding credited with its measurement}`` among ``findings`` (one config's): of those
    whose clauses name it (:func:`clause_measurements`), the one whose action names the fewest remedy ids, the
    first on a tie, so a saving is counted once per config."""
    out: dict[str, Finding] = {}
    for f in sorted(findings, key=lambda f: len(f.remedies)):
        for clause in f.clauses:
            for m in clause_measurements(clause, measured) if clause.remedies else ():
                out.setdefault(m.remedy, f)
    return out


def attach_measured(findings: Sequence[Finding], measured: Mapping[str, Sequence[MeasuredRemedy]]) -> list[Finding]:
    """``findings`` with the actions of each measured config (``{config label (Finding.config): its
    measurements}``) rewritten by :func:`attach_one`, each measurement given only to its owner (:func:`owners`;
    another finding's clause says where it was credited); findings of other configs as they are, in order. The
    severity of a finding with a measured gain (:attr:`Finding.gain_ms`) follows its share of the baseline step,
    ``low`` under the report floor (:meth:`surrobench.analysis.thresholds.Thresholds.severity`)."""
    out = []
    for f in findings:
        if f.config not in measured:
            out.append(f)
            continue
        whose = owners([g for g in findings if g.config == f.config], measured[f.config])
        theirs = [m for m in measured[f.config] if m.remedy in whose and whose[m.remedy] is not f]
        got = attach_one(f, [m for m in measured[f.config] if m not in theirs])
        clauses = tuple(
            Clause(f"{c.text} (measured under {whose[elsewhere[0].remedy].kind})", c.remedies, c.stacked)
            if c.remedies and not clause_measurements(c, got.measured) and (elsewhere := clause_measurements(c, theirs))
            else c
            for c in got.clauses
        )
        base = next((m.baseline_ms for m in got.measured if m.baseline_ms), None)
        severity = got.severity
        if base and got.gain_kind == "measured" and got.gain_ms is not None:
            severity = DEFAULT_THRESHOLDS.severity(max(got.gain_ms, 0.0) / base) or "low"
        out.append(replace(got, action=clauses, severity=severity))
    return out


def unclaimed(findings: Sequence[Finding], measured: Mapping[str, Sequence[MeasuredRemedy]]) -> list[str]:
    """A line per remedy measured faster that no finding of its config was credited with (:func:`attach_measured`:
    no clause names it moving its way, as ``threads=1`` where every finding says "use every core"):
    ``<config>: <measurement>: no finding's action points this way``."""
    credited = {(f.config, m.remedy) for f in findings for m in f.measured}
    return [
        f"{label}: {m.text()}: no finding's action points this way"
        for label, got in measured.items()
        for m in got
        if m.verdict == "faster" and (label, m.remedy) not in credited
    ]
