"""``surrobench run``: the benchmark sweep (workload x execution), stored and tabulated; with
``--profile torch`` a profiling phase follows (one child process per config, :mod:`surrobench.collect`)."""

from __future__ import annotations

from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from surrobench.cli import app
from surrobench.cli.options import (
    PROFILERS, BatchOpt, CudnnOpt, DbOpt, DeviceOpt, InputSetsOpt, ItersOpt, JsonOpt, ModeOpt, ModelOpt,
    PrecisionOpt, ProfileActiveOpt, ProfileOpt, ProfileWaitOpt, ProfileWarmupOpt, SeedOpt, ShapeOpt, TagOpt,
    TraceGzipOpt, TraceOutOpt, WarmupOpt, WithStackOpt, build_profile_options, build_request, check_writable,
    command_line, console, err_console, write_json,
)  # fmt: skip
from surrobench.collect.profile_phase import ProfileOptions, ProfileReport, profile_run
from surrobench.errors import UsageError
from surrobench.execution.sweep import SweepRequest, execute_sweep
from surrobench.report.terminal import results_table
from surrobench.results.schema import RunRecord
from surrobench.results.store import ResultStore


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    )  # fmt: skip


def timed_and_profiled(
    request: SweepRequest, store: ResultStore, options: ProfileOptions | None
) -> tuple[RunRecord, list[str], list[ProfileReport]]:
    """The timing phase with a progress bar, then (with ``options``) the profiling phase.

    Returns:
        The run (``top_op`` set on profiled configs), the sweep's warnings and the profile reports.
    """
    with _progress() as progress:
        task = progress.add_task("benchmarking", total=None)

        def advance(result) -> None:
            progress.update(task, advance=1, description=f"{result.model} {result.shape_label} b{result.batch}")

        record, warnings = execute_sweep(
            request, store, command=command_line(),
            on_start=lambda total: progress.update(task, total=total), on_result=advance,
        )  # fmt: skip
        if options is None:
            return record, warnings, []
        n_ok = sum(r.status == "ok" for r in record.results)
        profiling = progress.add_task("profiling", total=n_ok)
        record, reports = profile_run(
            request, record, store, options,
            on_report=lambda r: progress.update(profiling, advance=1, description=f"profiled {r.label()}"),
        )  # fmt: skip
    warnings += [f"{r.label()}: {w}" for r in reports for w in r.warnings]
    warnings += [f"{r.label()}: profiling {r.status}: {r.error}" for r in reports if r.status != "ok"]
    return record, warnings, reports


@app.command()
def run(
    model: str = ModelOpt, shape: str = ShapeOpt, batch: str = BatchOpt, precision: str = PrecisionOpt,
    mode: str = ModeOpt, device: str = DeviceOpt, warmup: int = WarmupOpt, iters: int = ItersOpt,
    seed: int = SeedOpt, cudnn_benchmark: bool = CudnnOpt, input_sets: int = InputSetsOpt,
    db: Path = DbOpt, json_out: Path = JsonOpt, tag: str = TagOpt, profile: str = ProfileOpt,
    profile_wait: int = ProfileWaitOpt, profile_warmup: int = ProfileWarmupOpt,
    profile_active: int = ProfileActiveOpt, with_stack: bool = WithStackOpt, trace_out: Path = TraceOutOpt,
    trace_gzip: bool = TraceGzipOpt,
) -> None:  # fmt: skip
    """Benchmark inference latency, throughput and peak memory over a shape ladder x batch list."""
    if profile not in PROFILERS:
        raise UsageError(f"--profile {profile!r}: choose {' or '.join(PROFILERS)}")
    request = build_request(model, shape, batch, precision, mode, device, warmup, iters, seed,
                            cudnn_benchmark, input_sets, tag)  # fmt: skip
    check_writable(json_out, "--json")
    options = None
    if profile == "torch":
        options = build_profile_options(profile_wait, profile_warmup, profile_active, with_stack, trace_out,
                                        trace_gzip, iters)  # fmt: skip
    with ResultStore(db) as store:
        record, warnings, _ = timed_and_profiled(request, store, options)
    console.print(results_table(record.results, title=f"run {record.run_id} on {record.env['device_name']}"))
    for warning in warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print(f"stored in {db} as run {record.run_id}")
    write_json(json_out, record.to_json())
