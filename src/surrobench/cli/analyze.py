"""``surrobench analyze PATH``: read a Kineto trace or an nsys export and answer from the timeline
"when the expensive thing runs, is the GPU working, and if not, why?" (docs/sources.md, method §3)."""

from __future__ import annotations

from pathlib import Path

import typer

from surrobench.api.defaults import DEFAULT_GAP_THRESHOLD_NS
from surrobench.api import analyze as trace_api
from surrobench.api.rank_traces import RankTraces
from surrobench.cli.app import app
from surrobench.cli.options import output_option, DaskSchedulerOpt, WorkersOpt, console, write_json
from surrobench.report.timeline import cross_rank_rich, rank_traces_rich, render_timeline


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
    result = trace_api.analyze_trace(
        paths, gap_threshold_us=gap_threshold_us, workers=workers, dask_scheduler=dask_scheduler
    )
    if isinstance(result, RankTraces):
        title = f"cross-rank findings of {len(result.ranks)} rank traces"
        console.print(rank_traces_rich(result, title, width=console.width))
    else:
        console.print(render_timeline(result.timeline))  # the one console: the same piped width as every command
        if result.cross_rank is not None:
            console.print(cross_rank_rich(result.cross_rank, console.width))
    write_json(json_path, result.to_json())
