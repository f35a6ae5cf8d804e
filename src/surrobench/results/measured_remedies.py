"""A finding's action rewritten from measurements of its remedies (docs/design.md, "Measured actions",
:func:`attach_measured`): what diagnose measured (:class:`surrobench.records.findings.MeasuredRemedy`), and what
``surrobench optimize`` measured of those it did not judge. A clause is matched with the measurement of exactly its
remedies (a stacked clause: of its stack; ``threads``: every thread count). A remedy measured faster is
advised with its measurement, never against; a clause whose every remedy was judged and none faster names no remedy,
with its numbers; one the budget left out says it was not measured; clauses naming no remedy stay as written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.execution.failures import BUDGET_END, budget_cut
from surrobench.execution.host_facts import usable_cpus
from surrobench.records.findings import JUDGED, MEASURED, Clause, Finding, MeasuredRemedy, direction, saved_ms
from surrobench.records.paired import MIN_EFFECT, Speedup
from surrobench.records.run import ConfigResult
from surrobench.records.stats import LatencyStats
from surrobench.records.vocab import remedy_id
from surrobench.results.optimize import CandidateResult, config_from_json, started_as, timed_verdict


#: optimize's candidate verdicts as a measured action's (:data:`surrobench.records.findings.MEASURED_VERDICTS`);
#: ``rejected_not_faster``: the paired rule's own word, ``unchanged`` or ``inconclusive`` (:func:`measured_remedy`).
VERDICTS = {"accepted": "faster", "rejected_slower": "slower", "rejected_not_faster": None}
VERDICTS |= {"rejected_accuracy": "rejected-by-accuracy", "failed": "failed", "infeasible": "infeasible"}


def measured_remedy(c: CandidateResult, tolerance: float, cited: str | None = None, crowd: str = "") -> MeasuredRemedy:
    """optimize's judgement of one candidate as a measured action (verdict: :data:`VERDICTS`; one not faster nor slower,
    and a timed stack judged against its stage, the paired rule's verdict of its speedup over the baseline, in too few
    rounds ``inconclusive``; a build the budget's end cut, cause ``budget_end``, ``not-measured``, never ``failed``);
    ``cited``: the stored optimization's id where diagnose cites it (:attr:`MeasuredRemedy.cited`); ``crowd``: why a
    timed one was tried last (:meth:`~surrobench.tune.trials.Trials.crowds`), its reason."""
    if c.cause == BUDGET_END:  # a fresh-user trial's diagnose said "not advised"
        cut = budget_cut(c.time_s).line
        return MeasuredRemedy(c.name, "not-measured", tolerance=tolerance, reason=cut, cited=cited)
    sp, base = c.speedup, c.baseline_ms
    staged = c.stacked_on and sp and c.verdict in ("accepted", *SLOWER)
    unjudged = c.too_few_rounds()  # a window the budget cut: inconclusive, whatever its speedup reads
    return MeasuredRemedy(
        remedy=c.name,
        verdict="inconclusive" if unjudged else sp.verdict() if staged else VERDICTS[c.verdict] or sp.verdict(),
        speedup=sp.median if sp else None,
        ci95=sp.ci95 if sp else None,
        baseline_ms=base,
        saved_ms=saved_ms(base, sp.median) if sp and base else None,
        rel_l2=c.accuracy.rel_l2 if c.accuracy else None,
        tolerance=tolerance,
        reason=c.reason if c.verdict in ("failed", "infeasible") else crowd if sp else "",
        noise_floor=sp.noise_floor if sp else None,
        margin=sp.margin() if sp else None,
        cited=cited,
    )


#: optimize's verdicts of a remedy timed and found not faster.
SLOWER = ("rejected_slower", "rejected_not_faster")


def speedup_text(sp: dict | None) -> str:
    """An optimize ``speedup`` object as ``2.10x [2.05, 2.16]``; ``-`` when not measured."""
    return Speedup.from_json(sp).text() if sp else "-"


def cited_measurements(entry: dict, result: ConfigResult | None = None) -> tuple[MeasuredRemedy, ...]:
    """The candidates of one optimize config object as measurements (:func:`measured_remedy`) cited from its
    ``optimize_id``, each with its :func:`~surrobench.records.findings.direction` from the baseline's thread count:
    the entry's ``threads`` setting, else the diagnosed config's (``result``'s torch threads); None where neither is
    known; savings on ``result``'s timed step as diagnose's own (:func:`on_step`); a ``lead`` optimize did not confirm
    (:func:`confirmed`) ``inconclusive``, its window's numbers with no margin (not the rule's), its reason the lead's."""
    timed = result.latency_ms if result is not None else None
    threads = (entry.get("settings") or {}).get("threads") or (result.extra.get("torch_threads") if result else None)
    tolerance, oid = entry.get("tolerance", DEFAULT_TOLERANCE), entry.get("optimize_id")
    stored = zip(config_from_json(entry).candidates, entry["candidates"])  # each its own optimization's: cited_entry
    pairs = [(measured_remedy(c, d.get("tolerance", tolerance), d.get("optimize_id", oid)), d) for c, d in stored]
    cited = [replace(m, verdict="inconclusive", margin=None, reason=d["lead"]) if "lead" in d else m for m, d in pairs]
    return on_step([replace(m, direction=direction(m.remedy, threads) if threads else None) for m in cited], timed)


def drifted(window_ms: float | None, timed: LatencyStats | None) -> bool:
    """Whether a window's baseline median ``window_ms`` lies outside the ``timed`` step's 95% interval of the median
    and differs from it by more than the paired rule's smallest effect of interest
    (:data:`~surrobench.records.paired.MIN_EFFECT`): the host drifted between the timing and that window."""
    if timed is None or not window_ms or timed.ci95_median[0] <= window_ms <= timed.ci95_median[1]:
        return False
    return abs(window_ms / timed.median - 1) > MIN_EFFECT


def on_step(
    measured: Sequence[MeasuredRemedy], timed: LatencyStats | None, step: float | None = None
) -> tuple[MeasuredRemedy, ...]:
    """``measured`` with every ``saved_ms`` on one step, ``step_ms x (1 - 1 / speedup)`` ms: ``step_ms`` the ``timed``
    step's median, else ``step`` (None: each keeps its own); a window whose baseline :func:`drifted` from the ``timed``
    step marked ``drifted``, on the smaller of the two (trial35 read 1.70x of a 12.5 ms window as 42.5 ms saved on a
    103 ms step): no more than its speedup allows on the step, nor than it measured. Diagnose's own and cited alike."""
    step = timed.median if timed else step
    out = [replace(m, drifted=True) if drifted(m.baseline_ms, timed) else m for m in measured]
    basis = [min(step, m.baseline_ms) if m.drifted and step else step for m in out]
    return tuple(replace(m, saved_ms=saved_ms(b, m.speedup)) if b and m.saved_ms else m for m, b in zip(out, basis))


def cited_entry(entries: Sequence[dict]) -> dict:
    """The optimize config object diagnose cites for one config, of its stored ``entries`` (one or more, newest first,
    each with its ``optimize_id`` and ``tolerance``: :func:`~surrobench.results.optimize_store.optimized_configs`):
    the newest, its candidates per remedy the newest judgement of it that is not ``inconclusive``
    (:func:`measured_remedy`) among the optimizations of its ``settings``, the newest where each is (docs/design.md,
    "Citing optimize"), each candidate with its own optimization's ``optimize_id`` and ``tolerance``."""
    judged: dict[frozenset[str], list[tuple[str, dict]]] = {}
    for entry in (confirmed(e) for e in entries if e.get("settings") == entries[0].get("settings")):
        ids = {"optimize_id": entry["optimize_id"], "tolerance": entry["tolerance"]}
        for m, d in zip(cited_measurements(entry), entry["candidates"]):
            judged.setdefault(remedy_parts(m.remedy), []).append((m.verdict, ids | d))
    picked = [next((d for verdict, d in got if verdict != "inconclusive"), got[0][1]) for got in judged.values()]
    return entries[0] | {"candidates": picked}


def confirmed(entry: dict) -> dict:
    """``entry`` (an optimize config object) with the candidate of its recipe carrying the speedup pooled over its
    confirmation's windows and that verdict, optimize's last word on it: the recommended recipe's (``recipe``), or
    the one that did not hold (``unconfirmed``), and then each other one it accepted (``unconfirmed.accepted``) a
    ``lead`` not confirmed, why (:func:`cited_measurements`)."""
    last = entry.get("unconfirmed") or (entry.get("recipe") or {}) | {"name": "+".join(entry.get("recommended", ()))}
    if not last.get("speedup") or not last["name"]:
        return entry
    pooled = {"speedup": last["speedup"], "verdict": timed_verdict(Speedup.from_json(last["speedup"]))}
    parts = remedy_parts(last["name"])
    got = [c | pooled if remedy_parts(c["name"]) == parts else c for c in entry["candidates"]]
    if not entry.get("unconfirmed"):
        return entry | {"candidates": got}
    lead = {"lead": f"a lead not confirmed: optimize's recipe {last['name']} pooled {speedup_text(last['speedup'])}"}
    return entry | {"candidates": [c | lead if c["verdict"] == "accepted" else c for c in got]}


def floored(measured: Sequence[MeasuredRemedy], entry: dict) -> tuple[MeasuredRemedy, ...]:
    """``measured`` (diagnose's own, of one config) judged by the paired rule with the noise floor ``entry`` (the
    optimize config object cited for it) pooled over its confirmation's windows where larger, ``floor_from`` its id."""
    confirmation = entry.get("unconfirmed") or entry.get("recipe") or {}
    floor = (confirmation.get("speedup") or {}).get("noise_floor") or 0.0
    out = []
    for m in measured:
        if m.ci95 is not None and m.verdict in JUDGED[:4] and floor > (m.noise_floor or 0.0):  # the rule's four
            rule = Speedup(m.speedup, m.ci95, floor)
            m = replace(
                m, verdict=rule.verdict(), noise_floor=floor, margin=rule.margin(), floor_from=entry.get("optimize_id")
            )
        out.append(m)
    return tuple(out)


def remedy_parts(remedy: str) -> frozenset[str]:
    """A candidate's name as the set of its parts: a stack names the same candidate in either order."""
    return frozenset(remedy.split("+"))


def with_optimized(
    measured: Mapping[str, Sequence[MeasuredRemedy]], optimized: Mapping[str, dict], results: Mapping[str, ConfigResult]
) -> dict[str, tuple[MeasuredRemedy, ...]]:
    """``{config label: measurements}``: diagnose's ``measured``, each remedy it did not judge (``not-measured`` or
    absent) that ``optimized`` (``{config label: optimize config object}``) holds taken from it instead
    (:func:`cited_measurements` of the config's ``results``); diagnose's own judgement wins
    (:func:`disagreements` says where the two differ)."""
    out = {}
    for label in dict.fromkeys([*measured, *optimized]):
        own = tuple(measured.get(label, ()))
        judged = {remedy_parts(m.remedy) for m in own if m.verdict != "not-measured"}
        stored = cited_measurements(optimized[label], results.get(label)) if label in optimized else ()
        theirs = [m for m in stored if remedy_parts(m.remedy) not in judged]
        cited = {remedy_parts(m.remedy) for m in theirs}
        if got := tuple(m for m in own if remedy_parts(m.remedy) not in cited) + tuple(theirs):
            out[label] = got
    return out


def recipe_clause(entry: dict) -> Clause | None:
    """``measured recipe: cudagraph+tf32 4.60x [4.37, 4.83] in optimization o7``: an optimize config object's
    recommended recipe with its pooled speedup, naming its remedy ids; None when it recommends none."""
    if not entry["recommended"]:
        return None
    sp, oid = entry["recipe"]["speedup"], entry.get("optimize_id")
    text = f"measured recipe: {'+'.join(entry['recommended'])}" + (f" {speedup_text(sp)}" if sp else "")
    ids = tuple(dict.fromkeys(remedy_id(n) for n in entry["recommended"]))
    return Clause(text + (f" in optimization {oid}" if oid else ""), ids)


def measured_lines(findings: Sequence[Finding], measured: Mapping[str, dict], rerun=("surrobench", None)) -> list[str]:
    """The note that ``findings``' measured savings overlap (:func:`overlapping`: in every diagnosis, ``--measure-s 0``
    too), then what ``surrobench optimize`` measured: a line per config and optimization ``findings`` cite
    (:attr:`MeasuredRemedy.cited`; a recipe an action ends with: :func:`recipe_clause`), ``<config>: cited from
    optimization <id>: bf16, recipe compile+bf16``, then for each config of ``measured`` (as :func:`attach_measured`'s)
    that no finding names, its recipe and pooled speedup, or that nothing won; ``rerun``: (program, db) of its ``run
    it`` line (:func:`~surrobench.results.optimize.started_as`)."""
    recipes = {label: recipe_clause(entry) for label, entry in measured.items()}  # a config's once, as attach_measured
    cited: dict[tuple, list[str]] = {}
    for f, m in ((f, m) for f in findings for m in f.measured if m.cited and m.verdict != "infeasible"):
        cited.setdefault((f.config, m.cited), []).append(m.remedy)
    for f, e in ((f, measured[f.config]) for f in findings if recipes.get(f.config) in f.clauses):
        cited.setdefault((f.config, e.get("optimize_id")), []).append("recipe " + "+".join(e["recommended"]))
    lines = overlapping(findings)
    lines += [f"{c}: cited from optimization {o}: {', '.join(dict.fromkeys(g))}" for (c, o), g in cited.items()]
    named = {f.config for f in findings}
    for label, entry in ((k, v) for k, v in measured.items() if k not in named):
        if recipes[label] is None:
            lines.append(
                f"{label}: surrobench optimize measured no remedy faster beyond the noise within the tolerance"
            )
            continue
        sp, command = entry["recipe"]["speedup"], entry["recipe"]["run_command"]  # None for a model given as an object
        speed = f" {speedup_text(sp)}" if sp else ""
        run_it = f"; run it: {started_as(command, *rerun)}" if command else ""
        lines.append(f"{label}: surrobench optimize measured {'+'.join(entry['recommended'])}{speed}{run_it}")
    return lines


def measured_severity(before: Finding, after: Finding, none_faster: bool) -> Finding:
    """``after`` (``before`` measured) with its severity: ``none_faster``, ``before``'s while a clause naming no remedy
    (a code change) stands, :attr:`Finding.severity_estimated`, else ``low`` (docs/design.md, "None faster"); else
    a faster remedy's share of the step, ``1 - 1 / speedup`` (``Thresholds.severity``, ``low`` under the floor)."""
    if none_faster:
        stands = any(not c.remedies for c in before.clauses)
        return replace(after, severity=before.severity if stands else "low", severity_estimated=stands)
    best = after.best_measured
    return replace(after, severity=DEFAULT_THRESHOLDS.severity(1 - 1 / best.speedup) or "low") if best else after


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


def _the_other_way(clause: Clause, measured: Sequence[MeasuredRemedy]) -> list[MeasuredRemedy]:
    """The single measurements of ``clause``'s remedies that move against its :attr:`Clause.direction` and were
    faster (``threads=1`` beside "use every core"): a clause with no faster measurement of its own is not advised
    against them."""
    if clause.direction is None:
        return []
    either_way = clause_measurements(replace(clause, direction=None), measured)
    return [m for m in either_way if m.verdict == "faster" and m.direction not in (None, clause.direction)]


def _rewrite(clause: Clause, found: list[MeasuredRemedy], other_way, said: dict[str, str]) -> tuple[Clause, bool]:
    """``clause`` rewritten as the module docstring says (the other way: :func:`_the_other_way`), and whether it is
    still advised; a measurement whose text ``said`` holds as it says (another finding's: :func:`attach_one`), one
    earlier clauses gave as ``<remedy>: as above``."""

    def told(ms) -> str:
        line = "; ".join(said.get(m.text(), m.text()) for m in ms)
        for m in ms:
            said.setdefault(m.text(), f"{m.remedy}: as above")
        return line

    faster, way = [m for m in found if m.verdict == "faster"], clause.direction
    if other_way and not faster:
        return Clause(f"{clause.text}: not advised, measured faster the other way ({told(other_way)})"), False
    if faster:
        best = max(faster, key=lambda m: m.saved_ms if m.saved_ms is not None else m.speedup or 0.0)
        return replace(clause, text=f"{clause.text} ({told([best])})"), True
    judged = [m for m in found if m.verdict in JUDGED]
    # the baseline's own count, infeasible, is no move; but where it is every usable CPU of this host (thread_counts'
    # largest) it is the last word on "use every core": the baseline already does
    every = f"threads={usable_cpus()}" if way == "up" else None
    moves = [m for m in judged if m.verdict != "infeasible" or way in (None, m.direction) or m.remedy == every]
    judged_ids = frozenset().union(*(m.remedy_ids for m in moves))
    if (clause.stacked and judged) or (not clause.stacked and judged_ids >= frozenset(clause.remedies)):
        word = "measured, not advised" if any(m.verdict in MEASURED for m in judged) else "not advised"  # n/a only
        word = "measured, inconclusive" if {m.verdict for m in judged} - {"infeasible"} == {"inconclusive"} else word
        return Clause(f"{clause.text}: {word} ({told(judged)})"), False
    left = [m for m in found if m.verdict == "not-measured"]
    return (replace(clause, text=f"{clause.text} ({told(left)})") if left else clause), True


def attach_one(
    finding: Finding, measured: Sequence[MeasuredRemedy], every: Sequence[MeasuredRemedy], under: Mapping[str, str]
) -> Finding:
    """``finding`` with its action rewritten from its config's ``measured`` (module docstring) and its remedies'
    measurements in :attr:`Finding.measured`; unchanged when none concerns it. Judged remedies not faster of a
    clause still advised (``threads=1`` beside ``threads=4``) are said in a last clause, ``measured, not advised``.
    ``every``: all of the config's measurements, read for those faster the other way.
    ``under``: ``{measurement text: how it is said}`` of those of ``measured`` credited to another finding
    (:func:`attach_measured`), judged here by the same rule, said so and not held in :attr:`Finding.measured`."""
    kept: list[Clause] = []
    mine: list[MeasuredRemedy] = []
    lost: list[str] = []
    said = dict(under)
    for clause in finding.clauses:
        found = clause_measurements(clause, measured) if clause.remedies else []
        mine += [m for m in found if m not in mine and m.text() not in under]
        other_way = _the_other_way(clause, every) if clause.remedies else []
        if not found and not other_way:
            kept.append(clause)
            continue
        rewritten, advised = _rewrite(clause, found, other_way, said)
        kept.append(rewritten)
        if advised:
            against = [m for m in found if m.verdict in MEASURED and m.verdict not in ("faster", "inconclusive")]
            lost += [under.get(m.text(), m.text()) for m in against]  # an inconclusive one is neither: not said so
    if tuple(kept) == finding.clauses:
        return finding
    if lost:
        kept.append(Clause(f"measured, not advised: {'; '.join(dict.fromkeys(lost))}"))
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


def attach_measured(
    findings: Sequence[Finding],
    measured: Mapping[str, Sequence[MeasuredRemedy]],
    optimized: Mapping[str, dict] | None = None,
    results: Mapping[str, ConfigResult] | None = None,
) -> list[Finding]:
    """``findings`` with the actions of each measured config rewritten by :func:`attach_one`, each measurement given
    only to its owner (:func:`owners`; another finding's clause says where it was credited); findings of other
    configs as they are, in order; severities by :func:`measured_severity`, a drifted window's
    (:attr:`MeasuredRemedy.drifted`) too: its ratio is paired within the window, its saving on the timed step
    (:func:`on_step`). An alarm or a finding naming a remedy of a config whose optimization recommends a recipe ends
    with it (:func:`recipe_clause`), which then names its remedies as a clause does, after the rules' clauses.

    Args:
        measured: diagnose's own, ``{config label (Finding.config): its measurements}``.
        optimized: ``{config label: optimize config object}`` (optimize-v1, -v2 or -v3), cited for each remedy
            diagnose did not judge (:func:`with_optimized`).
        results: ``{config label: its result}``: the torch threads it ran with, its timed step (a cited saving's).
    """
    measured = with_optimized(measured, optimized or {}, results or {})
    recipes = {label: clause for label, entry in (optimized or {}).items() if (clause := recipe_clause(entry))}
    told = [
        replace(f, action=(*f.clauses, recipes[f.config])) if f.config in recipes and (f.alarm or f.remedies) else f
        for f in findings
    ]
    out = []
    for f, full in zip(findings, told):  # a config measured nothing of: as it is, its recipe told
        mine = measured.get(f.config, ())
        same = [i for i, g in enumerate(findings) if g.config == f.config]
        whose = owners([told[i] for i in same], mine) | owners([findings[i] for i in same], mine)  # a rule's first
        theirs = [m for m in mine if m.remedy in whose and all(whose[m.remedy] is not g for g in (f, full))]
        under = {m.text(): f"{m.remedy}: {m.verdict}, measured under {whose[m.remedy].kind}" for m in theirs}
        got = attach_one(f, [m for m in mine if m not in theirs or m.verdict in JUDGED], mine, under)
        if recipe := full.clauses[len(f.clauses) :]:  # the remedies only the recipe names
            left = [m for m in mine if m not in theirs and m not in got.measured]
            (clause,) = recipe
            if any(m.cited and m.remedy_ids == frozenset(clause.remedies) for m in clause_measurements(clause, left)):
                clause = replace(clause, text="optimize's recipe")  # the recipe's own measurement says the rest
            tail = attach_one(replace(f, action=(clause,), measured=()), left, mine, {})
            got = replace(got, action=got.clauses + tail.clauses, measured=got.measured + tail.measured)
        out.append(measured_severity(f, got, got.none_faster))
    return out


def unclaimed(findings: Sequence[Finding], measured: Mapping[str, Sequence[MeasuredRemedy]]) -> list[str]:
    """A line per remedy measured faster that no finding of its config was credited with (:func:`attach_measured`:
    no clause names it moving its way, as ``threads=1`` where every finding says "use every core", nor the recipe's
    clause): ``<config>: <measurement>: no finding's action points this way``."""
    credited = {(f.config, m.remedy) for f in findings for m in f.measured}
    return [
        f"{label}: {m.text()}: no finding's action points this way"
        for label, got in measured.items()
        for m in got
        if m.verdict == "faster" and (label, m.remedy) not in credited
    ]


def overlapping(findings: Sequence[Finding]) -> list[str]:
    """A line per config with more than one finding credited with a measured saving (:attr:`Finding.best_measured`):
    each measured alone on the whole step, so they overlap, not additive; a drifted window's names its baseline."""
    by: dict[str, list[str]] = {}
    for f, m in ((f, f.best_measured) for f in findings if f.best_measured):
        drift = f" (its window's baseline drifted: {m.baseline_ms:.3g} ms)" if m.drifted else ""
        by.setdefault(f.config, []).append(f"{m.remedy} {m.saved_ms:.3g} ms{drift}")
    said = "each is the whole step's with that remedy alone, not additive"
    return [
        f"{label}: measured savings overlap ({', '.join(got)}): {said}" for label, got in by.items() if len(got) > 1
    ]


def disagreements(measured: Mapping[str, Sequence[MeasuredRemedy]], optimized: Mapping[str, dict]) -> list[str]:
    """A line per remedy this diagnosis measured faster that ``optimize`` (``{config label: its cited config
    object}``) measured not faster, or the other way round: two windows of the same config that disagree, each by
    the one rule (or whose intervals overlap, only their verdicts differing), and neither is hidden (optimize's
    verification in fresh processes decides)."""
    out = []
    for label, got in measured.items():
        theirs = {remedy_parts(c["name"]): c for c in (optimized.get(label) or {}).get("candidates", [])}
        for m in got:
            c = theirs.get(remedy_parts(m.remedy))
            if c is None or (m.verdict == "faster") == (c["verdict"] == "accepted"):
                continue
            if m.verdict in MEASURED[:4] and c["verdict"] in ("accepted", *SLOWER):
                lo, hi = Speedup.from_json(c["speedup"]).ci95
                apart = m.ci95 is None or m.ci95[1] < lo or hi < m.ci95[0]  # else only the verdicts differ
                out.append(
                    f"{label}: this diagnosis measured {m.text()}; optimize measured {c['name']} "
                    f"{speedup_text(c['speedup'])}{'' if c['verdict'] == 'accepted' else ', not faster'}: "
                    f"{'the windows disagree' if apart else 'their intervals overlap, their verdicts differ'} "
                    "(optimize's verification in fresh processes decides)"
                )
    return out
