"""``surrobench diagnose``: verdicts with evidence, actions and estimated gains (docs/cli.md, "diagnose") of a
workload, a stored run (``--run``) or traces: one call of :func:`surrobench.api.diagnose.diagnose`.
``--json`` writes ``surrobench/diagnosis-v8``. Exit 3 when a config failed, 4 when one cannot be judged."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import typer

from surrobench.api.defaults import load_thresholds
from surrobench.cli.app import app
from surrobench.cli.options import print_warnings, DbOpt, MarkdownOpt, ThresholdsOpt, JsonOpt, SWEEP_ONLY
from surrobench.cli.options import TORCH_TRACE_ONLY, TraceOptions, WorkloadOptions, flag, option_groups, console
from surrobench.cli.options import err_console, write_json, write_output, WorkersOpt, DaskSchedulerOpt, command_line
from surrobench.cli.options import given_options, invoked_as
from surrobench.errors import EXIT_CANNOT_JUDGE, EXIT_CONFIGS_FAILED, UsageError
from surrobench.report.kernel_tables import counters_renderables
from surrobench.report.timeline import cross_rank_rich
from surrobench.report.progress import progress_hooks
from surrobench.report.findings import evidence_check_lines, failed_lines, findings_renderables
from surrobench.report.findings import findings_section_markdown, headroom_lines, quiet_configs, system_lines


#: Options that describe a workload to run: meaningless for a TRACE or a stored --run, so refused there.
_WORKLOAD_PARAMS = {f.name for group in (WorkloadOptions, TraceOptions) for f in fields(group)} | {
    "system_pass",
    "measure_s",
}


def _lines(result) -> tuple[list[dict], list[str], dict]:
    """A diagnosis's failed configs, those without a finding and its evidence checks: every config gets a line."""
    failed, checks = result.context.get("failed_configs", []), result.context.get("evidence_checks") or {}
    judged = (r.label() for r in result.run.results) if result.run else ()
    runs = [label for label in judged if checks.get(label, {}).get("verdict") != "cannot_judge"]  # a line of its own
    return failed, quiet_configs(list(result.findings), runs, failed), checks


def diagnosis_markdown(result, lines: tuple | None = None) -> str:
    """``--markdown`` of a :class:`surrobench.api.diagnose.Diagnosis`, a cut-short one's too, its title then saying
    so (``context.interrupted``); ``lines``: its :func:`_lines` where built already."""
    cut = " (interrupted: what was read before the signal)" if result.context.get("interrupted") else ""
    return findings_section_markdown(list(result.findings), result.title + cut, *(lines or _lines(result)))


@app.command(markdown=diagnosis_markdown)
@option_groups(omit=(*SWEEP_ONLY, *TORCH_TRACE_ONLY))
def diagnose(
    ctx: typer.Context,
    traces: list[Path] | None = typer.Argument(
        None,
        help="Kineto trace, a folder or list of per-rank traces, or an nsys export to diagnose alone; "
        "omit to run the workload options.",
    ),
    run_id: str | None = typer.Option(None, "--run", help="Diagnose a stored run (id or unique prefix) in --db."),
    *,
    workload: WorkloadOptions,
    db: Path = DbOpt,
    json_out: Path = JsonOpt,
    tracing: TraceOptions,
    config: Path | None = ThresholdsOpt,
    system_view: Path | None = typer.Option(None, "--system-view", help="SystemView JSON (perf / py-spy) to use."),
    system_pass: bool = flag(
        False,
        "--system",
        help="Also run each config under Linux perf "
        "and py-spy and diagnose with that system view (cpu_preprocess, idle CPU).",
    ),
    measure_s: float | None = typer.Option(
        None,
        "--measure-s",
        help="Seconds per config to measure the remedies the findings name (CUDA graph, compile, TF32, fp16/bf16/fp32, "
        "channels_last, cudnn.benchmark, threads); 0: estimates only. Default 45, all of diagnose by 75 s a config.",
        show_default=False,
    ),
    markdown: Path | None = MarkdownOpt,
    explain: bool = flag(
        False, "--explain", help="Print each finding's evidence and whole action (the JSON and HTML always hold them)."
    ),
    workers: int | None = WorkersOpt,
    dask_scheduler: str | None = DaskSchedulerOpt,
) -> None:
    """Verdicts with evidence: launch-bound, syncs, copies, memory/compute-bound, streams, scaling, precision."""
    import surrobench.api.diagnose as api_diagnose  # imports torch: here, so that `--help` needs none

    th = load_thresholds(config)
    system = api_diagnose.load_system_view(system_view)
    if traces and run_id is not None:
        raise UsageError("give a TRACE or --run RUN_ID, not both")
    plan = options = None  # a TRACE or --run diagnoses what was recorded: no workload to plan
    if traces or run_id is not None:
        api_diagnose.refuse_workload(given_options(ctx, _WORKLOAD_PARAMS), trace=bool(traces))
    else:
        tracing.schedule(workload.iters)  # needs only --iters: fails before the plan resolves and checks models
        plan, options = workload.plan(), tracing.torch(workload.iters)
    with progress_hooks(err_console) as hooks:
        result = api_diagnose.diagnose(
            plan,
            trace=traces or None,
            run=run_id,
            db=db,
            thresholds=th,
            system=system,
            system_pass=system_pass,
            profile_options=options,
            measure_s=measure_s,
            command=command_line(),
            program=invoked_as(),
            hooks=hooks,
            workers=workers,
            dask_scheduler=dask_scheduler,
        )
    if result.cross_rank is not None:
        console.print(cross_rank_rich(result.cross_rank, console.width))
    context = result.context
    failed, quiet, checks = _lines(result)
    write_output(markdown, diagnosis_markdown(result, (failed, quiet, checks)) if markdown else "", "--markdown")
    write_json(json_out, result.to_json())  # the documents first: a signal while the tables print must not lose them
    print_warnings(result.warnings, "note")  # first: a note may say why there is nothing to find (no op table stored)
    # the headline: a config that failed has nothing to diagnose; then why a verdict is held back, before the verdicts
    lines = [*failed_lines(failed), *evidence_check_lines(checks), *headroom_lines(context.get("headroom") or {})]
    for line in lines + system_lines(context.get("system") or {}):  # a host view: its headline, the rest in the JSON
        console.print(line, soft_wrap=True)
    for renderable in counters_renderables(context.get("counters", {}), width=console.width):
        console.print(renderable)
    shown = findings_renderables(
        list(result.findings), result.title, width=console.width, explain=explain, any_failed=bool(failed), quiet=quiet
    )
    if failed and len(failed) == len(result.run.results):  # none ran: the heading, not "no findings among" none
        del shown[1:]
    for renderable in shown if result.findings or not result.cannot_judge else ():  # "cannot judge" said it, not "none"
        console.print(renderable)
    if failed:
        raise typer.Exit(EXIT_CONFIGS_FAILED)
    if result.cannot_judge:
        raise typer.Exit(EXIT_CANNOT_JUDGE)
