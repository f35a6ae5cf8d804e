"""The judgment table (docs/sources.md, method §4) for the terminal (rich: :func:`findings_brief`, and
:func:`findings_explained` for ``--explain``) and for markdown/HTML (every field). Text wraps at spaces only;
a word too long is cut with an ellipsis, whole in ``--explain``."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from rich.console import Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from surrobench.records.findings import Finding
from surrobench.records.run import fmt
from surrobench.report.escape import md_escape, md_table, plain, rich_escape

#: Printed under an empty judgment table.
NO_FINDINGS = "no findings: nothing above the report floor (see surrobench.analysis.thresholds)"
#: Printed in its place when a config failed (its ``failed:`` line is above): it was not diagnosed.
NO_FINDINGS_FAILED = "no findings among the configs that ran; a config that failed (above) has nothing to diagnose"
PROFILER_SIDE = ("profiler", "roofline")
_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "green"}
#: Where a finding of a trace diagnosed alone (no config) is.
TRACE_WHERE = "trace"
#: Lines the action may take in the compact view; the rest is cut at a space and ends with " …".
BRIEF_ACTION_LINES = 2
#: Beside the header, a summary gets at least this many cells (about seven words), else a line of its own.
_SUMMARY_INLINE_CELLS = 48
_ACTION_INDENT, _INDENT = "    → ", " " * 6
_ELLIPSIS = " …"


def failed_lines(failed: list[dict]) -> list[str]:
    """One rich line per failed config (``context.failed_configs``): ``failed: LABEL: STATUS: CAUSE [ERROR]``."""
    return [f"[bold red]failed:[/bold red] {rich_escape(_failed_text(c))}" for c in failed]


def evidence_check_lines(checks: dict) -> list[str]:
    """One rich line per ``context.evidence_checks`` entry that is not ok: ``cannot judge|unreliable profile|partial attribution: LABEL: WHY``."""
    return [f"[bold yellow]{rich_escape(text)}[/bold yellow]" for text in evidence_check_texts(checks)]


def evidence_check_texts(checks: dict) -> list[str]:
    """The plain text of :func:`evidence_check_lines`, one per check that is not ``ok`` (markdown, HTML)."""
    return [_check_text(key, c) for key, c in checks.items() if c["verdict"] != "ok"]


def headroom_lines(headroom: dict) -> list[str]:
    """One rich line per config of ``context.headroom``: ``roofline: LABEL: step 1.234 ms, 3.1x its roofline bound 0.400 ms (...)``."""
    lines = []
    for label, h in headroom.items():
        times = f"{h['headroom']:.1f}x" if h["headroom"] is not None else "no"
        covered = f", {h['covered_share']:.0%} of kernel time" if h.get("covered_share") is not None else ""
        bound = f"{h['roofline_bound_ms']:.3f} ms ({h['launches']} launches measured{covered})"
        lines.append(f"roofline: {rich_escape(label)}: step {h['step_ms']:.3f} ms, {times} its roofline bound {bound}")
    return lines


def system_lines(systems: dict) -> list[str]:
    """One rich line per config of ``context.system`` (``--system``, ``--system-view``): ``host: LABEL: 0.98 CPUs
    used, IPC 1.20, hottest host function addmm 45% self`` (by self time; the rest, every counter: the JSON)."""
    lines = []
    for label, v in systems.items():
        top = max(v.get("hotspots") or [{}], key=lambda h: h.get("self_share") or 0.0)  # not the step's wrapper
        hot = ""
        if top.get("self_share"):
            hot = f", hottest host function {top['function'][:80]} {top['self_share']:.0%} self"
        used = f"{fmt(v.get('cpu_utilization'), '.2f', 'n/a')} CPUs used, IPC {fmt(v.get('ipc'), '.2f', 'n/a')}"
        lines.append(rich_escape(f"host: {label}: {used}{hot}"))
    return lines


_CHECK_HEADS = {"cannot_judge": "cannot judge", "unreliable": "unreliable profile", "partial": "partial attribution"}


def _check_text(key: str, c: dict) -> str:
    """``HEAD: LABEL: WHY`` of one evidence check (:func:`evidence_check_lines`), op-level verdicts' state said."""
    tail = "" if c["verdict"] == "cannot_judge" else "; its op-level verdicts say so"
    return f"{_CHECK_HEADS[c['verdict']]}: {c.get('label') or key}: {c['reason']}{tail}"


def _failed_text(c: dict) -> str:
    """``LABEL: STATUS: CAUSE [ERROR]`` of one failed config, the error alone without a cause."""
    what = f"{c['cause']} [{c['error']}]" if c.get("cause") else str(c.get("error") or "")
    return f"{c['label']}: {c['status']}: {what}"


def _measured(f: Finding) -> str:
    """``measured`` (``in optimization o7`` where cited), then ``whole step`` (:attr:`Finding.whole_step`), ``its
    window drifted: 24.7 ms baseline`` (its ``gain``; the saving is still the timed step's) if so."""
    best = f.best_measured
    drift = f", its window drifted: {best.baseline_ms:.3g} ms baseline" if f.gain["drifted"] else ""
    cited = f" in optimization {best.cited}" if best and best.cited else ""
    return "measured" + cited + ", whole step" * f.whole_step + drift


#: A gain neither measured nor estimated (JSON ``gain``: ``kind`` ``estimate``, ``ms`` null), in every view.
UNKNOWN_GAIN = "est. gain unknown"


def finding_row(f: Finding) -> list[str]:
    """One finding's :data:`HEADER` cells, plain text; gain measured (``2.960 (measured)``, :func:`_measured`), else
    estimated (``3.681``), or the terminal's words where no remedy it names measured faster (:func:`brief_cells`)."""
    gain = UNKNOWN_GAIN if f.gain_ms is None else f"{f.gain_ms:.3f}" + (f" ({_measured(f)})" if f.best_measured else "")
    evidence = ["\n".join(e.text for e in f.evidence if (e.source in PROFILER_SIDE) == side) for side in (True, False)]
    if f.gain["none_faster"]:  # as the terminal says it: "0.000 (measured)" hid an inconclusive or slower remedy
        gain = brief_cells(f)["gain"]
    return [f.kind, f.severity, f.config or "", f.summary, *evidence, f.action, gain]


HEADER = ("kind", "severity", "config", "summary", "profiler evidence", "timeline / run evidence", "action", "gain")


def brief_cells(f: Finding) -> dict[str, str]:
    """The compact fields of ``f``; ``gain`` read from :attr:`Finding.gain` (the JSON's): measured (with its remedy,
    :func:`_measured`, or none faster), else estimated (``est.``), :data:`UNKNOWN_GAIN` when unknown."""
    gain = UNKNOWN_GAIN if f.gain["ms"] is None else f"est. {f.gain['ms']:.3f} ms/step"  # an estimate says so
    if f.gain["remedy"] is not None:
        gain = f"saves {f.gain['ms']:.3f} ms/step {_measured(f)} ({f.gain['remedy']})"
    elif f.gain["none_faster"]:  # another finding's remedy may be faster; an alarm's code change left, estimated:
        est = f.severity_estimated and f.alarm
        gain = "no remedy it names measured faster" + (f", severity est. from its ops' time, {gain}" if est else "")
    where, action, summary = plain(f.config or TRACE_WHERE), plain(f.action), plain(f.summary)
    return {"severity": f.severity, "kind": f.kind, "where": where, "gain": gain, "action": action, "summary": summary}


def _line(text: str, style: str = "") -> Text:
    return Text(text, style=style, no_wrap=True, overflow="ellipsis")


def _shorten(text: str, cells: int, lines: int) -> list[str]:
    """``text`` in at most ``lines`` lines of ``cells``, wrapped at spaces, the last ending " …" if cut."""
    return textwrap.wrap(
        text, cells, max_lines=lines, placeholder=_ELLIPSIS, break_long_words=False, break_on_hyphens=False
    ) or [""]


def findings_brief(findings: list[Finding], width: int | None = None) -> Group:
    """The compact view: a header line per finding with its summary (below it when fewer than
    :data:`_SUMMARY_INLINE_CELLS` cells are left beside it), then its action on :data:`BRIEF_ACTION_LINES` lines."""
    cells = [brief_cells(f) for f in findings]
    pad = {key: max((len(c[key]) for c in cells), default=0) for key in ("severity", "kind", "gain", "where")}
    lines: list[Text] = []
    for c in cells:
        head = Text(overflow="ellipsis")  # the summary is sized to fit; on a narrow terminal `where` wraps at spaces
        head.append(c["severity"].ljust(pad["severity"]), style=_STYLE[c["severity"]])
        head.append(f"  {c['kind'].ljust(pad['kind'])}  {c['gain'].ljust(pad['gain'])}  ", style="bold")
        where = c["where"].ljust(pad["where"])
        room = None if width is None else width - head.cell_len - len(where) - 2
        below = bool(c["summary"]) and room is not None and room < min(len(c["summary"]), _SUMMARY_INLINE_CELLS)
        head.append(c["where"] if below else where)  # unpadded, alone, when the summary goes below
        if not below and c["summary"]:
            summary = c["summary"] if room is None else _shorten(c["summary"], room, 1)[0]
            head.append(f"  {summary}", style="dim")
        lines.append(head)
        if below:  # too little room beside the header: the summary on a line of its own
            lines.append(_line(_INDENT + _shorten(c["summary"], width - len(_INDENT), 1)[0], "dim"))
        if width is None:
            lines.append(_line(_ACTION_INDENT + c["action"]))
            continue
        wrapped = _shorten(c["action"], max(width - len(_ACTION_INDENT), 1), BRIEF_ACTION_LINES)
        lines += [_line((_ACTION_INDENT if i == 0 else _INDENT) + w) for i, w in enumerate(wrapped)]
    return Group(*lines)


def _explained_one(f: Finding, number: int) -> Group:
    c = brief_cells(f)
    head = Text.assemble(f"{number}. ", (c["severity"], _STYLE[f.severity]), (f"  {c['kind']}  {c['gain']}  ", "bold"))
    head.append(c["where"])
    body = Table.grid(padding=(0, 2))
    body.add_column(style="dim", no_wrap=True)
    body.add_column(overflow="ellipsis")  # wraps at spaces; only a word wider than the column is cut
    body.add_row("summary", Text(c["summary"]))
    for e in f.evidence:
        body.add_row(e.source, Text(plain(e.text)))
    body.add_row("action", Text(c["action"]))
    if f.remedies:  # what `surrobench optimize --only` measures for this action
        body.add_row("remedies", Text(", ".join(f.remedies)))
    return Group(head, Padding(body, (0, 0, 1, 3)))


def findings_explained(findings: list[Finding]) -> Group:
    """``--explain``: per finding its header, summary, evidence with sources, whole action and remedy ids."""
    return Group(*(_explained_one(f, i) for i, f in enumerate(findings, 1)))


def findings_markdown(findings: list[Finding]) -> str:
    """A GitHub-flavoured markdown table; evidence lines joined with ``<br>``, pipes escaped (:func:`md_table`)."""
    rows = [finding_row(f) for f in findings] or [["(no findings)"] + [""] * (len(HEADER) - 1)]
    return md_table(HEADER, rows)


#: The last line of the compact view: where the rest is.
BRIEF_HINT = "--explain prints the evidence and whole actions; --json and the HTML report always hold them"


#: The line of a config diagnosed without a finding of its own, after its label.
NO_FINDING = "no finding (nothing above the report floor)"


def quiet_configs(findings: list[Finding], labels: Iterable[str], failed: Iterable[dict] = ()) -> list[str]:
    """Config ``labels`` (once each, in order) with no finding that did not fail."""
    seen = {f.config for f in findings} | {c["label"] for c in failed}
    return [label for label in dict.fromkeys(labels) if label not in seen]


def findings_renderables(
    findings: list[Finding],
    title: str,
    width: int | None = None,
    *,
    explain: bool = False,
    hint: str = BRIEF_HINT,
    any_failed: bool = False,
    quiet: Iterable[str] = (),
) -> list[Text | Group | str]:
    """What ``diagnose`` prints: ``title`` with the count, the brief view and ``hint`` (``explain``: the explained
    view), else :data:`NO_FINDINGS` (:data:`NO_FINDINGS_FAILED` if ``any_failed``); then a :data:`NO_FINDING`
    line per ``quiet`` config."""
    count = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
    heading = Text(f"{plain(title)}: {count}", style="bold")
    if not findings:
        return [heading, NO_FINDINGS_FAILED if any_failed else NO_FINDINGS]
    body = findings_explained(findings) if explain else findings_brief(findings, width)
    lines = [Text(f"{plain(label)}: {NO_FINDING}") for label in quiet]
    return [heading, body, *lines, *([] if explain else [Text(hint, style="dim")])]


def findings_section_markdown(
    findings: list[Finding], title: str, failed: list[dict] = (), quiet: Iterable[str] = (), checks: dict | None = None
) -> str:
    """The judgment table as markdown, with failed, evidence-check and quiet lines."""
    failures = "".join(f"Failed: {md_escape(_failed_text(c), newline=' ')}\n\n" for c in failed)
    failures += "".join(f"{md_escape(text, newline=' ')}\n\n" for text in evidence_check_texts(checks or {}))
    quiet_lines = "".join(f"{md_escape(label, newline=' ')}: {NO_FINDING}\n\n" for label in quiet)
    return f"### {md_escape(title, newline=' ')}\n\n" + failures + quiet_lines + findings_markdown(findings)
