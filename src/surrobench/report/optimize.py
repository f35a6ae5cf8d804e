"""The optimize report (a ``surrobench/optimize`` document, :meth:`OptimizeReport.to_json`) as terminal tables,
markdown and an HTML section: per config the before/after table of the baseline and every candidate (median,
P95, peak memory, top op, verdict, speedup and CI, error, setup time, break-even calls), then the recipe as code
and as a ``surrobench run`` line. Every renderer reads the document, so a stored optimization renders the same.
``optimize --objective capacity`` as text: :func:`capacity_lines`."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from surrobench.records.serve import CapacityOptimization
from surrobench.results.measured_remedies import speedup_text
from surrobench.report.cells import BYTES_PER_MIB, fmt
from surrobench.execution import remedies
from surrobench.report.escape import md_table, rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.report.serve_tables import rps
from surrobench.results.optimize import config_from_json, process_speedups, started_as

SPEEDUP_HEADER = "speedup [95% CI]"
"""A candidate's speedup over the baseline in its own timing window (two if inconclusive), the interval over their
rounds (:func:`speedup_note`; the recommended line's is pooled over windows: :func:`recipe_lines`)."""

COLUMNS = (("candidate", "name"), ("verdict", "verdict"), ("median ms", "median"))
COLUMNS += (("baseline ms (same window)", "baseline_ms"), ("P95 ms", "p95"), ("peak MiB", "peak_mib"))
COLUMNS += (("top op", "top_op"), (SPEEDUP_HEADER, "speedup"), ("rel L2", "rel_l2"), ("setup s", "setup_s"))
COLUMNS += (("break-even calls", "break_even"), ("reason", "reason"))
_VERDICT_STYLE = {"accepted": "green", "rejected_not_faster": "yellow", "rejected_slower": "yellow"}
_VERDICT_STYLE |= {"rejected_accuracy": "red", "failed": "red"}


def speedup_note(rounds: int | None) -> str:
    """The footnote of the :data:`SPEEDUP_HEADER` column: what a row's interval is drawn over. ``rounds``: the
    document's rounds per timing window (None: not known)."""
    of = f"{rounds} rounds a window" if rounds else "rounds"
    return f"{SPEEDUP_HEADER}: each row's own timing window with the baseline (two if inconclusive), over its {of}"


def _row(d: dict, name: str, verdict: str, baseline_ms, speedup: str, rel_l2: str, break_even: str, reason: str):
    """One row by column key of :data:`COLUMNS`: ``d``'s timing cells and the given ones."""
    peak = d["peak_mem_bytes"]
    mib = fmt(peak / BYTES_PER_MIB if peak is not None else None, ".1f")
    top = d["top_op"]
    top_op = f"{top['name']} {top['share']:.0%}" if top else "-"
    row = {"name": name, "verdict": verdict, "median": fmt(d["median_ms"], ".3f"), "p95": fmt(d["p95_ms"], ".3f")}
    row |= {"peak_mib": mib, "top_op": top_op, "baseline_ms": fmt(baseline_ms, ".3f"), "speedup": speedup}
    return row | {"rel_l2": rel_l2, "setup_s": fmt(d["setup_s"], ".2f"), "break_even": break_even, "reason": reason}


def rows(entry: dict) -> list[dict[str, str]]:
    """The baseline's row and every candidate's but those :func:`off_device` (:func:`off_line`), by column key of
    :data:`COLUMNS`, and a candidate's verdict ``code``; a ``rejected_not_faster`` verdict with why
    (:meth:`~surrobench.results.optimize.CandidateResult.not_faster`: ``slower``, ``unchanged``, ``inconclusive``)."""
    b = entry["baseline"]
    reason = entry["error"] or f"{entry['precision']} {entry['mode']}"
    ran = b["median_ms"] is not None  # a baseline that could not run is its own reference for nothing
    out = [_row(b, "baseline", "-", b["median_ms"], "1" if ran else "-", "0" if ran else "-", "-", reason)]
    off = off_device(entry)
    for c, judged in zip(entry["candidates"], config_from_json(entry).candidates):
        if c["name"] in off:
            continue
        calls = c["break_even_calls"] if c["verdict"] == "accepted" else None  # an older document has it for any
        cells = speedup_text(c.get("speedup")), fmt(c["rel_l2"], ".1e"), fmt(calls, ".0f")
        verdict = f"{c['verdict']} ({word})" if (word := judged.not_faster()) else c["verdict"]
        out.append(_row(c, c["name"], verdict, c["baseline_ms"], *cells, c["reason"]) | {"code": c["verdict"]})
    return out


def config_title(entry: dict) -> str:
    """``fno2d 1x3x128x128 b1 fp32 eager on cuda``: the baseline's label
    (:meth:`surrobench.records.run.ConfigResult.label`) and the device."""
    return f"{entry['label']} on {entry['device']}"


def _drawn_over(recipe: dict) -> str:
    """What the recommended speedup's interval is drawn over, from the ``recipe`` object's counts: `` ratio of the
    medians pooled over 6 timing windows (4 in this process, 2 in pairs of fresh processes)``; empty without
    windows. Pooled, it need not lie between the windows' own speedups when their levels drift."""
    windows = recipe["windows"]
    if not windows:
        return ""
    processes = recipe["process_windows"]
    if processes:
        pairs = "a pair" if processes == 1 else "pairs"
        where = f" ({windows - processes} in this process, {processes} in {pairs} of fresh processes)"
    else:
        where = " in this process"
    plural = "window" if windows == 1 else "windows"
    return f" {'ratio of the medians pooled over' if windows > 1 else 'over'} {windows} timing {plural}{where}"


#: Why nothing is recommended (:attr:`surrobench.results.optimize.ConfigOptimization.nothing_because`), in words.
NOTHING_BECAUSE = {
    "baseline_failed": "the baseline could not run: {error}",
    "interrupted": "the search was interrupted: see the note",
    "unconfirmed": "the search's recipe did not hold across its timing windows: see the note",
    "budget": "the budget was spent before a candidate was timed: see 'not tried'",
    "untimed": "no candidate could be timed here: see each one's reason",
    "none_faster": "no candidate was faster beyond the noise floor within the tolerance",
}


def recipe_lines(entry: dict, verify: int = 0, program: str = "surrobench", db: str | None = None) -> list[str]:
    """The recommendation in words: the recipe with its speedup, labelled by what its interval is drawn over
    (:func:`_drawn_over`), its code and ``surrobench run`` line (else why nothing, and the leads: ``unconfirmed``'s
    ``accepted``); the fresh check when it ran (or why not, when ``verify`` pairs were asked for); then what the
    budget left untried and the notes. ``program``, ``db``: the ``run it`` line's start and database."""
    name = "+".join(entry["recommended"])
    if name:
        pooled = entry["recipe"]["speedup"]
        each = entry["recipe"]["window_speedups"]
        spread = f", {min(each):.2f}x to {max(each):.2f}x window by window" if each and len(each) > 1 else ""
        processes = entry["recipe"]["process_windows"]
        by_process = ""
        if each and processes and len(each) > processes:  # what a new process may expect, beside the pooled one
            here, *fresh = process_speedups(each, processes)
            ones = "fresh ones" if len(fresh) > 1 else "a fresh one"
            by_process = f"; by process {here:.2f}x in this one, {', '.join(f'{x:.2f}x' for x in fresh)} in {ones}"
        cut = "; interrupted before its confirmation windows finished" if entry["cut_short"] else ""
        speed = f" ({speedup_text(pooled)}{_drawn_over(entry['recipe'])}{spread}{by_process}{cut})"
        lines = [f"recommended: {name}{speed if pooled else ''}", *("    " + c for c in entry["recipe"]["code"])]
        if entry["recipe"]["run_command"]:  # none for a model given as a Python object
            lines.append(f"run it: {started_as(entry['recipe']['run_command'], program, db)}")
    else:
        because = config_from_json(entry).nothing_because
        lines = [f"recommended: nothing ({NOTHING_BECAUSE[because].format(error=entry['error'])})"]
        sp = {c["name"]: speedup_text(c.get("speedup")) for c in entry["candidates"]}  # an older document: no leads
        leads = ", ".join(f"{name} {sp[name]}" for name in (entry.get("unconfirmed") or {}).get("accepted", ()))
        lines += [f"leads, accepted in their own window but not confirmed (best first): {leads}"] if leads else []
    if fresh := entry["fresh"]:
        lines.append(f"fresh runs: {fresh['verdict'].replace('_', ' ')}: {fresh['reason']}")
    elif verify:  # asked for, none ran
        why = "interrupted before the first fresh process finished" if name else "no recipe to check"
        lines.append(f"fresh runs: none ({why})")
    lines += [f"not tried: {t['name']} ({t['reason']})" for t in entry["not_tried"]]
    lines += [f"note: {n}" for n in entry["notes"]]
    return lines


def stored_line(doc: dict, db: str | None = None, program: str = "surrobench", state: str = "interrupted") -> str:
    """Where the runs went and the ``compare`` and ``report`` lines for the before/after pair (precision and mode left
    out of the match where a recipe changes them); ``db``: a database other than the default, named in the commands;
    ``program``: how the commands start (``.venv/bin/surrobench``); ``state``: one not finished, as ``history`` lists it
    (:func:`~surrobench.api.compare.optimization_state`)."""
    text = f"stored as optimization {doc['optimize_id']}: baseline run {doc['baseline_run_id']}"
    if doc["interrupted"]:
        gone = {"running": "still running (its process lives)", "abandoned": "abandoned (its process is gone)"}
        how = gone.get(state, "interrupted (Ctrl-C or a signal)")
        text = f"{how}: what was measured so far is here (a config cut short says so); {text}"
    if doc["recipe_run_id"]:
        names = {n for c in doc["configs"] for n in c["recommended"]}  # a thread count changes neither field below
        keys = set().union(*(r.fields() for r in remedies.candidate_remedies("cpu", thorough=True) if r.name in names))
        ignore = ",".join(k for k in ("precision", "mode") if k in keys)  # those of compare's key a recipe changes
        pair = f"{doc['baseline_run_id']} {doc['recipe_run_id']}" + (f" --ignore-field {ignore}" if ignore else "")
        compare, html = (started_as(f"surrobench {verb} {pair}", program, db) for verb in ("compare", "report"))
        text += f", recipe run {doc['recipe_run_id']}\nbefore/after: {compare}\nHTML: {html} -o report.html"
    return text


#: The terminal's two tables, each fitted (:func:`~surrobench.report.fit.fit_table`); reasons and top ops follow.
_TIMINGS = (Col("candidate", keep=True), Col("verdict", keep=True), Col("median ms", "right"))
_TIMINGS += (Col("baseline ms (same window)", "right", minor=1), Col("P95 ms", "right", minor=3))
_SPEEDUPS = (Col("candidate", keep=True), Col(SPEEDUP_HEADER, "right", keep=True), Col("rel L2", "right"))
_SPEEDUPS += (Col("setup s", "right", minor=1), Col("break-even calls", "right", minor=2))
_TERMINAL_TABLES = ((*_TIMINGS, Col("peak MiB", "right", minor=2)), _SPEEDUPS)
_KEYS = {title: key for title, key in COLUMNS}


def _terminal_table(
    title: str | None, cols: tuple[Col, ...], table_rows: list[dict[str, str]], width, rounds: int | None
) -> Table:
    """One of :data:`_TERMINAL_TABLES` fitted to ``width`` cells; the one with the speedup column has
    :func:`speedup_note` (``rounds`` per window) as its caption."""
    cells = []
    for row in table_rows:
        line = [rich_escape(row[_KEYS[col.header]]) for col in cols]
        style = _VERDICT_STYLE.get(row.get("code"))
        if style and cols[1].header == "verdict":
            line[1] = f"[{style}]{line[1]}[/]"
        cells.append(line)
    note = speedup_note(rounds) if any(col.header == SPEEDUP_HEADER for col in cols) else None
    return fit_table(cols, cells, width, title=title, caption=note and rich_escape(note))


def off_device(entry: dict) -> list[str]:
    """The candidates of ``entry`` infeasible because their remedy does not run on the config's device
    (:func:`surrobench.execution.remedies.off_device`)."""
    off = remedies.off_device(entry["device"])
    return [c["name"] for c in entry["candidates"] if c["verdict"] == "infeasible" and c["name"] in off]


def off_line(entry: dict) -> str:
    """The candidates :func:`off_device`, named on one line in place of their rows; "" when none."""
    skipped = off_device(entry)
    return f"not for {entry['device']} (not timed): {', '.join(skipped)}" if skipped else ""


def optimize_renderables(
    doc: dict, db: str | None = None, width: int | None = None, program: str = "surrobench", state: str = "interrupted"
) -> list:
    """Rich renderables: per config its :data:`_TERMINAL_TABLES` fitted to ``width`` cells, a line per reason and
    top op, the remedies :func:`off_device` named on one line, the recipe (a baseline that could not run: its
    title and why); then the stored runs (print with ``soft_wrap=True`` and ``crop=False``: command lines; ``state``:
    :func:`stored_line`'s)."""
    out: list = []
    for entry in doc["configs"]:
        if entry["error"] and not entry["candidates"]:  # the baseline did not run: one line says why
            title = rich_escape(config_title(entry))
            recipe = [rich_escape(line) for line in recipe_lines(entry, doc["verify"])]
            out.append(Group(title, *recipe))
            continue
        table_rows = rows(entry)
        pairs = zip((rich_escape(config_title(entry)), None), _TERMINAL_TABLES)
        tables = [_terminal_table(t, cols, table_rows, width, doc["rounds"]) for t, cols in pairs]
        lines = [f"{row['name']}: {row['reason']}" for row in table_rows]
        if off := off_line(entry):
            lines.append(off)
        lines += [f"top op of {row['name']}: {row['top_op']}" for row in table_rows if row["top_op"] != "-"]
        # a line to paste (code, a command) is never wrapped or cut (printed with ``crop=False``)
        recipe = [
            Text(x, no_wrap=True, overflow="ignore") if x.startswith(("    ", "run it: ")) else rich_escape(x)
            for x in recipe_lines(entry, doc["verify"], program, db)
        ]
        out.append(Group(*tables, *(rich_escape(line) for line in lines), *recipe))
    out.append(rich_escape(stored_line(doc, db, program, state)))
    return out


def optimize_markdown(doc: dict, db: str | None = None, state: str = "interrupted") -> str:
    """The document as markdown: per config a heading, the table and its :func:`speedup_note`, the recipe in a
    code block; then :func:`stored_line` (``state`` its)."""
    parts = []
    for entry in doc["configs"]:
        table_rows = [[row[key] for _, key in COLUMNS] for row in rows(entry)]
        parts += [f"### {config_title(entry)}\n", md_table((t for t, _ in COLUMNS), table_rows)]
        if entry["candidates"]:  # a baseline that could not run has no speedups to explain
            parts.append(speedup_note(doc["rounds"]) + "\n")
        if off := off_line(entry):
            parts.append(f"{off}\n")
        parts.append("```\n" + "\n".join(recipe_lines(entry, doc["verify"], db=db)) + "\n```\n")
    parts.append(stored_line(doc, db, state=state).replace("\n", "  \n") + "\n")  # markdown: a hard line break each
    return "\n".join(parts)


def capacity_lines(record: CapacityOptimization) -> list[str]:
    """The record as lines: per candidate accuracy, predicted capacity and policy; then the verification, the
    recipe, and the optimization id it is stored under."""
    w = record.workload
    lines = [
        f"capacity at P99 <= {record.target_p99_ms:g} ms: {w.get('model')} {w.get('shape_label')} on {w.get('device')}"
    ]
    for c in record.candidates:
        ok = {True: "accurate", False: "inaccurate", None: "failed"}[c.accurate]
        line = f"  {c.recipe}: {ok} ({c.accuracy})"
        if c.best_policy is not None:
            line += f"; predicted {rps(c.best_predicted_rps)} rps at {c.best_policy.label()}"
        if c.service_faster is not None:
            line += f"; service faster than baseline: {'yes' if c.service_faster else 'no'}"
        lines.append(line)
    loads = [("baseline", record.baseline_rps, record.baseline_run_id, "")]
    loads.append((record.top, record.top_rps, record.top_run_id, f": {record.verdict} than the baseline"))
    for name, bracket, run_id, then in loads:
        if run_id is not None:  # None: no load (infeasible, or the top is the baseline), or interrupted before it
            lo, hi = bracket
            under = f"{rps(lo)} rps (first failing {rps(hi) if hi is not None else 'not reached'})"
            lines.append(f"{name} measured under load: {under if lo else 'no rate passed'} (serve run {run_id}){then}")
    if record.infeasible:  # from the predictions (no load), or the baseline's check under load
        lines.append(record.infeasible)
    recipe = record.recipe or "none decided"  # the baseline failed, or the search was cut (its last note says so)
    stored = f", stored as optimization {record.optimize_id}" if record.optimize_id else ""
    lines.append(f"recipe: {recipe}; searched in {record.search_s:.1f} s{stored}")
    return [*lines, *record.notes]
