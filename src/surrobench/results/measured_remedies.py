"""The diagnosis cites what ``surrobench optimize`` measured for a finding's config: each remedy a clause suggests
(:attr:`surrobench.records.findings.Clause.remedies`) carries its measured speedup, or "unmeasured"; a clause whose
remedies were all measured and none accepted is taken out of the action (said so, with the number). A stacked
clause is cited by the candidate of exactly its remedies, in any order, kept when faster than the baseline by the
one rule (:meth:`surrobench.records.paired.Speedup.faster`). Clauses that suggest no remedy stay as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from surrobench.records.findings import Clause, Finding
from surrobench.records.measured import direction
from surrobench.records.vocab import remedy_id
from surrobench.records.paired import Speedup


def speedup_text(sp: dict | None) -> str:
    """An optimize ``speedup`` object as ``2.10x [2.05, 2.16]``; ``-`` when not measured."""
    return f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]" if sp else "-"


def _speed(c: dict) -> str:
    return speedup_text(c["speedup"])


def _outcome(c: dict) -> str:
    """Why a measured remedy is not recommended, with its number."""
    if c["verdict"] in ("rejected_slower", "rejected_not_faster"):
        return f"{c['name']} {_speed(c)}, not faster"
    if c["verdict"] == "rejected_accuracy":
        return f"{c['name']} rel L2 {c['rel_l2']:.1e}, over the tolerance"
    return f"{c['name']} {c['verdict']}: {c['reason']}"


def _singles(entry: dict, remedy: str, way: str | None = None) -> list[dict]:
    """The single-remedy candidates of the remedy id ``remedy`` (``threads``: every ``threads=N``) that move it
    ``way`` from the baseline's thread count (:attr:`surrobench.records.findings.Clause.direction`,
    :func:`surrobench.records.measured.direction`); all of them where ``way`` or that count is not known."""
    threads = ((entry.get("baseline") or {}).get("extra") or {}).get("torch_threads") if way else None
    return [
        c
        for c in entry["candidates"]
        if "+" not in c["name"]
        and remedy_id(c["name"]) == remedy
        and (not threads or direction(c["name"], threads) in (None, way))
    ]


def stack_candidate(entry: dict, remedies: tuple[str, ...]) -> dict | None:
    """The timed candidate of exactly ``remedies`` applied together, in any order, or None."""
    wanted = set(remedies)
    return next(
        (c for c in entry["candidates"] if c.get("speedup") and {remedy_id(n) for n in c["name"].split("+")} == wanted),
        None,
    )


def stack_faster(candidate: dict) -> bool:
    """Whether a stacked candidate's speedup over the baseline is faster by the rule (module docstring)."""
    return Speedup.from_json(candidate["speedup"]).faster()


def _cite_stack(clause: Clause, entry: dict) -> tuple[Clause | None, list[str]]:
    found = stack_candidate(entry, clause.remedies)
    name = "+".join(clause.remedies)
    if found is None:
        return Clause(f"{clause.text} ({name} unmeasured)", clause.remedies, stacked=True), []
    if not stack_faster(found):
        return None, [f"{found['name']} {_speed(found)}, not faster"]
    return Clause(f"{clause.text} ({found['name']} measured {_speed(found)})", clause.remedies, stacked=True), []


def cite_clause(clause: Clause, entry: dict) -> tuple[Clause | None, list[str]]:
    """``clause`` with its remedies' measured speedups (or "unmeasured"); None when every remedy it suggests
    was measured and none accepted (a stacked clause: when its stack was measured and is not faster). Also
    returns the not-recommended outcomes it dropped."""
    if not clause.remedies:
        return clause, []
    if clause.stacked:
        return _cite_stack(clause, entry)
    notes, dropped, any_kept = [], [], False
    for name in clause.remedies:
        found = _singles(entry, name, clause.direction)
        accepted = [c for c in found if c["verdict"] == "accepted"]
        if accepted:
            best = max(accepted, key=lambda c: c["speedup"]["median"])
            notes.append(f"{best['name']} measured {_speed(best)}")
            any_kept = True
        elif found:
            dropped += [_outcome(c) for c in found]
        else:
            notes.append(f"{name} unmeasured")
            any_kept = True
    if not any_kept:
        return None, dropped
    return Clause(f"{clause.text} ({'; '.join(notes)})", clause.remedies, direction=clause.direction), dropped


def cite_action(action: tuple[Clause, ...], entry: dict) -> tuple[Clause, ...]:
    """The action's clauses rewritten from one optimize config object (module docstring): each clause cited or
    dropped, then what was dropped and the recipe, each a clause of its own."""
    kept, dropped = [], []
    for clause in action:
        cited, gone = cite_clause(clause, entry)
        dropped += gone
        if cited is not None:
            kept.append(cited)
    if dropped:
        kept.append(Clause(f"not recommended, measured: {', '.join(dropped)}"))
    if entry["recommended"]:
        sp = entry["recipe"]["speedup"]
        recipe = "+".join(entry["recommended"])
        ids = tuple(dict.fromkeys(remedy_id(n) for n in entry["recommended"]))
        kept.append(Clause(f"measured recipe: {recipe}" + (f" {speedup_text(sp)}" if sp else ""), ids))
    return tuple(kept) or action


def measured_line(label: str, entry: dict) -> str:
    """What ``surrobench optimize`` measured for a config no finding names: its recipe and pooled speedup,
    or that nothing won."""
    if not entry["recommended"]:
        return f"{label}: surrobench optimize measured no remedy faster beyond the noise within the tolerance"
    sp = entry["recipe"]["speedup"]
    speed = f" {speedup_text(sp)}" if sp else ""
    command = entry["recipe"]["run_command"]  # None for a model given to the API as an object
    run_it = f"; run it: {command}" if command else ""
    return f"{label}: surrobench optimize measured {'+'.join(entry['recommended'])}{speed}{run_it}"


def cite_measured(findings: list[Finding], measured: Mapping[str, dict]) -> list[Finding]:
    """``findings`` with the actions of optimized configs rewritten by :func:`cite_action`: every alarm, and an
    ``info`` finding only where its action suggests a remedy.

    Args:
        measured: ``{config label (Finding.config): optimize config object}`` (optimize-v1, -v2 or -v3).
    """
    return [
        replace(f, action=cite_action(f.clauses, measured[f.config]))
        if f.config in measured and (f.alarm or f.remedies)
        else f
        for f in findings
    ]
