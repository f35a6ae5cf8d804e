"""Serve runs in the results database: a ``runs`` row (so ``history`` lists it) and its serve-v2 record in
``serve_runs`` (schema version 7, :mod:`surrobench.results.store`).

Two serve runs compared by their capacity at the P99 target, the best policy of each (:func:`judge_capacities`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.records.config import mode_text, same_settings
from surrobench.records.paired import MIN_EFFECT
from surrobench.records.run import RunRecord
from surrobench.records.serve import PolicyResult, ServePolicy, ServeRecord, serve_from_json
from surrobench.results.store import ResultStore, named


def begin_serve(store: ResultStore, record: ServeRecord, command: str | None) -> None:
    """The run row, state ``running``, before anything is measured, and the record as begun (no policies),
    so ``history`` and ``show`` name what a run still running (or killed) serves."""
    store.begin_run(RunRecord(record.run_id, record.created, record.tag, record.env), command)
    _write(store, record)


def save_serve(store: ResultStore, record: ServeRecord, state: str | None = "complete") -> None:
    """Store (or replace) the serve record of a begun run and mark the run ``state`` (``complete``, or
    ``interrupted`` with the load points measured so far; None: leave it ``running``, the record so far stored
    as the run goes, so a killed run keeps its finished load points), in one transaction each."""
    _write(store, record)
    if state is not None:
        store.finish_run(record.run_id, state)


def _write(store: ResultStore, record: ServeRecord) -> None:
    row = (record.run_id, record.workload["model"], record.workload["device"], record.target_p99_ms)
    row += (best.capacity.capacity_rps, best.capacity.failing_rps) if (best := record.best()) else (None, None)  # asked
    store.replace("serve_runs", (*row, json.dumps(record.to_json())))


def load_serve(store: ResultStore, run_id: str) -> ServeRecord | None:
    """The serve record of the run ``run_id`` (a full id), or None when it is not a serve run.

    Raises:
        UsageError: the stored record is not a valid serve document.
    """
    row = named(store.conn, "SELECT record_json FROM serve_runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    try:
        return serve_from_json(json.loads(row["record_json"]))
    except ValueError as exc:  # DocumentError, JSONDecodeError
        raise UsageError(f"results database {store.path!r}: serve run {run_id}: {exc}") from None


@dataclass(frozen=True)
class CapacityComparison(schemas.Plain):
    """NEW's capacity at the P99 target against BASE's, each the best policy's (:meth:`ServeRecord.best`): each
    bracket as measured, the rates offered (:meth:`~surrobench.records.serve.PolicyResult.capacity_offered_rps`;
    None, None where no load was: a target answered infeasible at once, ``[0, 0)``); ``ratio`` NEW / BASE of the
    capacities (None when BASE's is 0, or either None); ``verdict``, ``noise_rps`` (each side's bracket widened by
    its loads' noise) and ``ratio_interval`` ``[new_lo / base_hi, new_hi / base_lo]`` over the brackets
    :func:`judge_capacities` judged (a side None where a bracket is open or a capacity 0); ``settings_differ`` each
    side's mode with its execution settings (:func:`~surrobench.records.config.mode_text`) where they differ, else
    None (a document written before it lacks the key). Its JSON object, ``surrobench/compare-serve-v1``, is its
    attributes, a policy as ``{max_batch, max_wait_ms}`` or null for an HTTP endpoint's own batching."""

    SCHEMA = schemas.COMPARE_SERVE

    base_run_id: str
    new_run_id: str
    target_p99_ms: float
    base_policy: ServePolicy | None
    new_policy: ServePolicy | None
    base_rps: tuple[float | None, float | None]
    new_rps: tuple[float | None, float | None]
    ratio: float | None
    ratio_interval: tuple[float | None, float | None]
    verdict: str
    noise_rps: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    settings_differ: tuple[str, str] | None = None


def judge_capacities(base: PolicyResult, new: PolicyResult, target_p99_ms: float) -> tuple[list, dict, str]:
    """NEW's capacity against BASE's, the one rule (``compare`` of serve runs, ``optimize --objective capacity``):
    each bracket as :meth:`PolicyResult.noise_bracket` widens it, those widened by side (``base``, ``new``), and the
    verdict: ``higher`` or ``lower`` when one bracket lies above the other by the paired rule's smallest effect of
    interest (:data:`~surrobench.records.paired.MIN_EFFECT`: the one rule's margin, so that two brackets that only
    touch are not a change); otherwise ``same`` if both are closed and neither widened (the searches, at 5%
    resolution, cannot tell them apart), else ``inconclusive``."""
    judged = [r.noise_bracket(target_p99_ms) for r in (base, new)]
    noise = {side: w for side, r, w in zip(("base", "new"), (base, new), judged) if w != r.capacity_offered_rps()}
    (b_lo, b_hi), (n_lo, n_hi) = judged
    # strictly above the other's capacity too: two infeasible targets, [0, 0) each, are the same
    if b_hi is not None and n_lo >= b_hi * (1 + MIN_EFFECT) and n_lo > b_lo:
        return judged, noise, "higher"
    if n_hi is not None and b_lo >= n_hi * (1 + MIN_EFFECT) and b_lo > n_lo:
        return judged, noise, "lower"
    return judged, noise, "same" if b_hi is not None and n_hi is not None and not noise else "inconclusive"


def compare_capacity(base: ServeRecord, new: ServeRecord) -> CapacityComparison:
    """Compare the capacities the two runs' peak searches found at their (equal) P99 target.

    Raises:
        UsageError: a run without a capacity search, or targets that differ."""
    best = [r.best() for r in (base, new)]
    if any(b is None for b in best):
        text = "compare of serve runs needs two runs of serve with {find_max} (a capacity on each)"
        raise UsageError.naming(text, ("find_max",))
    if base.target_p99_ms != new.target_p99_ms:
        raise UsageError(f"the runs searched different P99 targets ({base.target_p99_ms} and {new.target_p99_ms} ms)")
    ((b_lo, b_hi), (n_lo, n_hi)), noise, verdict = judge_capacities(best[0], best[1], base.target_p99_ms)
    base_rps, new_rps = (b.capacity_offered_rps() if b.capacity.failing_rps != 0 else (None, None) for b in best)
    ran = tuple(mode_text(r.workload["mode"], r.workload) for r in (base, new))
    threads = (base.env.get("torch_threads"), new.env.get("torch_threads"))
    same = same_settings((base.workload["mode"], new.workload["mode"]), (base.workload, new.workload), threads)
    return CapacityComparison(
        base.run_id,
        new.run_id,
        base.target_p99_ms,
        best[0].policy,
        best[1].policy,
        base_rps,
        new_rps,
        new_rps[0] / base_rps[0] if base_rps[0] and new_rps[0] is not None else None,
        (n_lo / b_hi if b_hi else None, n_hi / b_lo if n_hi is not None and b_lo else None),
        verdict,
        noise,
        None if same else ran,
    )
