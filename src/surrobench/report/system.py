"""The system view of one config (``surrobench perf``, ``run --profile perf``) as rich renderables."""

from __future__ import annotations

from rich.console import Group

from surrobench.api.nsys import NsysReport
from surrobench.api.perf import PerfReport
from surrobench.collect.perf_parse import PERF_EVENTS
from surrobench.report.cells import fmt
from surrobench.report.escape import cut, rich_escape
from surrobench.report.fit import plain_table
from surrobench.report.timeline import render_timeline

_NAME_WIDTH = 90


def render_phase_report(report: PerfReport | NsysReport):
    """Rich renderable of one perf or nsys report; a one-line status for a config that failed. Perf's: headline
    counters, the counter table with reasons, host hot spots and the flame graph path."""
    if report.status != "ok":
        return f"[yellow]{rich_escape(f'{report.label()}: {report.status}: {report.error}')}[/]"
    if isinstance(report, NsysReport):
        return render_timeline(report.timeline)
    v, s = report.system.view, report.system.summary
    parts: list = [
        f"[bold]{report.label()}[/]: {report.steps} steps in {fmt(v.wall_ms, '.1f', 'n/a')} ms; task-clock "
        f"{fmt(v.task_clock_ms, '.1f', 'n/a')} ms; CPU utilization {fmt(v.cpu_utilization, '.2f', 'n/a')} CPUs; "
        f"IPC {fmt(v.ipc, '.2f', 'n/a')}; cache-miss rate {fmt(s.cache_miss_rate if s else None, '.1%', 'n/a')}; "
        f"branch-miss rate {fmt(s.branch_miss_rate if s else None, '.1%', 'n/a')}"
    ]
    if report.step_check is not None and report.step_check.problems:
        parts.append(f"[yellow]unreliable: {rich_escape(report.step_check.reason())}[/]")
    rows, said = [], {}  # a note shared by several events (no PMU in a VM) is written once, then referred to
    for event in PERF_EVENTS:
        value = v.counters.get(event)
        note = v.unavailable.get(event) or (
            f"multiplexed: ran {s.multiplexed[event]:.0%} of the window, scaled" if s and event in s.multiplexed else ""
        )
        if note and note in said:
            note = f"as {said[note]}"
        elif note:
            said[note] = event
        unit = " ms" if event == "task-clock" else ""
        rows.append((event, "—" if value is None else f"{value:,.{2 if unit else 0}f}{unit}", note))
    parts.append(
        plain_table(("event", "count", "note"), rows, title="perf stat over the measured steps", right=("count",))
    )
    if v.hotspots:
        rows = [
            (f"{h.share:.1%}", fmt(h.self_share, ".1%", ""), h.source, cut(h.function, _NAME_WIDTH)) for h in v.hotspots
        ]
        header, title = ("share", "self", "sampler", "function"), "Host hot spots in the measured steps"
        parts.append(plain_table(header, rows, title=title, right=header[:-1]))
    if report.system.flamegraph:
        parts.append(f"flame graph: {report.system.flamegraph}")
    return Group(*parts)
