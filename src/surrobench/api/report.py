"""``build_report``: what one report of several runs shows (:class:`Report`; ``surrobench report`` renders it
as HTML)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from surrobench.analysis.diagnose import diagnose_run
from surrobench.analysis.evidence_checks import checked
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from surrobench.api.compare import ComparedServeRuns, RunRef, compare_pair, is_run_file, load_run, load_serve_run
from surrobench.api.compare import op_times
from surrobench.errors import UsageError
from surrobench.records.ceilings import Ceilings
from surrobench.records.findings import Finding
from surrobench.records.run import RunRecord
from surrobench.records.serve import ServeRecord
from surrobench.results.compare import DEFAULT_THRESHOLD, RunComparison, compare_runs
from surrobench.results.store import DEFAULT_DB, ResultStore
from surrobench.results.profiles import load_kernel_table
from surrobench.results.optimize_store import optimizations_of_runs
from surrobench.trace import load_trace
from surrobench.trace.model import Timeline


@dataclass(frozen=True)
class RunRoofline:
    """What a run's roofline figure draws (:func:`surrobench.report.plots.roofline_figure`): ``measured``
    ``{config label: counters JSON}`` (``--counters``), ``estimated`` ``{config label: roofline JSON}``, and the
    ``ceilings`` the roofs are drawn at (this machine's calibration, else a stored roofline's; None: none known)."""

    measured: Mapping[str, dict]
    estimated: Mapping[str, dict]
    ceilings: Ceilings | None = None


@dataclass(frozen=True)
class Report:
    """What a report of ``runs`` shows.

    Attributes:
        runs: the runs, in the order given.
        comparison: BASE (first) vs NEW (second) when exactly two runs are given, else None.
        op_tables: ``{"<last 4 chars of run id> <config label>": {op name: self time per step, ms}}`` of every
            profiled config of a database run.
        cpu_op_labels: the labels in ``op_tables`` measured on a CPU (op self CPU time, not kernel time).
        findings: ``{run id: ranked findings}``; a run JSON file gets the run-level findings of its results.
        timeline: the trace to draw (its first profiled step), None without one; ``timeline_title`` names it.
        optimizations: ``surrobench/optimize`` documents stored in the database that made these runs.
        serve_runs: the serve runs among those given, in the order given (not in ``runs``).
        serve_comparison: the capacities of two serve runs (and nothing else) given, both with a capacity search.
        kernel_classes: ``{label as in op_tables: {kernel class: share of kernel time}}`` of every config of a
            database run with a kernel table (:meth:`KernelTable.class_shares`).
        rooflines: ``{run id: its roofline points}`` of every database run with any (:class:`RunRoofline`).
        evidence_checks: ``{run id: {config label: evidence check}}`` of every database run, as ``diagnose``.
        uncompared: the ids of the runs (or serve runs) given when more than two of a kind were: none compared.
    """

    runs: tuple[RunRecord, ...]
    comparison: RunComparison | None = None
    op_tables: Mapping[str, Mapping[str, float]] | None = None
    cpu_op_labels: frozenset[str] = frozenset()
    findings: Mapping[str, Sequence[Finding]] | None = None
    timeline: Timeline | None = None
    timeline_title: str = ""
    optimizations: tuple[dict, ...] = ()
    serve_runs: tuple[ServeRecord, ...] = ()
    serve_comparison: ComparedServeRuns | None = None
    kernel_classes: Mapping[str, Mapping[str, float]] | None = None
    rooflines: Mapping[str, RunRoofline] | None = None
    evidence_checks: Mapping[str, Mapping[str, dict]] | None = None
    uncompared: tuple[str, ...] = ()

    @property
    def op_overheads(self) -> dict[str, float]:
        """``{label as in op_tables: the profiled step over the timed median - 1}`` (``evidence_checks``): the
        profiler's overhead, which inflates launch-heavy steps most (+1% to +143% on the H200,
        docs/benchmarks/h200-profiles.md), so op times of profiles whose overheads differ are not like for like."""
        runs = (self.evidence_checks or {}).items()
        return {f"{r[-4:]} {k}": c["step_ratio"] - 1 for r, cs in runs for k, c in cs.items() if c["step_ratio"]}


def build_report(
    runs: Sequence[RunRef],
    *,
    db: str | Path = DEFAULT_DB,
    threshold: float = DEFAULT_THRESHOLD,
    allow_env_mismatch: bool = False,
    ignore_fields: tuple[str, ...] = (),
    trace: str | Path | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Report:
    """The :class:`Report` of ``runs`` (as :func:`surrobench.api.compare.load_run` takes them): two compared
    (:func:`surrobench.api.compare.compare`, two serve runs by capacity), each diagnosed with ``thresholds``,
    ``trace`` (Kineto or nsys) loaded.

    Raises:
        UsageError: a run reference that names nothing, runs that cannot be compared (two serve runs that
            searched different targets), an unreadable trace or one with nothing to draw (a CPU run's).
    """
    timeline = load_trace(trace) if trace is not None else None
    lanes = (timeline.kernels, timeline.memcpy, timeline.memset, timeline.api_calls) if timeline is not None else ()
    if timeline is not None and not any(len(lane) for lane in lanes):
        raise UsageError(f"{trace}: no kernel, copy or CUDA API call to draw: a CPU run's trace; give a GPU run's")
    serve = [load_serve_run(ref, db) for ref in runs]
    served = tuple(s for s in serve if s is not None)
    runs = [ref for ref, s in zip(runs, serve) if s is None]
    records = tuple(load_run(ref, db) for ref in runs)
    ops = [op_times(ref, db, r) for ref, r in zip(runs, records)]  # read once: the comparison's and the tables'
    comparison = None
    if len(runs) == 2:
        matching = dict(threshold=threshold, allow_env_mismatch=allow_env_mismatch, ignore_fields=ignore_fields)
        comparison = compare_runs(*records, **matching, base_ops=ops[0], new_ops=ops[1])
    by_label = {
        f"{r.run_id[-4:]} {c.label()}": ops_ms[c.key()]
        for r, ops_ms in zip(records, ops)
        for c in r.results
        if c.key() in ops_ms
    }
    cpu_labels = frozenset(f"{r.run_id[-4:]} {c.label()}" for r in records for c in r.results if c.device == "cpu")
    optimizations, classes = (), {}
    if Path(db).is_file():
        with ResultStore(db, read_only=True) as store:
            optimizations = tuple(optimizations_of_runs(store, [r.run_id for r in records]))
            classes = {  # each stored config's kernel table that has kernels, labelled as in op_tables
                f"{r.run_id[-4:]} {c.label()}": table.class_shares()
                for ref, r in zip(runs, records)
                if not (isinstance(ref, RunRecord) or is_run_file(ref))
                for c in r.results
                if c.config_id is not None and (table := load_kernel_table(store, c.config_id)) and table.kernels
            }
    searched = len(served) == 2 and all(s.best() is not None for s in served)  # the capacities to compare
    diagnoses = {r.run_id: _diagnosis(ref, r, db, thresholds) for ref, r in zip(runs, records)}
    return Report(
        runs=records,
        comparison=comparison,
        op_tables=by_label,
        cpu_op_labels=cpu_labels,
        findings={run_id: findings for run_id, (findings, _, _) in diagnoses.items()},
        timeline=timeline,
        timeline_title=Path(trace).name if trace is not None else "",
        optimizations=optimizations,
        serve_runs=served,
        serve_comparison=compare_pair(*served, db=db) if searched else None,
        kernel_classes=classes,
        rooflines={run_id: roof for run_id, (_, roof, _) in diagnoses.items() if roof is not None},
        evidence_checks={run_id: checks for run_id, (_, _, checks) in diagnoses.items()},
        uncompared=tuple(r.run_id for kind in (records, served) if len(kind) > 2 for r in kind),
    )


def _diagnosis(
    ref: RunRef, record: RunRecord, db: str | Path, thresholds: Thresholds
) -> tuple[list[Finding], RunRoofline | None, dict]:
    """The run's findings as ``diagnose --run`` gives them, its roofline points (None without any) and evidence
    checks (``{label: check}``); for a run JSON file or a record, the run-level findings of its results alone."""
    if isinstance(ref, RunRecord) or is_run_file(ref):
        findings = diagnose_run(
            [], list(record.results), th=thresholds, device_memory_bytes=record.env.get("gpu_memory_bytes")
        )
        return findings, None, {}
    # api.diagnose, home of the stored run's diagnosis, imports torch (it also runs workloads): only here
    from surrobench.api.diagnose import device_ceilings, diagnose_stored, not_profiled

    with ResultStore(db, read_only=True) as store:
        _, findings, _, evidence = diagnose_stored(record.run_id, store, thresholds)
    checks = {ev.label: checked(ev).to_json() for ev in evidence}
    not_profiled(checks, record, checks)  # "cannot judge", as diagnose --run says, never "no findings"
    measured = {ev.label: ev.counters.to_json() for ev in evidence if ev.counters and ev.counters.kernels}
    estimated = {ev.label: ev.roofline.to_json() for ev in evidence if ev.roofline is not None}
    stored = next((ev.roofline.ceilings for ev in evidence if ev.roofline is not None), None)
    roof = RunRoofline(measured, estimated, device_ceilings(record)[0] or stored) if measured or estimated else None
    return findings, roof, checks
