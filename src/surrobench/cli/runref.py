"""Run references on the command line: a run id (or unique id prefix) in ``--db``, or a run JSON file."""

from __future__ import annotations

import json
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records.run import RunJsonError, RunRecord, run_from_json
from surrobench.results.store import ResultStore


def is_run_file(ref: str) -> bool:
    """Whether ``ref`` names a run JSON file (a ``.json`` path, or any existing file) rather than a run id."""
    path = Path(ref)
    return path.suffix == ".json" or path.is_file()


def load_run_ref(ref: str, db: Path) -> RunRecord:
    """The run ``ref`` names: a ``.json`` path or an existing file is read as run-v1 JSON, anything else is
    a run id (or unique prefix) looked up in the database ``db``.

    Raises:
        UsageError: the file is missing or not a run-v1 JSON, the database does not exist, or no single
            run matches the id.
    """
    path = Path(ref)
    if is_run_file(ref):
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc) or type(exc).__name__
            raise UsageError(f"run file {ref!r}: cannot read it as JSON ({reason})") from None
        try:
            return run_from_json(data)
        except RunJsonError as exc:
            raise UsageError(f"run file {ref!r}: not a surrobench run JSON: {exc}") from None
    if not db.is_file():
        raise UsageError(f"no results database at {str(db)!r} to look up run {ref!r}; pass --db or a run JSON file")
    with ResultStore(db) as store:
        return store.load_run(ref)


def load_op_tables(ref: str, db: Path, run: RunRecord) -> dict[tuple, dict[str, float]]:
    """Op tables of the profiled configs of a database run, ``{ConfigResult.key(): OpTable.ms_per_step()}``;
    empty for a run file (:func:`is_run_file`; the run-v1 JSON carries no op tables) or a run that was not
    profiled."""
    if is_run_file(ref):
        return {}
    with ResultStore(db) as store:
        tables = {r.key(): store.load_op_table(cid) for r, cid in zip(run.results, store.config_ids(run.run_id))}
    return {key: t.ms_per_step() for key, t in tables.items() if t is not None and t.ops and t.active_steps}
