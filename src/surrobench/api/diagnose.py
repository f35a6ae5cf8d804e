"""``diagnose``: the findings of a workload, a stored run or a trace alone (``surrobench diagnose``).

A workload is timed, profiled per config in a child process, its op FLOPs and bytes counted for a roofline
against the device's ceilings (stored with the run, :mod:`surrobench.results.profiles`), and every detector run
over that evidence (:mod:`surrobench.analysis.diagnose`), joining the operator view with the timeline
(docs/sources.md, method §4). Findings cite the remedies ``optimize`` measured for the same config.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.analysis.cross_rank import CrossRankReport
from surrobench.analysis.diagnose import cap_at_host_floor, diagnose_run, diagnose_trace, host_floors, trace_evidence
from surrobench.analysis.evidence import ConfigEvidence, attribute_by_eager, deflate
from surrobench.analysis.evidence_checks import EvidenceCheck, check_trace, checked, qualify
from surrobench.analysis.roofline import H200_FALLBACK, roofline, roofline_headroom
from surrobench.results.measured_remedies import attach_measured, disagreements, measured_lines, unclaimed
from surrobench.analysis.feasibility import inapplicable
from surrobench.analysis.op_flops import count_op_costs
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds, check_thresholds
from surrobench.api.benchmark import named_model, open_store, sweep_plan
from surrobench.api.counters import measured_by_config, remeasure
from surrobench.tune import advice
from surrobench.tune.plans import measured_for
from surrobench.api.perf import perf_config
from surrobench.api.rank_traces import analyze_rank_traces, rank_trace_set
from surrobench.api.profile import NO_HOOKS, Hooks, interrupted_profiling, profile_phase, report_warnings
from surrobench.collect.profile_phase import PerfOptions, ProfileOptions
from surrobench.errors import Interrupted, UsageError
from surrobench.results.serve_store import load_serve
from surrobench.execution.env import busy_host_warning
from surrobench.execution.failures import UNKNOWN, recorded_cause
from surrobench.execution.runner import config_step, prepare_model
from surrobench.execution.sweep import SweepInterrupted, SweepPlan, execute_sweep
from surrobench.records import schemas
from surrobench.records.ceilings import Ceilings, calibrate_command
from surrobench.analysis.detect_counters import merge_measured
from surrobench.records.findings import Diagnosis as DiagnosisDocument, Finding, MeasuredRemedy, rank_findings
from surrobench.records.run import GRAD_MODE_KEY, MEASURED_KEY, WARNINGS_KEY, ConfigResult, Profile, RunRecord, grouped
from surrobench.records.system import SystemView
from surrobench.results.ceilings import load_ceilings
from surrobench.results.profiles import add_roofline, load_counters, load_kernel_table, load_op_table
from surrobench.results.profiles import load_roofline, op_profile_step
from surrobench.results.store import DEFAULT_DB, ResultStore
from surrobench.analysis.timeline import trace_warnings
from surrobench.trace import load_trace


@dataclass(frozen=True)
class Diagnosis(DiagnosisDocument):
    """The diagnosis document (:class:`surrobench.records.findings.Diagnosis`: ``findings`` ranked, most severe
    first) with, not written to it, ``title`` one line naming what was diagnosed, ``run`` the run (None for a trace),
    ``cross_rank`` the report of a multi-rank trace (else None). ``context``: a workload's :func:`workload_context` (a
    stored run's without ``device_name``: what was stored with it) or ``{"trace"}`` (plus ``cross_rank`` for several
    ranks, and ``evidence_checks``: :mod:`surrobench.analysis.evidence_checks`, ``{label or trace: check}``)."""

    title: str = ""
    run: RunRecord | None = None
    cross_rank: CrossRankReport | None = None

    def to_json(self) -> dict:
        """``surrobench/diagnosis-v8``: ``{"schema", "context", "findings", "warnings"}``."""
        return DiagnosisDocument(self.context, self.findings, self.warnings).to_json()


def failed_configs_json(results) -> list[dict]:
    """The configs among ``results`` that did not end ``ok``, each its config key (``model``, ``input_shape``,
    ``batch``, ``precision``, ``device``, ``mode``), ``label``, ``status``, ``error`` (as raised) and ``cause``
    (the known cause in one line, :func:`surrobench.execution.failures.recorded_cause`; None when unknown)."""
    out = []
    for r in results:
        if r.status != "ok":
            cause = recorded_cause(r.error, r.extra)
            known = cause.line if cause.cause_id != UNKNOWN else None
            out.append({**r.key().to_json(), "label": r.label(), "status": r.status, "error": r.error, "cause": known})
    return out


def workload_context(record: RunRecord, evidence: list[ConfigEvidence]) -> dict:
    """The diagnosis ``context`` of a timed workload: its run id, device, every remedy its diagnosis measured
    (``measured``, by config label), the configs that failed (:func:`failed_configs_json`) and per config, each
    ``{config label: object}``: ``roofline``, ``counters`` (Nsight Compute), ``system`` (:meth:`SystemView.to_json`,
    where ``--system`` measured one or a view was given), ``host_floor``
    (:func:`surrobench.analysis.diagnose.host_floors`), ``evidence_checks``
    (:func:`surrobench.analysis.evidence_checks.check_evidence`) and ``headroom`` (the step against the roofline
    bound of its counters at the device's ceilings: :func:`surrobench.analysis.roofline.roofline_headroom`)."""
    ceilings = device_ceilings(record)[0]
    bounds = {ev.label: roofline_headroom(ev.counters, ev.step_ms(), ceilings) for ev in evidence}
    return {
        "run_id": record.run_id,
        "device_name": record.env["device_name"],
        "evidence_checks": {ev.label: checked(ev).to_json() for ev in evidence},
        "headroom": {label: bound.to_json() for label, bound in bounds.items() if bound is not None},
        "roofline": {ev.label: ev.roofline.to_json() for ev in evidence if ev.roofline is not None},
        "counters": {ev.label: ev.counters.to_json() for ev in evidence if ev.counters is not None},
        "system": {ev.label: ev.system.to_json() for ev in evidence if ev.system is not None},
        "host_floor": {label: floor.to_json() for label, floor in host_floors(evidence).items()},
        "measured": {r.label(): r.extra[MEASURED_KEY] for r in record.results if MEASURED_KEY in r.extra},
        "failed_configs": failed_configs_json(record.results),
    }


def _detected(record: RunRecord, evidence: list[ConfigEvidence], th: Thresholds, flops: dict | None = None) -> list:
    """Every detector over ``evidence`` and the run's results (:func:`diagnose_run`), with the run's device memory
    and its busy-host warning (its load, CPUs, torch threads and other processes' CPUs)."""
    env = record.env
    load, cpus, threads = env.get("load_avg_1m"), env.get("cpu_count") or 1, env.get("torch_threads") or 1
    busy = busy_host_warning(load, cpus, threads, (r.extra for r in record.results))
    memory = env.get("gpu_memory_bytes")
    return diagnose_run(
        evidence, list(record.results), th=th, flops=flops, device_memory_bytes=memory, host_warning=busy
    )


def device_ceilings(record: RunRecord) -> tuple[Ceilings | None, str]:
    """This machine's calibrated ceilings of the run's device (on a CPU at the run's torch thread count, else
    ``cpu_count`` for an older run) and a note; the built-in H200 numbers for an uncalibrated GPU; None on an
    uncalibrated CPU."""
    name = record.env.get("device_name", "")
    cpu = record.env.get("device") == "cpu"
    threads = record.env.get("torch_threads", record.env.get("cpu_count")) if cpu else None
    stored = load_ceilings(name, threads)
    if stored is not None:
        return stored, f"ceilings of {name} calibrated {stored.measured}"
    if record.env.get("device") == "cuda":
        return H200_FALLBACK, f"{name}: {H200_FALLBACK.note}"
    at = f" at {threads} thread(s)" if threads is not None else ""
    return None, f"{name}: no calibration stored{at}, no roofline (run {calibrate_command('cpu', threads)})"


def _noted(store: ResultStore, record: RunRecord, warnings: list[str]) -> RunRecord:
    """``record`` with its diagnosis's ``warnings`` in its env (:data:`~surrobench.records.run.WARNINGS_KEY`), also
    in ``store``: ``diagnose --run`` and ``report`` give them again."""
    if warnings:
        store.update_env(record.run_id, env := {**record.env, WARNINGS_KEY: list(warnings)})
        record = replace(record, env=env)
    return record


def _interrupted(cut: Interrupted, findings: list[Finding], evidence: list, warnings: list[str], store) -> Interrupted:
    """``cut`` (its ``partial`` a :class:`Profile`, the run stored and marked ``interrupted``) carrying instead the
    :class:`Diagnosis` of what was read (:func:`_noted` with ``warnings``) and the run-level checks over the configs
    timed; ``context.interrupted`` true, ``context.profiled`` the configs read or whose profiling failed."""
    warnings = warnings + measured_lines(findings, {})  # the remedies cited, as a diagnosis that ends says them
    record = _noted(store, cut.partial.run, warnings)
    done = {ev.label for ev in evidence}
    profiled = [r.label() for r in cut.partial.reports if r.status != "ok" or r.label() in done]
    context = {**workload_context(record, evidence), "interrupted": True, "profiled": profiled}
    not_profiled(context["evidence_checks"], record, context["profiled"])
    cut.partial = Diagnosis(context, tuple(findings), tuple(warnings), _title(record), record)
    return cut


def not_profiled(checks: dict, record: RunRecord, judged) -> list[str]:
    """The configs of ``record`` timed but not among ``judged`` (no op table: a run's or optimize's, or cut off before
    its profile), each given the ``not_profiled`` check ("cannot judge") in ``checks``, a diagnosis's or report's."""
    timed = [r.label() for r in record.results if r.status == "ok" and r.label() not in judged]
    checks |= {t: EvidenceCheck(t, ("not_profiled",)).to_json() for t in timed}
    return timed


def diagnose_workload(
    plan: SweepPlan,
    store: ResultStore,
    options: ProfileOptions,
    th: Thresholds,
    system: SystemView | None = None,
    system_pass: bool = False,
    *,
    command: str | None = None,
    hooks: Hooks = NO_HOOKS,
    measure_s: float | None = 0.0,
    rerun: tuple[str, str | None] = ("surrobench", None),
) -> tuple[RunRecord, list[Finding], list[str], list[ConfigEvidence]]:
    """Time, profile and diagnose every config of ``plan``, each read as soon as it is profiled; returns the run,
    ranked findings, warnings and each config's evidence. ``measure_s`` as :func:`diagnose` (None: the call ending
    by :data:`~surrobench.tune.advice.DIAGNOSE_TARGET_S` a config, ``COUNTERS_TARGET_S`` with counters);
    ``system_pass``: :func:`perf_config` per config (docs/sources.md, tools §4), else ``system`` applies to all.

    Raises:
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP) while timing, profiling or measuring remedies; what was stored
            stays, ``partial`` the :class:`Diagnosis` of what was read (:func:`_interrupted`).
    """
    per_config = advice.COUNTERS_TARGET_S if options.counters else advice.DIAGNOSE_TARGET_S
    deadline = time.monotonic() + len(plan.configs) * per_config if measure_s is None else None
    measure_s = advice.DEFAULT_MEASURE_S if measure_s is None else measure_s  # read when called
    try:
        record, warnings = execute_sweep(plan, store, command=command, kind="diagnose", hooks=hooks, finish=False)
    except SweepInterrupted as cut:
        ceilings, _ = device_ceilings(cut.record)
        findings = _findings(cut.record, [], {}, th, ceilings, measured_for(store, cut.record.results))
        cut.partial = Profile(cut.record)
        raise _interrupted(cut, findings, [], [], store) from None
    ceilings, note = device_ceilings(record)
    evidence, flops, notes = [], {}, [note]  # notes: the reading's, after the profiling's warnings

    def read(report) -> None:
        """The hooks told of ``report``, then one profiled config's evidence (its roofline stored with it)."""
        hooks.on_report(report)
        if report.status != "ok":
            return
        result = report.config
        cfg = plan.config_for(result)
        prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed, result.extra[GRAD_MODE_KEY])
        try:
            with config_step(replace(cfg, mode="eager"), prepared) as (step, _):  # FLOPs, bytes of one eager forward
                costs = count_op_costs(lambda: step(0), prepared.module)
        except Exception as exc:  # a counter's failure costs the FLOPs, not the diagnosis
            costs = None
            notes.append(f"{report.label()}: FLOPs not counted, no roofline ({type(exc).__name__}: {exc})")
        roof, problem = None, ceilings.unusable(result.precision) if ceilings else None
        if problem is not None:  # a zero or non-finite ceiling is no ceiling: no roofline rather than absurd ones
            notes.append(
                f"{report.label()}: no {result.precision} roofline against the {ceilings.device_name} "
                f"calibration: {problem}; re-run {calibrate_command(result.device, record.env.get('torch_threads'))}"
            )
        elif ceilings is not None and costs is not None:
            timed = result.latency_ms.median if result.latency_ms else None
            roof = roofline(deflate(report.op_table, report.profiled_step_ms, timed), costs, ceilings, result.precision)
            add_roofline(store, report.config_id, roof)  # diagnose --run reads it back: no FLOP count there
        view, passed = system, None
        if system_pass:
            passed = perf_config(cfg, result, report.config_id, store, PerfOptions(), record.run_id)
            view = passed.system.view if passed.system is not None else system
        known = dict(
            label=report.label(),
            result=result,
            op_table=report.op_table,
            roofline=roof,
            system=view,
            profiled_step_ms=report.profiled_step_ms,
            kernel_table=report.kernel_table,
            counters=remeasure(report.counters, report.kernel_table, ceilings) if report.counters else None,
        )
        if report.trace_path:
            ev = trace_evidence(load_trace(report.trace_path), **known)
            notes.extend(f"{report.label()}: {line}" for line in ev.timeline.warnings)  # trace_warnings, read once
        else:
            ev = ConfigEvidence(**known)
        if passed is not None:  # a cause the profile's own check states (a step off the timed one) is said once
            said = frozenset(checked(ev).problems)
            notes.extend(f"{report.label()}: {line}" for line in passed.notes(said))
        flops[result.key()] = {n: c.flops for n, c in (costs or {}).items()}  # with its evidence, never without
        evidence.append(ev)

    try:
        record, reports = profile_phase(plan, record, store, options, hooks=replace(hooks, on_report=read))
    except Interrupted as cut:  # a profile stored, its reading cut: read from the store, as diagnose --run reads it
        done = {ev.label for ev in evidence}
        with contextlib.suppress(Exception, KeyboardInterrupt):  # unreadable, or a second Ctrl-C: "cannot judge"
            for r in (r for r in cut.partial.reports if r.status == "ok" and r.label() not in done):
                if (stored := _stored_evidence(store, r.config, ceilings, notes, flops)) is not None:
                    evidence.append(stored)
        optimized = measured_for(store, cut.partial.run.results)
        findings = _findings(cut.partial.run, evidence, flops, th, ceilings, optimized)
        raise _interrupted(cut, findings, list(evidence), warnings + notes, store) from None
    warnings += report_warnings(reports) + notes
    findings, measuring = [], None  # the estimates once read; a Ctrl-C from here on keeps them (all were read)
    try:
        evidence = attribute_by_eager(evidence)  # a CUDA-graph or compiled step's kernels, by the eager step's ops
        optimized = measured_for(store, record.results)  # the optimizations cited for each config, read once
        measured, noted = measured_before(store, record) if measure_s == 0 else ({}, [])  # one measuring judges anew
        findings = _findings(record, evidence, flops, th, ceilings, optimized, measured)
        if measure_s > 0 and evidence:
            try:
                doubt = frozenset(ev.label for ev in evidence if checked(ev).verdict == "unreliable")
                measured, noted = advice.measure_findings(
                    plan,
                    [ev.result for ev in evidence],
                    findings,
                    measure_s,
                    deadline=deadline,
                    cited=optimized,
                    unreliable=doubt,
                )
            except advice.MeasuringInterrupted as stop:  # those measured are kept, stored and cited, then Ctrl-C
                (measured, noted), measuring = stop.args, str(stop)
            for ev in (ev for ev in evidence if ev.label in measured):  # diagnose --run reads them back
                store.add_extra(ev.result.config_id, **{MEASURED_KEY: [m.to_json() for m in measured[ev.label]]})
            record = store.load_run(record.run_id)  # with them: context.measured (workload_context)
            findings = _findings(record, evidence, flops, th, ceilings, optimized, measured)
        warnings += noted + unclaimed(findings, measured) + disagreements(measured, optimized)  # diagnose's, as cited
        if measuring:
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        cut = interrupted_profiling(store, record, len(plan.configs), reports, len(reports))
        cut.args = (f"{cut}, {measuring}",) if measuring else cut.args
        findings = findings or _findings(record, evidence, flops, th, ceilings, measured_for(store, record.results))
        raise _interrupted(cut, findings, list(evidence), warnings, store) from None
    warnings += measured_lines(findings, optimized, rerun)  # optimize's: the remedies cited, a config no finding names
    return _noted(store, record, warnings), findings, warnings, evidence


def applicable_actions(findings: list[Finding], results: Sequence[ConfigResult]) -> list[Finding]:
    """``findings`` without the clauses every remedy of which is :func:`~surrobench.analysis.feasibility.inapplicable`
    to their config's inputs (a result that recorded each input): neither advised nor measured."""
    ranks = {r.label(): [len(i.shape) for i in r.inputs] for r in results if r.inputs and r.inputs[0].dtype}
    out = []
    for f in findings:
        dims = ranks.get(f.config)
        kept = tuple(
            c for c in f.clauses if dims is None or not all(inapplicable(r, dims) for r in c.remedies or ("",))
        )
        out.append(f if len(kept) == len(f.clauses) else replace(f, action=kept))
    return out


def _findings(
    record: RunRecord,
    evidence: list[ConfigEvidence],
    flops: dict,
    th: Thresholds,
    ceilings,
    optimized: dict[str, dict],
    measured: dict | None = None,
) -> list[Finding]:
    """Every detector over ``evidence`` and the run's results, ranked: each config's measured counters' findings
    merged in (:func:`merge_measured`), kernel-side gains capped at the host's floor
    (:func:`~surrobench.analysis.diagnose.cap_at_host_floor`), the op-level verdicts of an unreliable or partly
    attributed profile saying so (:func:`~surrobench.analysis.evidence_checks.qualify`), the remedies ``measured``
    here (``{config label: measurements}``) attached, and those ``optimize`` measured (``optimized``: each config's
    config object cited, :func:`~surrobench.tune.plans.measured_for`) cited for each remedy diagnose did not judge
    (:func:`~surrobench.results.measured_remedies.attach_measured`)."""
    merged = merge_measured(_detected(record, evidence, th, flops), measured_by_config(evidence, ceilings))
    merged = applicable_actions(merged, record.results)
    checks = {ev.label: checked(ev) for ev in evidence}
    capped = rank_findings(qualify(cap_at_host_floor(merged, host_floors(evidence)), checks))
    results = {r.label(): r for r in record.results}  # their threads and timed steps, for a cited measurement
    return rank_findings(attach_measured(capped, measured or {}, optimized, results))


def diagnose_stored(
    run_id: str, store: ResultStore, th: Thresholds, rerun: tuple[str, str | None] = ("surrobench", None)
) -> tuple[RunRecord, list[Finding], list[str], list[ConfigEvidence]]:
    """Diagnose a stored run from its op tables and the traces that still exist; returns as :func:`diagnose_workload`.
    Stored rooflines, counters, measured remedies and warnings are read as that run read them, so the findings are
    its own; a config without a roofline (not diagnosed, no calibration, schema < 8) is read by its op families."""
    record = store.load_run(run_id)
    warnings, flops = list(record.env.get(WARNINGS_KEY, ())), {}  # its own diagnosis's first
    ceilings, note = device_ceilings(record)
    evidence = [e for r in record.results if (e := _stored_evidence(store, r, ceilings, warnings, flops)) is not None]
    if any(ev.counters is not None for ev in evidence):
        warnings.append(note)
    warnings += stored_roofline_notes(evidence, ceilings)
    evidence = attribute_by_eager(evidence)
    own, told = measured_before(store, record)
    measured = measured_for(store, record.results)
    findings = _findings(record, evidence, flops, th, ceilings, measured, own)
    warnings += told + unclaimed(findings, own) + measured_lines(findings, measured, rerun)
    warnings += disagreements(own, measured)
    return record, findings, list(dict.fromkeys(warnings)), evidence  # each once: its own, then any new


def measured_before(store: ResultStore, record: RunRecord) -> tuple[dict[str, tuple[MeasuredRemedy, ...]], list[str]]:
    """``({config label: measurements}, notes)``: the remedies each config of ``record`` had measured, by its own
    diagnosis, else by the newest diagnosis of the same config (:meth:`ConfigResult.same_config`), named in a note
    (trial35: diagnose --run of a profile run advised bf16, measured at 0.01x by a diagnosis of its config)."""
    runs = {s.run_id for m in {r.model for r in record.results} for s in store.list_runs(m) if s.kind == "diagnose"}
    ids = dict.fromkeys([record.run_id, *sorted(runs, reverse=True)])  # its own, then the newest (ids begin with time)
    stored = [(run, r) for run in ids for r in store.load_run(run).results if MEASURED_KEY in r.extra]
    found = {r.label(): got for r in record.results if (got := next((x for x in stored if x[1].same_config(r)), None))}
    notes = [f"{lb}: remedies measured by diagnosis {run}" for lb, (run, _) in found.items() if run != record.run_id]
    return {lb: tuple(map(MeasuredRemedy.from_json, r.extra[MEASURED_KEY])) for lb, (_, r) in found.items()}, notes


def _stored_evidence(store: ResultStore, result: ConfigResult, ceilings, warnings: list, flops: dict):
    """The :class:`ConfigEvidence` of ``result`` as stored (op table, roofline: its FLOPs into ``flops``, kernel table,
    counters) and its trace where it still exists (notes into ``warnings``); None without an op table."""
    config_id, label = result.config_id, result.label()
    if result.status != "ok" or (table := load_op_table(store, config_id)) is None:
        return None
    step_ms, trace = op_profile_step(store, config_id)
    known = dict(label=label, result=result, op_table=table, profiled_step_ms=step_ms)
    if (roof := load_roofline(store, config_id)) is not None:
        known["roofline"] = roof
        flops[result.key()] = {o.name: o.flops for o in roof.ops}
    if (kernels := load_kernel_table(store, config_id)) is not None:  # else the trace's (stored before schema 5)
        known["kernel_table"] = kernels
    if trace and Path(trace).exists():
        ev = trace_evidence(load_trace(trace), **known)
        warnings.extend(f"{label}: {line}" for line in ev.timeline.warnings)
    else:
        warnings.append(f"{label}: trace {trace or '(none)'} not available, op table only")
        ev = ConfigEvidence(**known)
    stored = load_counters(store, config_id)
    return replace(ev, counters=remeasure(stored, ev.kernel_table, ceilings)) if stored else ev


def stored_roofline_notes(evidence: list[ConfigEvidence], ceilings: Ceilings | None) -> list[str]:
    """One note per set of ceilings the stored rooflines of ``evidence`` were computed against (device and
    calibration time, or the built-in ones' note), saying when this machine's ``ceilings`` now differ (the stored
    verdicts keep theirs)."""
    groups = grouped((ev for ev in evidence if ev.roofline is not None), lambda ev: _ceilings_key(ev.roofline.ceilings))
    notes = []
    for key, got in groups.items():
        stored = got[0].roofline.ceilings
        when = f"calibrated {stored.measured}" if stored.measured else stored.note
        line = f"estimated roofline of {len(got)} config(s) as stored with the run: {stored.device_name}, {when}"
        if ceilings is not None and _ceilings_key(ceilings) != key:
            now = f"calibrated {ceilings.measured}" if ceilings.measured else ceilings.note
            line += f" (this machine's ceilings differ now: {now})"
        notes.append(line)
    return notes


def _ceilings_key(c: Ceilings) -> tuple:
    """``c`` as a hashable value (its matmul rates are a dict)."""
    return (c.device_name, c.copy_gbps, tuple(sorted(c.matmul_tflops.items())), c.measured, c.note)


#: What the title of a diagnosis of a run with no config profiled adds: its findings come from the run-level
#: checks and each config's timing alone.
RUN_LEVEL_ONLY = "run-level checks only: no config was profiled"


def _title(record: RunRecord, run_level_only: bool = False) -> str:
    """``diagnosis of run ID on DEVICE`` (:meth:`RunRecord.device_text`), then ``(RUN_LEVEL_ONLY)`` if so."""
    return f"diagnosis of run {record.run_id} on {record.device_text()}" + f" ({RUN_LEVEL_ONLY})" * run_level_only


def diagnose_record(record: RunRecord, th: Thresholds) -> tuple[list[Finding], list[str]]:
    """Diagnose a run held in memory (``surrobench.benchmark(..., db=None)``) from its results alone: the
    run-level checks and what each config's timing shows (the warning says there is no op table or trace)."""
    evidence = [ConfigEvidence(label=r.label(), result=r) for r in record.results if r.status == "ok"]
    findings = _detected(record, evidence, th)
    note = (
        f"run {record.run_id} diagnosed from the record alone: no op table or trace (a timed run, not profiled), "
        "so only the run-level checks; surrobench.diagnose(model, ...) profiles the workload"
    )
    return findings, [note]


def load_system_view(system_view: Path | None) -> SystemView | None:
    """A :class:`SystemView` from the JSON file ``system_view``: a SystemView object or a ``surrobench perf
    --json`` document, whose one config with a system view gives it.

    Raises:
        UsageError: naming ``system_view``: unreadable file, invalid JSON, not a SystemView, or a perf document with
            no config or several configs with a system view.
    """
    if system_view is None:
        return None
    where = repr(str(system_view))
    try:
        data = json.loads(system_view.read_text())
        if isinstance(data, dict) and data.get("schema") == schemas.PERF:
            data = _perf_system(data, where)
        return SystemView.from_json(data)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError.bad("system_view", f"{where}: not a SystemView JSON ({exc})") from None


def _perf_system(doc: dict, where: str) -> dict:
    """The ``system`` object of the one config of a ``surrobench perf --json`` document that has one; ``where``
    names the file in an error (:func:`load_system_view`)."""
    reports = doc.get("perf")
    if not isinstance(reports, list):
        raise ValueError(f"{schemas.PERF} document without a 'perf' list")
    with_view = [r for r in reports if isinstance(r, dict) and isinstance(r.get("system"), dict)]
    if len(with_view) != 1:
        names = ", ".join(str(r.get("label", r.get("model"))) for r in with_view)  # a report before labels: its model
        several = f"{len(with_view)} configs have a system view ({names}); give one: the perf document of that config"
        none = f"no config of this {schemas.PERF} document has a system view ({len(reports)} config(s), none passed)"
        raise UsageError.bad(
            "system_view", f"{where}: " + (f"{several} alone, or its 'system' object" if with_view else none)
        )
    return with_view[0]["system"]


def refuse_workload(given: Sequence[str], *, trace: bool) -> None:
    """Raises UsageError naming the parameters ``given`` that describe a workload to run (``iters``,
    ``system_pass``, ...): a ``trace`` (else a stored run) is diagnosed as recorded."""
    if given:
        reason = "a {trace} is diagnosed as recorded" if trace else "{run} diagnoses a stored run"
        raise UsageError.not_applying(reason, given, others=("trace", "run"))


def diagnose(
    model: str | SweepPlan | None = None,
    *,
    trace: str | Path | Sequence[str | Path] | None = None,
    run: str | RunRecord | None = None,
    db: str | Path | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    system: SystemView | None = None,
    system_pass: bool = False,
    profile_options: ProfileOptions | None = None,
    counters: bool = False,
    measure_s: float | None = None,
    command: str | None = None,
    program: str = "surrobench",
    hooks: Hooks = NO_HOOKS,
    workers: int | None = None,
    dask_scheduler: str | None = None,
    **sweep,
) -> Diagnosis:
    """The findings of one of: ``model`` (timed, profiled and diagnosed over the sweep of ``sweep``, the keywords
    of :func:`surrobench.api.benchmark.sweep_request`, or a plan), ``trace`` (Kineto or nsys; a folder or list of
    rank traces, each rank diagnosed in a worker, :func:`~surrobench.api.rank_traces.analyze_rank_traces` with
    ``workers`` and ``dask_scheduler``, adds the cross-rank findings) or ``run`` (an id in ``db``, read from its op
    tables and traces; a :class:`RunRecord` without ``db`` is diagnosed from the record alone, :func:`diagnose_record`).

    ``db``: where a workload's run is stored (None: in memory) or ``run`` is looked up (None: ``surrobench.db``).
    ``system``: a system view (perf / py-spy) for every config; ``system_pass``: measure one per config.
    ``profile_options``: the profiling child's schedule and trace folder. ``counters``: on CUDA, each config's top
    kernels under Nsight Compute, whose findings replace the estimated ones. ``measure_s``: for a ``model``, seconds
    per config to measure the remedies its findings name (:mod:`surrobench.tune.advice`), each action then carrying
    its :class:`~surrobench.records.findings.MeasuredRemedy`, the findings ordered by measured saving; 0: estimates
    only; None: :data:`surrobench.tune.advice.DEFAULT_MEASURE_S`, within a deadline. ``program``: how the ``run it``
    lines of what optimize measured start (``db`` added when given).

    Raises:
        UsageError: not exactly one of model / trace / run, bad ``thresholds``
            (:func:`~surrobench.analysis.thresholds.check_thresholds`), ``measure_s`` not a finite number >= 0 or
            given with a trace or run, as :func:`refuse_workload`, a missing trace, an unknown run or one without
            configs (a serve run), bad input.
        Interrupted: Ctrl-C while a ``model`` is timed, profiled or its remedies measured; ``partial`` the
            :class:`Diagnosis` of what was read and measured before it, the run stored as ``interrupted``.
    """
    check_thresholds(thresholds)
    measure_s = advice.check_measure_s(measure_s) if measure_s is not None else None
    if sum(x is not None for x in (model, trace, run)) != 1:
        raise UsageError("give exactly one of model, trace or run")
    if measure_s is not None and model is None:
        raise UsageError.bad(
            "measure_s", ": remedies are measured on a model diagnosed now, not on a trace or a stored run"
        )
    if model is None:
        asked = {"system_pass": system_pass, "profile_options": profile_options, "counters": counters}
        refuse_workload([*sweep, *(name for name, value in asked.items() if value)], trace=trace is not None)
    if trace is not None:
        paths = [trace] if isinstance(trace, (str, Path)) else list(trace)
        rank_files = rank_trace_set([Path(p) for p in paths])
        if rank_files is not None:  # several rank traces, each rank in a worker
            n = len(rank_files)
            if system is not None:
                raise UsageError.bad("system", f": a system view describes one process, not {n} rank traces")
            result = analyze_rank_traces(rank_files, thresholds, workers=workers, dask_scheduler=dask_scheduler)
            context = {"traces": [str(f) for f in rank_files], "cross_rank": result.cross_rank.to_dict()}
            return Diagnosis(
                context, result.findings, (), f"diagnosis of {n} rank traces", cross_rank=result.cross_rank
            )
        trace = paths[0]
        if not Path(trace).exists():
            raise UsageError(f"trace {str(trace)!r}: no such file or folder")
        timeline = load_trace(trace)
        findings, ranks = diagnose_trace(timeline, thresholds, system=system)
        context = {"trace": str(trace), "evidence_checks": {str(trace): check_trace(timeline).to_json()}}
        context |= {"cross_rank": ranks.to_dict()} if ranks is not None else {}
        context |= {"system": {str(trace): system.to_json()}} if system is not None else {}  # as a model's
        warned = tuple(trace_warnings(timeline))
        return Diagnosis(context, tuple(findings), warned, f"diagnosis of {trace}", cross_rank=ranks)
    if isinstance(run, RunRecord) and db is None:
        findings, warnings = diagnose_record(run, thresholds)
        context = {"run_id": run.run_id, "device_name": run.env.get("device_name")}
        return Diagnosis(context, tuple(findings), tuple(warnings), _title(run, run_level_only=True), run)
    run = run.run_id if isinstance(run, RunRecord) else run
    rerun = (program, None if db is None or Path(db) == Path(DEFAULT_DB) else str(db))  # the default: not named
    if run is not None:
        with ResultStore(DEFAULT_DB if db is None else db) as store:
            record, findings, warnings, evidence = diagnose_stored(run, store, thresholds, rerun)
            if not record.results:
                served = " (a serve run)" if load_serve(store, record.run_id) is not None else ""
                raise UsageError(f"run {record.run_id}{served} has no configs to diagnose")
        context = {k: v for k, v in workload_context(record, evidence).items() if k != "device_name"}
        only = bool(not_profiled(context["evidence_checks"], record, {ev.label for ev in evidence})) and not evidence
        return Diagnosis(context, tuple(findings), tuple(warnings), _title(record, only), record)
    named_model(model, "diagnose")
    plan = model if isinstance(model, SweepPlan) else sweep_plan(model, caller=diagnose, **sweep)
    options = profile_options or ProfileOptions()
    options = replace(options, counters=True) if counters else options
    with open_store(db) as store:
        record, findings, warnings, evidence = diagnose_workload(
            plan,
            store,
            options,
            thresholds,
            system,
            system_pass,
            command=command,
            hooks=hooks,
            measure_s=measure_s,
            rerun=rerun,
        )
    asked = advice.DEFAULT_MEASURE_S if measure_s is None else measure_s
    context = {**workload_context(record, evidence), "measure_s": asked}
    return Diagnosis(context, tuple(findings), tuple(warnings), _title(record), record)
