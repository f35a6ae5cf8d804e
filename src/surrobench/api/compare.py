"""``compare`` two runs config by config (``surrobench compare``, ``report``), two serve runs by capacity; the
stored runs' ``history``, ``import_run`` and ``load``. A run is a :class:`RunRecord`, a run id (or unique prefix)
in ``db``, or a run JSON file."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records.config import ConfigKey
from surrobench.records.run import DOCUMENTS as RUN_DOCUMENTS, RunRecord, created_utc, run_from_json
from surrobench.records import schemas
from surrobench.records.versus import compare_versus
from surrobench.records.serve import CapacityOptimization, ServeRecord, serve_from_json
from surrobench.results.compare import DEFAULT_THRESHOLD, RunComparison, check_gate_inputs, compare_runs
from surrobench.results.compare import gate_failed as gate_failed  # compare --fail-on-regression's gate
from surrobench.execution.env import sweep_warnings as sweep_warnings  # show's: a stored run's, as run's
from surrobench.results.serve_store import CapacityComparison, compare_capacity, load_serve
from surrobench.results.optimize_store import optimization_state as stored_state, optimization_summaries
from surrobench.results.store import DEFAULT_DB, ResultStore
from surrobench.results.profiles import load_op_table

RunRef = RunRecord | str | Path


def is_run_file(ref: str | Path) -> bool:
    """Whether ``ref`` names a run JSON file (a ``.json`` path, or any existing file) rather than a run id."""
    path = Path(ref)
    return path.suffix == ".json" or path.is_file()


def load_run(ref: RunRef, db: str | Path = DEFAULT_DB) -> RunRecord:
    """The run ``ref`` names: a :class:`RunRecord` as is; a run file (:func:`is_run_file`) read as run-v1 JSON;
    anything else a run id (or unique prefix) in the database ``db``.

    Raises:
        UsageError: the file is missing or not a run-v1 JSON, no database at ``db``, no single run matches the id.
    """
    if isinstance(ref, RunRecord):
        return ref
    if is_run_file(ref):
        try:
            data = json.loads(Path(ref).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc) or type(exc).__name__
            raise UsageError(f"run file {str(ref)!r}: cannot read it as JSON ({reason})") from None
        try:
            return run_from_json(data)
        except schemas.DocumentError as exc:
            raise UsageError(f"run file {str(ref)!r}: not a surrobench run JSON: {exc}") from None
    if not Path(db).is_file():
        detail = f"{str(db)!r}: no results database there to look up run {str(ref)!r}; give another, or a run JSON file"
        raise UsageError.bad("db", detail)
    with ResultStore(db, read_only=True) as store:
        return store.load_run(str(ref))


def op_times(ref: RunRef, db: str | Path, run: RunRecord) -> dict[ConfigKey, dict[str, float]]:
    """Op time per step of the profiled configs of a database run, ``{ConfigResult.key(): OpTable.ms_per_step()}``;
    empty for a run file or a record (run-v1 JSON carries no op tables) or a run that was not profiled."""
    if isinstance(ref, RunRecord) or is_run_file(ref) or not Path(db).is_file():
        return {}
    with ResultStore(db, read_only=True) as store:
        tables = {r.key(): load_op_table(store, r.config_id) for r in run.results}
    return {key: t.ms_per_step() for key, t in tables.items() if t is not None and t.ops and t.active_steps}


@dataclass(frozen=True)
class ComparedRuns:
    """Two runs and their comparison: what ``surrobench compare`` shows (the comparison, then the scaling
    table of each side that is a multi-process run)."""

    base: RunRecord
    new: RunRecord
    comparison: RunComparison

    def to_json(self) -> dict:
        """``surrobench/compare-v2`` (:meth:`RunComparison.to_json`)."""
        return self.comparison.to_json()


@dataclass(frozen=True)
class ComparedServeRuns:
    """Two serve runs (``serve --find-max``) and their capacities at the P99 target compared."""

    base: ServeRecord
    new: ServeRecord
    capacity: CapacityComparison

    def to_json(self) -> dict:
        """``surrobench/compare-serve-v1`` (:meth:`CapacityComparison.to_json`)."""
        return self.capacity.to_json()


def _document(path: object, kinds: tuple[str, ...] | None) -> dict | None:
    """The JSON object in the file ``path`` when its ``schema`` is one of ``kinds`` (None: any); None for anything
    else: not a path, a file that cannot be read as JSON or holds another document (:func:`load_run` says why)."""
    if not isinstance(path, (str, Path)):
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) and (kinds is None or data.get("schema") in kinds) else None


def _serve_file(path: str | Path) -> ServeRecord | None:
    """The serve record in a ``surrobench/serve-v2`` (or v1) JSON file (``serve --json``), else None.

    Raises:
        UsageError: a serve document with a key missing or of the wrong kind.
    """
    data = _document(path, (schemas.SERVE, schemas.SERVE_V1))
    if data is None:
        return None
    try:
        return serve_from_json(data)
    except schemas.DocumentError as exc:
        raise UsageError(f"serve file {str(path)!r}: {exc}") from None


def load_serve_run(ref: RunRef | ServeRecord, db: str | Path = DEFAULT_DB) -> ServeRecord | None:
    """The serve record ``ref`` names: a :class:`ServeRecord` as is, a serve JSON file, a run id (or unique prefix)
    of a serve run in ``db``; None for anything else (another file, a :class:`RunRecord`, no database).

    Raises:
        UsageError: no single run in ``db`` matches the id; the stored serve record (or the serve file) is invalid.
    """
    if isinstance(ref, ServeRecord):
        return ref
    if isinstance(ref, RunRecord):
        return None
    if is_run_file(ref):
        return _serve_file(ref)
    if not Path(db).is_file():
        return None
    with ResultStore(db, read_only=True) as store:
        return load_serve(store, store.resolve_run_id(str(ref)))


def compare_pair(
    base: RunRef | ServeRecord,
    new: RunRef | ServeRecord,
    *,
    db: str | Path = DEFAULT_DB,
    threshold: float = DEFAULT_THRESHOLD,
    allow_env_mismatch: bool = False,
    ignore_fields: tuple[str, ...] = (),
    gate: bool = False,
) -> ComparedRuns | ComparedServeRuns:
    """Load ``base`` and ``new`` (:func:`load_run`), match their configs and compare each pair: median, P95, peak
    memory, top op (op tables too in the database), the bootstrap CI of the median ratio and a verdict
    (:mod:`surrobench.results.compare`). ``ignore_fields``: key fields left out of the match (``"mode"``,
    ``"precision"``, ``"device"``). ``gate`` (``--fail-on-regression``): both runs need enough rounds. Two serve
    runs compare their capacity at the P99 target, two ``versus --json`` files their matched-error speedups.

    Raises:
        UsageError: a run reference that names nothing, runs on different devices without ``allow_env_mismatch``,
            an unknown ignored field; with ``gate``, a run taken with too few rounds or serve runs; one serve run
            and one that is not; serve runs without a capacity search or with different targets.
    """
    if _document(base, (schemas.VERSUS,)) or _document(new, (schemas.VERSUS,)):  # their matched-error speedups
        if gate:
            raise UsageError.bad("gate", "gates run configs; two versus files compare their speedups only")
        return compare_versus(base, new)
    base_serve, new_serve = load_serve_run(base, db), load_serve_run(new, db)
    if base_serve is not None or new_serve is not None:  # two serve runs: their capacities
        if base_serve is None or new_serve is None:
            serve_side, other, other_ref = ("BASE", "NEW", new) if base_serve is not None else ("NEW", "BASE", base)
            raise UsageError(
                f"{serve_side} is a serve run and {other} ({str(other_ref)!r}) is not: compare serve runs with serve runs"
            )
        if gate:
            raise UsageError.bad("gate", "gates run configs; two serve runs compare their capacity only")
        return ComparedServeRuns(base_serve, new_serve, compare_capacity(base_serve, new_serve))
    base_run, new_run = load_run(base, db), load_run(new, db)
    if gate:
        check_gate_inputs(base_run, new_run)
    comparison = compare_runs(
        base_run,
        new_run,
        threshold=threshold,
        allow_env_mismatch=allow_env_mismatch,
        ignore_fields=ignore_fields,
        base_ops=op_times(base, db, base_run),
        new_ops=op_times(new, db, new_run),
    )
    return ComparedRuns(base_run, new_run, comparison)


def compare(base: RunRef | ServeRecord, new: RunRef | ServeRecord, **options) -> RunComparison | CapacityComparison:
    """:func:`compare_pair`'s comparison alone (``options``: its keywords): a :class:`RunComparison`, of two serve
    runs a :class:`CapacityComparison`, of two ``versus --json`` files a
    :class:`~surrobench.records.versus.VersusComparison`. Raises UsageError as :func:`compare_pair`."""
    pair = compare_pair(base, new, **options)
    if isinstance(pair, ComparedServeRuns):
        return pair.capacity
    return pair.comparison if isinstance(pair, ComparedRuns) else pair


class History(list):
    """What :func:`history` returns: a list of :class:`~surrobench.results.store.RunSummary`, newest first."""

    def to_json(self) -> dict:
        """``surrobench/history-v1``: ``{"schema", "runs"}``, each run its summary's fields."""
        return {"schema": schemas.HISTORY, "runs": [asdict(r) for r in self]}


def history(
    db: str | Path = DEFAULT_DB, *, model: str | None = None, tag: str | None = None, since: str | None = None
) -> History:
    """The runs, serve runs and optimizations in ``db`` (:class:`~surrobench.results.store.RunSummary`, ``created``
    in UTC), newest first, filtered by ``model``, ``tag`` and ``since`` (ISO, UTC). Behind ``surrobench history``.

    Raises:
        UsageError: ``since`` is not an ISO date; there is no database at ``db``.
    """
    if since is not None:
        try:
            dt.datetime.fromisoformat(since)
        except ValueError:
            detail = f"{since!r}: not an ISO date, write e.g. 2026-11-30 or 2026-11-30T14:00"
            raise UsageError.bad("since", detail) from None
    if not Path(db).is_file():
        raise UsageError.bad("db", f"{str(db)!r}: no results database there; store a run there first, or give another")
    with ResultStore(db, read_only=True) as store:
        runs = store.list_runs(model=model, tag=tag, since=since)
        runs += optimization_summaries(store, model=model, tag=tag, since=since)
    # one format of creation time (an older serve run stored its local time without an offset)
    runs = [replace(r, created=created_utc(r.created)) for r in runs]
    return History(sorted(runs, key=lambda r: r.created, reverse=True))


def optimization_state(doc: dict, db: str | Path = DEFAULT_DB) -> str:
    """How the optimize document ``doc`` (:func:`load`'s, ``optimize``'s) stands in ``db``, as :func:`history` lists
    it (:func:`~surrobench.results.optimize_store.optimization_state`): complete, running, abandoned or interrupted."""
    with ResultStore(db, read_only=True) if Path(db).is_file() else contextlib.nullcontext() as store:
        return stored_state(store, doc)


@dataclass(frozen=True)
class ImportedRun:
    """A file stored by :func:`import_run`: ``what`` it held (``run``, ``serve run``, ``optimization``), its id, and
    what it ``added``: a run's configs the database lacked; for a serve run or an optimization 1, or 0 when the
    database held it (and now holds the file's)."""

    what: str
    record_id: str
    added: int


def import_run(path: str | Path, *, db: str | Path = DEFAULT_DB) -> ImportedRun:
    """Store the JSON file ``path`` (``run``, ``serve`` or ``optimize --json``, the capacity objective's too, or an
    :class:`~surrobench.errors.Unsaved`'s recovery file) in ``db`` (created when missing): a run's configs the
    database lacks, ``complete``, ``interrupted`` or ``unsaved`` as its file says; a serve run or an optimization whole (not an
    optimization's baseline and recipe runs, which its file lacks). Behind ``surrobench import``.

    Raises:
        UsageError: ``path`` is not a file, or not one of those documents; the database holds another run of that
            id (a config the file lacks) or the run's own process is still writing it
            (:meth:`~surrobench.results.store.ResultStore.add_run`); the write failed
            (:class:`~surrobench.errors.StoreWriteError`).
    """
    from surrobench.results.optimize import DOCUMENTS
    from surrobench.results.optimize_store import add_optimization, find_optimization
    from surrobench.results.serve_store import save_serve

    if not Path(path).is_file():
        raise UsageError(f"run file {str(path)!r}: no such file")
    served = _serve_file(path)
    data = None if served is not None else _document(path, (*DOCUMENTS, schemas.CAPACITY))
    with ResultStore(db) as store:
        if served is not None:
            known = served.run_id in store.matching_run_ids(served.run_id)
            store.add_run(RunRecord(served.run_id, served.created, served.tag, served.env), _state(served.env))
            save_serve(store, served, state=None)
            return ImportedRun("serve run", served.run_id, int(not known))
        if data is not None:
            try:
                if data.get("schema") == schemas.CAPACITY:
                    CapacityOptimization.from_json(data)
                else:
                    schemas.check(data, DOCUMENTS)
            except (schemas.DocumentError, KeyError, TypeError, ValueError) as exc:
                raise UsageError(f"optimize file {str(path)!r}: {type(exc).__name__}: {exc}") from None
            known = find_optimization(store, data["optimize_id"]) is not None
            add_optimization(store, data)
            return ImportedRun("optimization", data["optimize_id"], int(not known))
        other = _document(path, None)
        if other is not None and other.get("schema") not in RUN_DOCUMENTS:  # a JSON object of no kind import takes
            kinds = ", ".join((*RUN_DOCUMENTS, schemas.SERVE, schemas.SERVE_V1, *DOCUMENTS, schemas.CAPACITY))
            detail = f"schema {other.get('schema')!r}: import takes a run, serve or optimize file ({kinds})"
            raise UsageError(f"file {str(path)!r}: {detail}")
        record = load_run(Path(path))
        return ImportedRun("run", record.run_id, store.add_run(record, _state(record.env)))


def _state(env: dict) -> str:
    """The state of an imported run: how its file says it ended (``interrupted``; ``unsaved``, stopped by a failed
    database write: :func:`~surrobench.execution.sweep.unsaved_env`), else ``complete``."""
    return "interrupted" if env.get("interrupted") else "unsaved" if env.get("unsaved") else "complete"


def load(ref: str, db: str | Path = DEFAULT_DB) -> dict | ServeRecord | RunRecord:
    """What ``ref`` names, in this order: an optimization id (or prefix) in ``db`` (its ``optimize-v3`` or
    ``capacity-v1`` document), or an ``optimize --json`` file (its ``optimize-v3`` document), a serve run
    (:func:`load_serve_run`), a run (:func:`load_run`). ``surrobench show``'s call.

    Raises:
        UsageError: as :func:`load_run` (an unknown id, an unreadable file); an id that is a prefix of both an
            optimization and runs; an optimize file that does not check.
    """
    from surrobench.results.optimize import DOCUMENTS, OptimizeReport
    from surrobench.results.optimize_store import find_optimization

    if not isinstance(ref, str):
        raise UsageError.bad("ref", f"{ref!r}: a run, serve run or optimization id, or a JSON file's path")
    optimized = _document(ref, tuple(DOCUMENTS)) if is_run_file(ref) else None
    if optimized is not None:
        try:
            return OptimizeReport.from_json(optimized).to_json()  # any stored version, as the current one
        except schemas.DocumentError as exc:
            raise UsageError(f"optimize file {ref!r}: {exc}") from None
    if not is_run_file(ref) and ref.strip() and Path(db).is_file():
        with ResultStore(db, read_only=True) as store:
            doc = find_optimization(store, ref)
            runs = store.matching_run_ids(ref) if doc is not None else []
        if runs:  # a prefix of both: the user must say which
            raise UsageError(
                f"id {ref!r} in {str(db)!r} matches optimization {doc['optimize_id']} and {len(runs)} run(s) "
                f"({', '.join(runs[:3])}{', ...' if len(runs) > 3 else ''}): give more of the id"
            )
        if doc is not None:
            return doc
    served = load_serve_run(ref, db)
    return served if served is not None else load_run(ref, db)
