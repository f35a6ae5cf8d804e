"""The diagnosis cites what ``surrobench optimize`` measured: where an optimization of a finding's config
exists, each remedy its action names carries the measured speedup; a remedy measured slower, rejected for
accuracy, failed or infeasible is taken out of the action (and said so, with the number); a remedy the
optimization did not measure is marked "unmeasured". Without an optimization the action is unchanged.

Actions are one imperative clause per remedy, separated by ``"; "`` (the convention of the operator-family
table, :mod:`surrobench.analysis.op_families`); a clause that warns against a remedy ("keep NCHW ...",
"... measured slower") is kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from surrobench.records.findings import Finding

#: Words in an action that name each remedy of :mod:`surrobench.execution.remedies` (``threads`` stands for
#: every ``threads=N`` candidate).
REMEDY_PATTERNS: dict[str, re.Pattern] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in (
        ("cudagraph", r"cuda.?graph"),
        ("compile-reduce-overhead", r"reduce.overhead"),
        ("compile", r"torch\.compile(?!\(mode=.reduce.overhead)"),
        ("tf32", r"\btf32\b"),
        ("fp16", r"\bfp16\b|half precision"),
        ("bf16", r"\bbf16\b"),
        ("channels_last", r"channels.last|\bnhwc\b"),
        ("cudnn_benchmark", r"cudnn\.benchmark"),
        ("threads", r"\bthreads?\b|set_num_threads"),
    )
}
_WARNING = re.compile(r"\bkeep\b|\bslower\b|\bnot\b|\bavoid\b|\bonly\b", re.IGNORECASE)


def speedup_text(sp: dict | None) -> str:
    """An optimize-v1 ``speedup`` object as ``2.10x [2.05, 2.16]``; ``-`` when not measured."""
    return f"{sp['median']:.2f}x [{sp['ci95'][0]:.2f}, {sp['ci95'][1]:.2f}]" if sp else "-"


def _speed(c: dict) -> str:
    return speedup_text(c["speedup"])


def recipe_speedup(entry: dict) -> dict | None:
    """The recommended recipe's speedup in an optimize-v1 config object: ``recipe.speedup``, pooled over
    every window in which the recipe was timed with the baseline; in documents written before it existed,
    the recipe's own candidate row. None when nothing was recommended."""
    pooled = entry.get("recipe", {}).get("speedup")
    if pooled or not entry["recommended"]:
        return pooled
    name = "+".join(entry["recommended"])
    row = next((c for c in entry["candidates"] if c["name"] == name and c.get("speedup")), None)
    return row["speedup"] if row else None


def _outcome(c: dict) -> str:
    """Why a measured remedy is not recommended, with its number."""
    if c["verdict"] == "rejected_slower":
        return f"{c['name']} {_speed(c)}, not faster"
    if c["verdict"] == "rejected_accuracy":
        return f"{c['name']} rel L2 {c['rel_l2']:.1e}, over the tolerance"
    return f"{c['name']} {c['verdict']}: {c['reason']}"


def _singles(entry: dict, remedy: str) -> list[dict]:
    """The single-remedy candidates of ``remedy`` (``threads`` matches every ``threads=N``)."""
    return [
        c
        for c in entry["candidates"]
        if c["name"] == remedy or (remedy == "threads" and c["name"].startswith("threads="))
    ]


def cite_clause(clause: str, entry: dict) -> tuple[str | None, list[str]]:
    """``clause`` with its remedies' measured speedups (or "unmeasured"); None when every remedy it names
    was measured and not accepted. Also returns the not-recommended outcomes it dropped."""
    names = [n for n, pattern in REMEDY_PATTERNS.items() if pattern.search(clause)]
    if not names or _WARNING.search(clause):
        return clause, []
    notes, dropped, any_kept = [], [], False
    for name in names:
        found = _singles(entry, name)
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
    return f"{clause} ({'; '.join(notes)})", dropped


def cite_action(action: str, entry: dict) -> str:
    """The action rewritten from one optimize-v1 config object (module docstring)."""
    kept, dropped = [], []
    for clause in action.split("; "):
        text, gone = cite_clause(clause, entry)
        dropped += gone
        if text is not None:
            kept.append(text)
    if dropped:
        kept.append(f"not recommended, measured: {', '.join(dropped)}")
    if entry["recommended"]:
        sp = recipe_speedup(entry)
        kept.append(f"measured recipe: {'+'.join(entry['recommended'])}" + (f" {speedup_text(sp)}" if sp else ""))
    return "; ".join(kept) or action


def measured_line(label: str, entry: dict) -> str:
    """What ``surrobench optimize`` measured for a config no finding names: its recipe and pooled speedup,
    or that nothing won."""
    if not entry["recommended"]:
        return f"{label}: surrobench optimize measured no remedy faster beyond the noise within the tolerance"
    sp = recipe_speedup(entry)
    speed = f" {speedup_text(sp)}" if sp else ""
    command = entry["recipe"]["run_command"]  # None for a model given to the API as an object
    run_it = f"; run it: {command}" if command else ""
    return f"{label}: surrobench optimize measured {'+'.join(entry['recommended'])}{speed}{run_it}"


def _names_a_remedy(action: str) -> bool:
    return any(pattern.search(action) for pattern in REMEDY_PATTERNS.values())


def cite_measured(findings: list[Finding], measured: Mapping[str, dict]) -> list[Finding]:
    """``findings`` with the actions of optimized configs rewritten by :func:`cite_action`: every alarm,
    and an ``info`` finding (nothing to fix) only where its action still suggests a remedy (a precision
    hint, say), so a remedy the optimization rejected is never suggested; other ``info`` findings are left
    as they are.

    Args:
        measured: ``{config label (Finding.config): optimize-v1 config object}``.
    """
    return [
        replace(f, action=cite_action(f.action, measured[f.config]))
        if f.config in measured and (f.alarm or _names_a_remedy(f.action))
        else f
        for f in findings
    ]
