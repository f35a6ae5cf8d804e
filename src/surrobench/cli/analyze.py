"""``surrobench analyze PATH``: read a Kineto trace or an nsys export and answer from the timeline
"when the expensive thing runs, is the GPU working, and if not, why?" (docs/sources.md, method §3)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.api.defaults import DEFAULT_GAP_THRESHOLD_NS
from surrobench.api import analyze as trace_api
from surrobench.api.rank_traces import analyze_rank_traces, rank_trace_set
from surrobench.cli.app import app
from surrobench.cli.options import output_option, DaskSchedulerOpt, WorkersOpt, console, write_json
from surrobench.report.timeline import rank_traces_rich
from surrobench.report.timeline import render_timeline


@app.command()
def analyze(
    paths: list[Path] = typer.Argument(
        ...,
        help="Kineto trace (.json/.json.gz), a folder or list of per-rank "
        "traces, an nsys SQLite export, or a .nsys-rep/.qdrep report.",
    ),
    json_path: Path | None = output_option(None, "--json", help="Also write the full report as JSON to PATH."),
    gap_threshold_us: float = typer.Option(
        DEFAULT_GAP_THRESHOLD_NS / 1e3,
        "--gap-threshold-us",
        min=0.0,
        help="Shortest GPU idle interval reported as a gap (us).",
    ),
    workers: int | None = WorkersOpt,
    dask_scheduler: str | None = DaskSchedulerOpt,
) -> None:
    """Timeline analysis: GPU busy/idle, gaps and their causes, launches, streams; across ranks for a folder
    of rank traces (steps aligned, time in collectives, waiting for late ranks)."""
    trace_api.check_gap_threshold(gap_threshold_us)  # before reading what may be a large trace
    gap_threshold_ns = round(gap_threshold_us * 1e3)
    rank_files = rank_trace_set(paths)
    if rank_files is None:
        report = trace_api.analyze(trace_api.load_trace(paths[0]), gap_threshold_us=gap_threshold_us)
        console.print(render_timeline(report))  # the one console: the same piped width as every command
        write_json(json_path, report.to_dict())
        return
    traces = analyze_rank_traces(
        rank_files, diagnose=False, gap_threshold_ns=gap_threshold_ns, workers=workers, dask_scheduler=dask_scheduler
    )
    title = f"cross-rank findings of {len(rank_files)} rank traces"
    console.print(rank_traces_rich(traces, render_timeline, title, width=console.width))
    write_json(json_path, traces.to_dict())
