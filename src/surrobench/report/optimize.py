"""The optimize report as terminal tables, markdown and HTML: before/after per config, then the recipe."""

from __future__ import annotations

import shlex

from rich.console import Group
from rich.table import Table
from rich.text import Text

from surrobench.results.measured_remedies import recipe_speedup, speedup_text
from surrobench.report.cells import BYTES_PER_MIB, fmt
from surrobench.execution.remedies import candidate_remedies
from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.report.markdown import md_table
from surrobench.results.fresh import process_speedups

SPEEDUP_HEADER = "speedup [95% CI]"
"""A candidate's speedup column: over the baseline in the candidate's own timing window, its interval drawn
over that window's rounds (:func:`speedup_note` says so under the table; the recommended line's is pooled over
windows: :func:`recipe_lines`)."""

COLUMNS = (
    ("candidate", "name"),
    ("verdict", "verdict"),
    ("median ms", "median"),
    ("baseline ms (same window)", "baseline_ms"),
    ("P95 ms", "p95"),
    ("peak MiB", "peak_mib"),
    ("top op", "top_op"),
    (SPEEDUP_HEADER, "speedup"),
    ("rel L2", "rel_l2"),
    ("setup s", "setup_s"),
    ("break-even calls", "break_even"),
    ("reason", "reason"),
)
_VERDICT_STYLE = {
    "accepted": "green",
    "rejected_not_faster": "yellow",
    "rejected_slower": "yellow",
    "rejected_accuracy": "red",
    "failed": "red",
}


def speedup_note(rounds: int | None) -> str:
    """Footnote of :data:`SPEEDUP_HEADER`: what an interval is drawn over (``rounds`` None: unknown)."""
    of = f"its {rounds} rounds" if rounds else "its rounds"
    return f"{SPEEDUP_HEADER}: each row's own timing window with the baseline, the interval over {of}"


def _timing_cells(d: dict) -> dict[str, str]:
    peak = d.get("peak_mem_bytes")
    top = d.get("top_op")
    return {
        "median": fmt(d.get("median_ms"), ".3f"),
        "p95": fmt(d.get("p95_ms"), ".3f"),
        "peak_mib": fmt(peak / BYTES_PER_MIB if peak is not None else None, ".1f"),
        "top_op": f"{top['name']} {top['share']:.0%}" if top else "-",
    }


def rows(entry: dict) -> list[dict[str, str]]:
    """The baseline's row and every candidate's, by column key of :data:`COLUMNS`."""
    b = entry["baseline"]
    reason = entry["error"] or f"{entry['precision']} {entry['mode']}"
    ran = b.get("median_ms") is not None  # a baseline that could not run is its own reference for nothing
    out = [
        {
            "name": "baseline",
            "verdict": "-",
            **_timing_cells(b),
            "baseline_ms": fmt(b.get("median_ms"), ".3f"),
            "speedup": "1" if ran else "-",
            "rel_l2": "0" if ran else "-",
            "setup_s": fmt(b["setup_s"], ".2f"),
            "break_even": "-",
            "reason": reason,
        }
    ]
    for c in entry["candidates"]:
        out.append(
            {
                "name": c["name"],
                "verdict": c["verdict"],
                **_timing_cells(c),
                "baseline_ms": fmt(c.get("baseline_ms"), ".3f"),  # absent in reports written before it existed
                "speedup": speedup_text(c.get("speedup")),
                "rel_l2": fmt(c["rel_l2"], ".1e"),
                "setup_s": fmt(c["setup_s"], ".2f"),
                "break_even": fmt(c["break_even_calls"], ".0f"),
                "reason": c["reason"],
            }
        )
    return out


def config_title(entry: dict) -> str:
    """``fno2d 1x3x128x128 b1 fp32 eager on cuda``: the baseline's label and device."""
    label = entry.get("label") or (  # documents written before the label was stored
        f"{entry['model']} {'x'.join(map(str, entry['input_shape']))} b{entry['batch']} {entry['precision']} "
        f"{entry['mode']}"
    )
    return f"{label} on {entry['device']}"


def _drawn_over(recipe: dict) -> str:
    """What the recommended speedup's interval is drawn over; empty without counts."""
    windows = recipe.get("windows")
    if not windows:
        return "" if recipe.get("speedup") else " in its own window"
    processes = recipe.get("process_windows")  # absent in reports written before it existed
    if processes:
        pairs = "a pair" if processes == 1 else "pairs"
        where = f" ({windows - processes} in this process, {processes} in {pairs} of fresh processes)"
    else:
        where = " in this process" if processes == 0 else ""
    plural = "window" if windows == 1 else "windows"
    return f" {'ratio of the medians pooled over' if windows > 1 else 'over'} {windows} timing {plural}{where}"


def recipe_lines(entry: dict, verify: int = 0) -> list[str]:
    """The recommendation: recipe, speedup and interval basis, code, ``run`` line, fresh-process check, untried, notes."""
    name = "+".join(entry["recommended"])
    if name:
        pooled = recipe_speedup(entry)
        each = entry["recipe"].get("window_speedups")  # absent in reports written before it existed
        spread = f", {min(each):.2f}x to {max(each):.2f}x window by window" if each and len(each) > 1 else ""
        processes = entry["recipe"].get("process_windows")  # absent in reports written before it existed
        by_process = ""
        if each and processes and len(each) > processes:  # what a new process may expect, beside the pooled one
            here, *fresh = process_speedups(each, processes)
            ones = "fresh ones" if len(fresh) > 1 else "a fresh one"
            by_process = f"; by process {here:.2f}x in this one, {', '.join(f'{x:.2f}x' for x in fresh)} in {ones}"
        speed = f" ({speedup_text(pooled)}{_drawn_over(entry['recipe'])}{spread}{by_process})"
        lines = [f"recommended: {name}{speed if pooled else ''}", *("    " + c for c in entry["recipe"]["code"])]
        if entry["recipe"]["run_command"]:  # none for a model given as a Python object
            lines.append(f"run it: {entry['recipe']['run_command']}")
    elif entry.get("error"):
        lines = [f"recommended: nothing (the baseline could not run: {entry['error']})"]
    elif entry.get("cut_short"):  # absent in reports written before it existed
        lines = ["recommended: nothing (the search was interrupted: see the note)"]
    elif any(c["verdict"] == "accepted" for c in entry["candidates"]):
        lines = ["recommended: nothing (the search's recipe did not hold across its timing windows: see the note)"]
    elif not any(c.get("speedup") for c in entry["candidates"]) and entry["not_tried"]:
        lines = ["recommended: nothing (the budget was spent before a candidate was timed: see 'not tried')"]
    elif not any(c.get("speedup") for c in entry["candidates"]):
        lines = ["recommended: nothing (no candidate could be timed here: see each one's reason)"]
    else:
        lines = ["recommended: nothing (no candidate was faster beyond the noise floor within the tolerance)"]
    fresh = entry.get("fresh")  # absent in documents written before the fresh check existed
    if fresh:
        lines.append(f"fresh runs: {fresh['verdict'].replace('_', ' ')}: {fresh['reason']}")
    elif verify and not entry["recommended"]:
        lines.append("fresh runs: none (no recipe to check)")
    elif verify:
        lines.append("fresh runs: none (interrupted before the first fresh process finished)")
    lines += [f"not tried: {t['name']} ({t['reason']})" for t in entry["not_tried"]]
    lines += [f"note: {n}" for n in entry["notes"]]
    return lines


def stored_line(doc: dict, db: str | None = None, program: str = "surrobench") -> str:
    """Where the runs went and the ``compare``/``report`` lines (``db`` joined when not the default)."""
    text = f"stored as optimization {doc['optimize_id']}: baseline run {doc['baseline_run_id']}"
    if doc.get("interrupted"):
        text = f"interrupted (Ctrl-C or a signal): what was measured before it is here (a config cut short says so); {text}"
    if doc["recipe_run_id"]:
        pair = f"{doc['baseline_run_id']} {doc['recipe_run_id']} --ignore-field precision,mode"
        pair += f" --db {shlex.quote(db)}" if db else ""
        text += (
            f", recipe run {doc['recipe_run_id']}\nbefore/after: {program} compare {pair}"
            f"\nHTML: {program} report {pair} -o report.html"
        )
    return text


#: The terminal's two tables, each fitted (:func:`~surrobench.report.fit.fit_table`); reasons follow as lines.
_TERMINAL_TABLES = (
    (
        Col("candidate", keep=True),
        Col("verdict", keep=True),
        Col("median ms", "right"),
        Col("baseline ms (same window)", "right", minor=1),
        Col("P95 ms", "right", minor=3),
        Col("peak MiB", "right", minor=2),
    ),
    (
        Col("candidate", keep=True),
        Col(SPEEDUP_HEADER, "right", keep=True),
        Col("rel L2", "right"),
        Col("setup s", "right", minor=1),
        Col("break-even calls", "right", minor=2),
    ),
)
_KEYS = {title: key for title, key in COLUMNS}


def _terminal_table(
    title: str | None, cols: tuple[Col, ...], table_rows: list[dict[str, str]], width, rounds: int | None
) -> Table:
    """One :data:`_TERMINAL_TABLES` table fitted to ``width``, the speedup one with its note."""
    cells = []
    for row in table_rows:
        line = [rich_escape(row[_KEYS[col.header]]) for col in cols]
        style = _VERDICT_STYLE.get(row["verdict"])
        if style and cols[1].header == "verdict":
            line[1] = f"[{style}]{line[1]}[/]"
        cells.append(line)
    note = speedup_note(rounds) if any(col.header == SPEEDUP_HEADER for col in cols) else None
    return fit_table(cols, cells, width, title=title, caption=note and rich_escape(note))


def off_device(entry: dict) -> list[str]:
    """The candidates of ``entry`` infeasible because their remedy does not run on the config's device."""
    device = entry["device"]
    devices = {r.name: r.devices for r in candidate_remedies(device, thorough=True)}
    return [
        c["name"]
        for c in entry["candidates"]
        if c["verdict"] == "infeasible" and c["name"] in devices and device not in devices[c["name"]]
    ]


def _verbatim(line: str) -> Text:
    """A line to paste, never wrapped or cut (print with ``crop=False``)."""
    return Text(line, no_wrap=True, overflow="ignore")


def optimize_renderables(
    doc: dict, db: str | None = None, width: int | None = None, program: str = "surrobench"
) -> list:
    """Rich renderables per config, then the stored runs; print with ``soft_wrap=True`` and ``crop=False``."""
    out: list = []
    for entry in doc["configs"]:
        if entry.get("error") and not entry["candidates"]:  # the baseline did not run: one line says why
            title = rich_escape(config_title(entry))
            recipe = [rich_escape(line) for line in recipe_lines(entry, doc.get("verify", 0))]
            out.append(Group(title, *recipe))
            continue
        skipped = off_device(entry)
        table_rows = [row for row in rows(entry) if row["name"] not in skipped]
        tables = [
            _terminal_table(
                rich_escape(config_title(entry)) if i == 0 else None, cols, table_rows, width, doc.get("rounds")
            )
            for i, cols in enumerate(_TERMINAL_TABLES)
        ]
        lines = [f"{row['name']}: {row['reason']}" for row in table_rows]
        if skipped:
            lines.append(f"not for {entry['device']} (not timed): {', '.join(skipped)}")
        lines += [f"top op of {row['name']}: {row['top_op']}" for row in table_rows if row["top_op"] != "-"]
        verbatim = {f"    {c}" for c in entry["recipe"].get("code", ())}
        verbatim.add(f"run it: {entry['recipe'].get('run_command')}")
        recipe = [
            _verbatim(line) if line in verbatim else rich_escape(line)
            for line in recipe_lines(entry, doc.get("verify", 0))
        ]
        out.append(Group(*tables, *(rich_escape(line) for line in lines), *recipe))
    out.append(rich_escape(stored_line(doc, db, program)))
    return out


def optimize_markdown(doc: dict, db: str | None = None) -> str:
    """The document as markdown: per config a heading, table, note and the recipe in a code block."""
    parts = []
    for entry in doc["configs"]:
        table_rows = [[row[key] for _, key in COLUMNS] for row in rows(entry)]
        parts += [f"### {config_title(entry)}\n", md_table((t for t, _ in COLUMNS), table_rows)]
        if entry["candidates"]:  # a baseline that could not run has no speedups to explain
            parts.append(speedup_note(doc.get("rounds")) + "\n")
        parts.append("```\n" + "\n".join(recipe_lines(entry, doc.get("verify", 0))) + "\n```\n")
    parts.append(stored_line(doc, db).replace("\n", "  \n") + "\n")  # markdown: a hard line break each
    return "\n".join(parts)
