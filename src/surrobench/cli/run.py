"""``surrobench run``: the benchmark sweep (workload x execution), stored and tabulated."""

from __future__ import annotations

from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from surrobench.cli import app
from surrobench.cli.options import (
    BatchOpt, CudnnOpt, DbOpt, DeviceOpt, InputSetsOpt, ItersOpt, JsonOpt, ModeOpt, ModelOpt, PrecisionOpt,
    SeedOpt, ShapeOpt, TagOpt, WarmupOpt, build_request, check_writable, command_line, console, err_console,
    write_json,
)  # fmt: skip
from surrobench.execution.sweep import execute_sweep
from surrobench.report.terminal import results_table
from surrobench.results.store import ResultStore


@app.command()
def run(
    model: str = ModelOpt, shape: str = ShapeOpt, batch: str = BatchOpt, precision: str = PrecisionOpt,
    mode: str = ModeOpt, device: str = DeviceOpt, warmup: int = WarmupOpt, iters: int = ItersOpt,
    seed: int = SeedOpt, cudnn_benchmark: bool = CudnnOpt, input_sets: int = InputSetsOpt,
    db: Path = DbOpt, json_out: Path = JsonOpt, tag: str = TagOpt,
) -> None:  # fmt: skip
    """Benchmark inference latency, throughput and peak memory over a shape ladder x batch list."""
    request = build_request(model, shape, batch, precision, mode, device, warmup, iters, seed,
                            cudnn_benchmark, input_sets, tag)  # fmt: skip
    check_writable(json_out, "--json")
    with ResultStore(db) as store, Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    ) as progress:  # fmt: skip
        task = progress.add_task("benchmarking", total=None)

        def advance(result) -> None:
            progress.update(task, advance=1, description=f"{result.model} {result.shape_label} b{result.batch}")

        record, warnings = execute_sweep(
            request, store, command=command_line(),
            on_start=lambda total: progress.update(task, total=total), on_result=advance,
        )  # fmt: skip
    console.print(results_table(record.results, title=f"run {record.run_id} on {record.env['device_name']}"))
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print(f"stored in {db} as run {record.run_id}")
    write_json(json_out, record.to_json())
