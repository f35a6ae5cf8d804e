"""``surrobench diagnose``: the judgment table -- verdicts with evidence, actions and estimated gains.

Three sources, one table (course ch. 3, section 4: the profiler says which op is expensive, the timeline
whether the GPU works while it runs):

- ``surrobench diagnose --model ... --shape ...``: timing, then profiling in child processes, then the
  timeline of each profiled trace, the roofline (FLOP counter run once per config) and the run-level checks;
- ``surrobench diagnose --run RUN_ID``: a stored run, its op tables and (if still on disk) its traces;
- ``surrobench diagnose TRACE``: a Kineto trace or nsys export alone, with the evidence a trace holds;
  several rank traces (a folder or a list) are analyzed in worker processes, compared across ranks and
  diagnosed together (:func:`surrobench.api.rank_traces.analyze_rank_traces`).

``--json`` writes ``surrobench/diagnosis-v1`` (:func:`surrobench.records.findings.diagnosis_json`); for a
workload its context carries each config's per-operator roofline (``context.roofline[config]``: name, FLOPs,
bytes, intensity, achieved rates, bound; null where unknown).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import typer

from surrobench.analysis.diagnose import diagnose_run, diagnose_trace, trace_evidence
from surrobench.analysis.evidence import ConfigEvidence, op_time_scale
from surrobench.analysis.measured_remedies import cite_measured
from surrobench.analysis.roofline import H200_FALLBACK, count_op_costs, roofline
from surrobench.analysis.thresholds import Thresholds, load_thresholds
from surrobench.api.optimize import measured_for
from surrobench.cli.app import app
from surrobench.records.findings import Finding, diagnosis_json
from surrobench.report.escape import md_escape, rich_escape
from surrobench.cli.options import (
    TrustPickleOpt,
    BatchOpt, CudnnOpt, DbOpt, MarkdownOpt, ThresholdsOpt, DeviceOpt, InputSetsOpt, ItersOpt, JsonOpt, ModeOpt, ModelOpt, PrecisionOpt,
    ProfileActiveOpt, ProfileWaitOpt, ProfileWarmupOpt, SeedOpt, ShapeOpt, TagOpt, TraceOutOpt, WarmupOpt,
    build_profile_options, build_request, check_writable, console, err_console, write_json, write_output, WorkersOpt,
    DaskSchedulerOpt,
)  # fmt: skip
from surrobench.api.perf import perf_config
from surrobench.api.rank_traces import analyze_rank_traces, rank_trace_set
from surrobench.cli.run import timed_and_profiled
from surrobench.collect.perf_phase import PerfOptions
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.execution.runner import config_step, prepare_model
from surrobench.execution.sweep import SweepRequest, plan_sweep
from surrobench.records import schemas
from surrobench.records.ceilings import Ceilings
from surrobench.records.run import RunRecord
from surrobench.records.system import SystemView
from surrobench.report.cross_rank import cross_rank_rich
from surrobench.report.findings import findings_markdown, findings_rich
from surrobench.results.ceilings import load_ceilings
from surrobench.results.store import ResultStore, op_profile_step_ms, op_profile_trace
from surrobench.trace import load_trace
from surrobench.workload.loader import resolve_model


def device_ceilings(record: RunRecord) -> tuple[Ceilings | None, str]:
    """This machine's calibrated ceilings of the run's device (at the run's thread count on a CPU); the
    built-in H200 numbers for an uncalibrated GPU (said in the note); None on an uncalibrated CPU (H200
    numbers would mislead there)."""
    name = record.env.get("device_name", "")
    threads = record.env.get("threads", record.env.get("cpu_count")) if record.env.get("device") == "cpu" else None
    stored = load_ceilings(name, threads)
    if stored is not None:
        return stored, f"ceilings of {name} calibrated {stored.measured}"
    if record.env.get("device") == "cuda":
        return H200_FALLBACK, f"{name}: {H200_FALLBACK.note}"
    return None, f"{name}: no calibration stored, no roofline (run surrobench calibrate --device cpu)"


def op_costs(cfg: ExecConfig) -> dict:
    """FLOPs and bytes per op of one eager forward of ``cfg`` (the roofline's counts, same inputs)."""
    prepared = prepare_model(resolve_model(cfg.model, cfg.trust_pickle), cfg.device, cfg.seed)
    with config_step(replace(cfg, mode="eager"), prepared) as (step, _):
        return count_op_costs(lambda: step(0))


def diagnose_workload(request: SweepRequest, store: ResultStore, options: ProfileOptions, th: Thresholds,
                      system: SystemView | None = None, system_pass: bool = False,
                      ) -> tuple[RunRecord, list[Finding], list[str], list[ConfigEvidence]]:  # fmt: skip
    """Time, profile and diagnose every config of ``request``; returns the run, ranked findings, warnings and
    the evidence of each diagnosed config (its roofline included).

    ``system_pass``: also run each config under Linux perf / py-spy (:func:`perf_config`, two more child
    processes) and diagnose with that system view (the intro text's first pass: what the CPU is busy with);
    otherwise ``system`` (e.g. from ``--system-view``) applies to every config.
    """
    record, warnings, reports = timed_and_profiled(request, store, options)
    ceilings, note = device_ceilings(record)
    warnings.append(note)
    configs, _ = plan_sweep(request)
    by_key = {r.key(): cfg for cfg, r in zip(configs, record.results)}
    evidence, flops = [], {}
    for report in (r for r in reports if r.status == "ok"):
        result = report.config
        costs = op_costs(by_key[result.key()])
        flops[result.key()] = {name: c.flops for name, c in costs.items()}
        roof, problem = None, ceilings.unusable(result.precision) if ceilings else None
        if problem is not None:  # a zero or non-finite ceiling is no ceiling: no roofline rather than absurd ones
            warnings.append(f"{report.label()}: no {result.precision} roofline against the {ceilings.device_name} "
                            f"calibration: {problem}; re-run surrobench calibrate"
                            f"{' --device cpu' if result.device == 'cpu' else ''}")  # fmt: skip
        elif ceilings is not None:
            unprofiled = result.latency_ms.median if result.latency_ms else None
            scale = op_time_scale(report.op_table, report.profiled_step_ms, unprofiled)
            roof = roofline(report.op_table, costs, ceilings, result.precision, time_scale=scale)
        view = system
        if system_pass:
            passed = perf_config(by_key[result.key()], result, report.config_id, store, PerfOptions(), record.run_id)
            warnings.extend(f"{report.label()}: {note}" for note in passed.warnings)
            view = passed.system.view if passed.system is not None else system
        known = dict(label=report.label(), result=result, op_table=report.op_table, roofline=roof, system=view,
                     profiled_step_ms=report.profiled_step_ms)  # fmt: skip
        evidence.append(trace_evidence(load_trace(report.trace_path), **known) if report.trace_path
                        else ConfigEvidence(**known))  # fmt: skip
    findings = diagnose_run(evidence, list(record.results), th=th, flops=flops,
                            device_memory_bytes=record.env.get("gpu_memory_bytes"))  # fmt: skip
    return record, findings, warnings, evidence


def diagnose_stored(run_id: str, store: ResultStore, th: Thresholds) -> tuple[RunRecord, list[Finding], list[str]]:
    """Diagnose a stored run from its op tables and, where the files still exist, its traces (no roofline:
    that needs the model run once)."""
    record = store.load_run(run_id)
    evidence, warnings = [], []
    for result, config_id in zip(record.results, store.config_ids(record.run_id)):
        table = store.load_op_table(config_id)
        if result.status != "ok" or table is None:
            continue
        label = result.label()
        trace = op_profile_trace(store, config_id)
        known = dict(label=label, result=result, op_table=table, profiled_step_ms=op_profile_step_ms(store, config_id))
        if trace and Path(trace).exists():
            evidence.append(trace_evidence(load_trace(trace), **known))
        else:
            warnings.append(f"{label}: trace {trace or '(none)'} not available, op table only")
            evidence.append(ConfigEvidence(**known))
    findings = diagnose_run(evidence, list(record.results), th=th, device_memory_bytes=record.env.get("gpu_memory_bytes"))
    return record, findings, warnings


def load_system_view(path: Path | None) -> SystemView | None:
    """A :class:`SystemView` from a JSON file: a bare SystemView object (:meth:`SystemView.to_json`) or a
    ``surrobench perf --json`` document (``surrobench/perf-v1``), whose one config with a system view gives it.

    Raises:
        UsageError: unreadable file, invalid JSON, not a SystemView, or a perf document with no config or
            several configs with a system view (which one applies is not for this function to guess).
    """
    if path is None:
        return None
    where = f"--system-view {str(path)!r}"
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and data.get("schema") == schemas.PERF:
            data = _perf_system(data, where)
        return SystemView.from_json(data)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"{where}: not a SystemView JSON ({exc})") from None


def _perf_system(doc: dict, where: str) -> dict:
    """The ``system`` object of the one config of a ``surrobench perf --json`` document that has one."""
    reports = doc.get("perf")
    if not isinstance(reports, list):
        raise ValueError(f"{schemas.PERF} document without a 'perf' list")
    with_view = [r for r in reports if isinstance(r, dict) and isinstance(r.get("system"), dict)]
    if not with_view:
        raise UsageError(f"{where}: no config of this {schemas.PERF} document has a system view "
                         f"({len(reports)} config(s), none passed)")  # fmt: skip
    if len(with_view) > 1:
        names = ", ".join(_perf_label(r) for r in with_view)
        raise UsageError(f"{where}: {len(with_view)} configs have a system view ({names}); give one: "
                         "surrobench perf --json of that config alone, or its 'system' object")  # fmt: skip
    return with_view[0]["system"]


def _perf_label(report: dict) -> str:
    shape = "x".join(str(d) for d in report.get("input_shape") or ())
    return f"{report.get('model')} {shape} b{report.get('batch')} {report.get('precision')} {report.get('mode')}"


def render(findings: list[Finding], title: str, markdown: Path | None) -> None:
    """Print the judgment table; also write it as markdown to ``markdown``."""
    console.print(findings_rich(findings, rich_escape(title), width=console.width))
    if not findings:
        console.print("no findings: nothing above the report floor (see surrobench.analysis.thresholds)")
    if markdown is not None:
        write_output(markdown, f"### {md_escape(title, newline=' ')}\n\n" + findings_markdown(findings), "--markdown")


#: Options that describe a workload to run: meaningless for a TRACE or a stored --run, so refused there.
_WORKLOAD_PARAMS = ("model", "shape", "batch", "precision", "mode", "device", "warmup", "iters", "seed",
                    "cudnn_benchmark", "input_sets", "tag", "profile_wait", "profile_warmup", "profile_active",
                    "trace_out", "system_pass", "trust_pickle")


def _refuse_workload_options(ctx: typer.Context, what: str) -> None:
    """UsageError when a workload option was given on the command line with ``what`` (a TRACE or --run):
    it would be silently ignored."""
    given = [p for p in ctx.command.params if p.name in _WORKLOAD_PARAMS
             and ctx.get_parameter_source(p.name).name == "COMMANDLINE"]
    if given:
        flags = ", ".join(p.opts[0] for p in given)
        raise UsageError(f"{flags} describe a workload to run; with {what} they would be ignored: drop them")


@app.command()
def diagnose(
    ctx: typer.Context,
    traces: list[Path] | None = typer.Argument(None, help="Kineto trace, a folder or list of per-rank traces, or "
                                                          "an nsys export to diagnose alone; omit to run the "
                                                          "workload options."),
    run_id: str | None = typer.Option(None, "--run", help="Diagnose a stored run (id or unique prefix) in --db."),
    model: str = ModelOpt, shape: str = ShapeOpt, batch: str = BatchOpt, precision: str = PrecisionOpt,
    mode: str = ModeOpt, device: str = DeviceOpt, warmup: int = WarmupOpt, iters: int = ItersOpt,
    seed: int = SeedOpt, cudnn_benchmark: bool = CudnnOpt, input_sets: int = InputSetsOpt, db: Path = DbOpt,
    json_out: Path = JsonOpt, tag: str = TagOpt, profile_wait: int = ProfileWaitOpt,
    profile_warmup: int = ProfileWarmupOpt, profile_active: int = ProfileActiveOpt, trace_out: Path = TraceOutOpt,
    config: Path | None = ThresholdsOpt,
    system_view: Path | None = typer.Option(None, "--system-view", help="SystemView JSON (perf / py-spy) to use."),
    system_pass: bool = typer.Option(False, "--system/--no-system", help="Also run each config under Linux perf "
                                     "and py-spy and diagnose with that system view (cpu_preprocess, idle CPU)."),
    markdown: Path | None = MarkdownOpt, workers: int | None = WorkersOpt, dask_scheduler: str | None = DaskSchedulerOpt,
    trust_pickle: bool = TrustPickleOpt,
) -> None:  # fmt: skip
    """Verdicts with evidence: launch-bound, syncs, copies, memory/compute-bound, streams, scaling, precision."""
    th = load_thresholds(config)
    system = load_system_view(system_view)
    check_writable(json_out, "--json")
    check_writable(markdown, "--markdown")
    if traces and run_id is not None:
        raise UsageError("give a TRACE or --run RUN_ID, not both")
    if traces or run_id is not None:
        _refuse_workload_options(ctx, "a TRACE" if traces else "--run")
    rank_files = rank_trace_set(traces) if traces else None
    if rank_files is not None:
        if system is not None:
            raise UsageError(f"--system-view describes one process; it cannot apply to {len(rank_files)} rank traces")
        result = analyze_rank_traces(rank_files, th, workers=workers, dask_scheduler=dask_scheduler)
        findings, title, warnings = list(result.findings), f"diagnosis of {len(rank_files)} rank traces", []
        console.print(cross_rank_rich(result.cross_rank))
        context = {"traces": [str(f) for f in rank_files], "cross_rank": result.cross_rank.to_dict()}
    elif traces:
        trace = traces[0]
        if not trace.exists():
            raise UsageError(f"trace {str(trace)!r}: no such file or folder")
        findings, ranks = diagnose_trace(load_trace(trace), th, system=system)
        title, context, warnings = f"diagnosis of {trace}", {"trace": str(trace)}, []
        if ranks is not None:
            console.print(cross_rank_rich(ranks))
            context["cross_rank"] = ranks.to_dict()
    elif run_id is not None:
        with ResultStore(db) as store:
            record, findings, warnings = diagnose_stored(run_id, store, th)
            findings = cite_measured(findings, measured_for(store, record.results))
        title, context = f"diagnosis of run {record.run_id}", {"run_id": record.run_id}
    else:
        request = build_request(model, shape, batch, precision, mode, device, warmup, iters, seed,
                                cudnn_benchmark, input_sets, tag, trust_pickle=trust_pickle)  # fmt: skip
        options = build_profile_options(profile_wait, profile_warmup, profile_active, False, trace_out, True, iters)
        with ResultStore(db) as store:
            record, findings, warnings, evidence = diagnose_workload(request, store, options, th, system, system_pass)
            findings = cite_measured(findings, measured_for(store, record.results))
        title = f"diagnosis of run {record.run_id} on {record.env['device_name']}"
        context = {"run_id": record.run_id, "device_name": record.env["device_name"],
                   "roofline": {ev.label: ev.roofline.to_json() for ev in evidence if ev.roofline is not None}}
    render(findings, title, markdown)
    for warning in warnings:
        err_console.print(f"[yellow]note:[/yellow] {rich_escape(warning)}")
    write_json(json_out, diagnosis_json(findings, context))
