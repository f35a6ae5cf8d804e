"""``surrobench scenarios``: run the planted-bottleneck suite, diagnose each, and check the verdicts.

Exit code 0 when every scenario that ran passed, 1 when one failed (a regression of the diagnosis),
2 for bad input. ``--json`` writes each scenario's outcome and findings; ``--markdown`` the table.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.table import Table

from surrobench.analysis.thresholds import load_thresholds
from surrobench.api.diagnose import diagnose_workload
from surrobench.cli.app import app
from surrobench.records.findings import Finding
from surrobench.cli.options import (
    DbOpt,
    DeviceOpt,
    JsonOpt,
    MarkdownOpt,
    ThresholdsOpt,
    TraceOutOpt,
    TraceOptions,
    WorkloadOptions,
    check_writable,
    console,
    write_json,
    write_output,
)
from surrobench.api.scenarios import Outcome, judge, select
from surrobench.execution.config import MIN_ITERS, MIN_WARMUP
from surrobench.execution.sweep import resolve_device
from surrobench.report.findings import findings_markdown
from surrobench.report.markdown import md_table
from surrobench.results.store import ResultStore

HEADER = ("scenario", "expected", "top finding", "result", "false alarms (controls)", "note")


def _cells(o: Outcome) -> list[str]:
    result = "skipped" if o.passed is None else ("pass" if o.passed else "FAIL")
    return [o.scenario.name, o.scenario.expected, o.top_kind or "-", result, ", ".join(o.false_alarms) or "-", o.note]


def _markdown(outcomes: list[Outcome], findings: dict[str, list[Finding]]) -> str:
    lines = [md_table(HEADER, map(_cells, outcomes)).rstrip("\n")]
    for name, found in findings.items():
        lines += ["", f"#### {name}", "", findings_markdown(found)]
    return "\n".join(lines) + "\n"


@app.command()
def scenarios(
    only: str | None = typer.Option(None, "--only", help="Comma-separated scenario names (default: all)."),
    device: str = DeviceOpt,
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    trace_out: Path = TraceOutOpt,
    warmup: int = typer.Option(MIN_WARMUP, "--warmup"),
    iters: int = typer.Option(MIN_ITERS, "--iters"),
    config: Path | None = ThresholdsOpt,
    markdown: Path | None = MarkdownOpt,
) -> None:
    """Run each planted-bottleneck scenario, diagnose it, check that its bottleneck is the top finding."""
    chosen = select(only)
    th = load_thresholds(config)
    check_writable(json_out, "--json")
    check_writable(markdown, "--markdown")
    options = TraceOptions(trace_out=trace_out).torch(iters)
    outcomes, findings, used = [], {}, resolve_device(device)
    with ResultStore(db) as store:
        for s in chosen:
            shape = s.shape if used == "cuda" else s.cpu_shape
            if shape is None:
                outcomes.append(Outcome(s, None, None, (), s.cpu_skip))
                continue
            workload = WorkloadOptions(
                model=s.model,
                shape=shape,
                batch=str(s.batch),
                precision=s.precision,
                mode="eager",
                device=device,
                warmup=warmup,
                iters=iters,
                seed=0,
                cudnn_benchmark=False,
                input_sets=3,
                tag=f"scenario:{s.name}",
            )
            record, found, _, _ = diagnose_workload(workload.plan(), store, options, th)
            findings[s.name] = found
            outcomes.append(replace(judge(s, found), note=f"run {record.run_id}"))
    table = Table(title=f"scenarios on {used}")
    for col in HEADER:
        table.add_column(col)
    for o in outcomes:
        table.add_row(*_cells(o))
    console.print(table)
    if markdown is not None:
        write_output(markdown, _markdown(outcomes, findings), "--markdown")
    write_json(
        json_out,
        {
            "schema": "surrobench/scenarios-v1",
            "outcomes": [
                {
                    "scenario": o.scenario.name,
                    "expected": o.scenario.expected,
                    "top_kind": o.top_kind,
                    "passed": o.passed,
                    "false_alarms": list(o.false_alarms),
                    "note": o.note,
                    "findings": [f.to_json() for f in findings.get(o.scenario.name, [])],
                }
                for o in outcomes
            ],
        },
    )
    if any(o.passed is False for o in outcomes):
        raise typer.Exit(1)
