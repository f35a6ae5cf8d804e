"""Serve runs in the results database: a ``runs`` row (so ``history`` lists it) and its serve-v2 record in
``serve_runs`` (schema version 7, :mod:`surrobench.results.store`)."""

from __future__ import annotations

import json

from surrobench.errors import UsageError
from surrobench.records.run import RunRecord
from surrobench.records.serve import ServeRecord, serve_from_json
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
    best = record.best()
    capacity = best.capacity if best else None
    row = (record.run_id, record.workload["model"], record.workload["device"], record.target_p99_ms)
    row += (capacity.capacity_rps, capacity.failing_rps) if capacity else (None, None)
    with store._writing():
        store.conn.execute(
            "INSERT OR REPLACE INTO serve_runs VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, json.dumps(record.to_json()))
        )


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
