"""SQLite store of runs, configs and per-iteration samples (stdlib ``sqlite3``, one file, no service).

Each config is committed as soon as it finishes, so an interrupted or crashed sweep keeps every config
measured before it (docs/design.md, "Principles").

A run a killed process left ``running`` is shown :data:`ABANDONED` where its writer (:class:`RunOwner`) is gone.

**Recovery.** Where a command keeps what its results database could not take (:class:`~surrobench.errors.Unsaved`):
a recovery file, the run's JSON, beside the database, else in the current folder, else in the temporary folder.
``surrobench import`` reads it back (:meth:`ResultStore.add_run`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import tempfile
from collections.abc import Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from surrobench.errors import Interrupted, StoreWriteError, UsageError
from surrobench.records import schemas
from surrobench.records.run import DOCUMENTS as RUN_DOCUMENTS, ConfigResult, RunRecord

DEFAULT_DB = "surrobench.db"

#: The database schema this code writes, stored as ``PRAGMA user_version``: 0 = unversioned (version 1's tables);
#: 2 = ``runs.state``, ceilings per machine (:mod:`surrobench.results.ceilings`; an older ``ceilings`` table is
#: left unread); 3 = each run's writer (``runs.pid``, ``host``, ``pid_started``: :class:`RunOwner`);
#: 4 = ``configs.inputs_json``; 5 = kernel tables (:mod:`surrobench.records.kernels`); 6 = Nsight Compute counters
#: (:mod:`surrobench.results.profiles`); 7 = ``serve_runs``; 8 = ``rooflines`` (:mod:`surrobench.results.profiles`);
#: 9 = ``op_stats.inside_json`` (:attr:`surrobench.records.ops.OpStat.inside`). An older database is migrated
#: forward on open (:data:`_MIGRATIONS`); a newer one is refused before anything is measured.
SCHEMA_VERSION = 9
#: ``unsaved``: the command measured more than the database took (a write failed: disk full, locked, ...) and
#: exited knowing it; what it measured is in its ``--json`` or recovery file (:class:`~surrobench.errors.Unsaved`),
#: which ``surrobench import`` stores, the run still ``unsaved``. ``failed``: an error stopped the command (its message
#: said why); the configs committed before are stored.
RUN_STATES = ("running", "complete", "interrupted", "unsaved", "failed")
#: What ``history`` shows for a run stored ``running`` whose process is gone (killed with no chance to mark it).
ABANDONED = "abandoned"

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, tag TEXT, env_json TEXT NOT NULL, command TEXT,
    state TEXT NOT NULL DEFAULT 'complete',
    pid INTEGER, host TEXT, pid_started REAL
);
CREATE TABLE IF NOT EXISTS configs (
    config_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    model TEXT NOT NULL, shape_label TEXT NOT NULL, input_shape_json TEXT NOT NULL, batch INTEGER NOT NULL,
    precision TEXT NOT NULL, device TEXT NOT NULL, mode TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT, warmup INTEGER NOT NULL, iters INTEGER NOT NULL,
    cold_start_ms REAL, latency_json TEXT, device_json TEXT, samples_per_s REAL, points_per_s REAL,
    peak_mem_bytes INTEGER, peak_reserved_bytes INTEGER, top_op_json TEXT, extra_json TEXT NOT NULL,
    inputs_json TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS samples (
    config_id INTEGER NOT NULL REFERENCES configs(config_id), iter INTEGER NOT NULL,
    latency_ms REAL NOT NULL, device_ms REAL, PRIMARY KEY (config_id, iter)
);
CREATE INDEX IF NOT EXISTS configs_by_run ON configs(run_id);
CREATE TABLE IF NOT EXISTS op_profiles (
    config_id INTEGER PRIMARY KEY REFERENCES configs(config_id), basis TEXT NOT NULL, source TEXT NOT NULL,
    total_us REAL NOT NULL, active_steps INTEGER NOT NULL, kernel_count INTEGER, small_kernel_count INTEGER,
    small_kernel_us REAL, has_shapes INTEGER NOT NULL, has_memory INTEGER NOT NULL, profiled_step_ms REAL,
    overhead REAL, trace_path TEXT
);
CREATE TABLE IF NOT EXISTS op_stats (
    config_id INTEGER NOT NULL REFERENCES configs(config_id), rank INTEGER NOT NULL, name TEXT NOT NULL,
    category TEXT NOT NULL, calls INTEGER NOT NULL, self_device_us REAL NOT NULL, total_device_us REAL NOT NULL,
    share REAL NOT NULL, self_cpu_us REAL NOT NULL, device_mem_bytes INTEGER NOT NULL,
    self_device_mem_bytes INTEGER NOT NULL, input_shapes_json TEXT NOT NULL, inside_json TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (config_id, rank)
);
-- profile --counters: one ncu capture per config, one row per measured launch (surrobench.results.profiles)
CREATE TABLE IF NOT EXISTS ncu_captures (
    config_id INTEGER PRIMARY KEY REFERENCES configs(config_id), kernels INTEGER NOT NULL, passes INTEGER NOT NULL,
    ncu_wall_s REAL, covered_share REAL, selected_json TEXT NOT NULL, command_json TEXT NOT NULL,
    problem_kind TEXT, problem_message TEXT
);
CREATE TABLE IF NOT EXISTS ncu_kernels (
    config_id INTEGER NOT NULL REFERENCES configs(config_id), launch INTEGER NOT NULL, name TEXT NOT NULL,
    kernel_class TEXT, op TEXT, module TEXT, bound TEXT NOT NULL, limiter TEXT NOT NULL, cause TEXT,
    duration_ns REAL NOT NULL, dram_bytes REAL, flops REAL NOT NULL, measured_json TEXT NOT NULL,
    PRIMARY KEY (config_id, launch)
);
-- diagnose: a config's estimated roofline, the whole RooflineReport as JSON (surrobench.results.profiles)
CREATE TABLE IF NOT EXISTS rooflines (
    config_id INTEGER PRIMARY KEY REFERENCES configs(config_id), device_name TEXT NOT NULL, precision TEXT NOT NULL,
    ridge_flop_per_byte REAL NOT NULL, roofline_json TEXT NOT NULL
);
-- a profiled config's kernel table (records/kernels.py): its head and notes, then one row per kernel row
CREATE TABLE IF NOT EXISTS kernel_profiles (
    config_id INTEGER PRIMARY KEY REFERENCES configs(config_id), total_us REAL NOT NULL,
    active_steps INTEGER NOT NULL, source TEXT NOT NULL, notes_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kernel_stats (
    config_id INTEGER NOT NULL REFERENCES configs(config_id), rank INTEGER NOT NULL, name TEXT NOT NULL,
    kernel_class TEXT NOT NULL, calls INTEGER NOT NULL, device_us REAL NOT NULL, share REAL NOT NULL, op TEXT,
    module TEXT, origin TEXT NOT NULL, fused_ops TEXT, PRIMARY KEY (config_id, rank)
);
-- surrobench optimize: the whole optimize report, linked to the baseline and recipe runs it stored
CREATE TABLE IF NOT EXISTS optimizations (
    optimize_id TEXT PRIMARY KEY, created TEXT NOT NULL, baseline_run_id TEXT NOT NULL REFERENCES runs(run_id),
    recipe_run_id TEXT REFERENCES runs(run_id), report_json TEXT NOT NULL
);
-- one row per optimized config, to find the measured remedies of a config
CREATE TABLE IF NOT EXISTS optimize_configs (
    optimize_id TEXT NOT NULL REFERENCES optimizations(optimize_id), model TEXT NOT NULL,
    input_shape_json TEXT NOT NULL, batch INTEGER NOT NULL, device TEXT NOT NULL, config_json TEXT NOT NULL
);
"""

# surrobench serve: the serve-v1 record of a run, and its capacity at the P99 target to find it by
_SERVE_SQL = """
CREATE TABLE IF NOT EXISTS serve_runs (
    run_id TEXT PRIMARY KEY REFERENCES runs(run_id), model TEXT NOT NULL, device TEXT NOT NULL,
    target_p99_ms REAL, capacity_rps REAL, failing_rps REAL, record_json TEXT NOT NULL
)
"""
_SCHEMA_SQL += _SERVE_SQL + ";"


def _add_columns(table: str, *columns: str):
    """A migration step adding ``columns`` (``"name TYPE ..."``) to ``table``; a column already there (a version
    stamp reset) is kept, and a file without the table gets it whole from :data:`_SCHEMA_SQL`."""

    def step(conn: sqlite3.Connection) -> None:
        have = {row["name"] for row in _columns(conn, table)}
        for column in columns:
            if have and column.split()[0] not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")

    return step


def _add_inputs(conn: sqlite3.Connection) -> None:
    """Migration 4: ``configs.inputs_json``; an older row gets its primary input, of unknown dtype (null), or none
    for a config that failed before its inputs were built (a column already there is kept)."""
    columns = {row["name"] for row in _columns(conn, "configs")}
    if not columns or "inputs_json" in columns:
        return
    conn.execute("ALTER TABLE configs ADD COLUMN inputs_json TEXT NOT NULL DEFAULT '[]'")
    conn.execute(
        "UPDATE configs SET inputs_json = json_array(json_object('shape', json(input_shape_json), 'dtype', NULL))"
        " WHERE input_shape_json != '[]'"
    )


#: Forward migrations: ``_MIGRATIONS[v]`` turns a version ``v - 1`` database into version ``v``, each step an SQL
#: statement or a function of the connection. An older run's state reads ``complete`` (as it was shown), its
#: owner unknown (shown as stored), its ops inside nothing (``[]``, unknown); a table added later holds nothing
#: of it (a kernel table, counters or a roofline read back as None).
_MIGRATIONS = {
    1: (),
    2: ("ALTER TABLE runs ADD COLUMN state TEXT NOT NULL DEFAULT 'complete'",),
    3: (_add_columns("runs", "pid INTEGER", "host TEXT", "pid_started REAL"),),
    4: (_add_inputs,),
    5: (),  # kernel_profiles, kernel_stats: new tables, created by _SCHEMA_SQL
    6: (),  # ncu_captures, ncu_kernels: new tables, created by _SCHEMA_SQL
    7: (_SERVE_SQL,),
    8: (),  # rooflines: a new table, created by _SCHEMA_SQL
    9: (_add_columns("op_stats", "inside_json TEXT NOT NULL DEFAULT '[]'"),),
}


#: The ``configs`` columns read into the :class:`ConfigResult` field of the same name as stored, then every
#: column a config's row is written with (the rest as JSON).
_PLAIN_CONFIG_COLUMNS = tuple(
    "model shape_label batch precision device mode status error warmup iters cold_start_ms samples_per_s points_per_s"
    " peak_mem_bytes peak_reserved_bytes".split()
)
#: The JSON columns of a config row by the :class:`ConfigResult` field each holds (:meth:`ConfigResult.of` reads them).
_JSON_COLUMNS = {"input_shape": "input_shape_json", "latency_ms": "latency_json", "device_ms": "device_json"}
_JSON_COLUMNS |= {"top_op": "top_op_json", "extra": "extra_json", "inputs": "inputs_json"}
_CONFIG_COLUMNS = (*_PLAIN_CONFIG_COLUMNS, *_JSON_COLUMNS.values())


def named(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> sqlite3.Cursor:
    """``conn.execute(sql, params)`` whose rows read by column name (:class:`sqlite3.Row`: ``row["run_id"]``)."""
    cursor = conn.execute(sql, params)
    cursor.row_factory = sqlite3.Row
    return cursor


def _columns(conn: sqlite3.Connection, table: str) -> list[sqlite3.Row]:
    """``PRAGMA table_info``: a row per column (``name``, ``notnull``, ``dflt_value``, ...)."""
    return named(conn, f"PRAGMA table_info({table})").fetchall()


def _check_tables(conn: sqlite3.Connection, path: str) -> None:
    """UsageError unless every table of ours has our columns and no extra column our inserts cannot fill
    (NOT NULL without a default): a table of the same name from another program is not ours to write."""
    expected = sqlite3.connect(":memory:")
    expected.executescript(_SCHEMA_SQL)
    sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    for table in [row["name"] for row in named(expected, sql)]:
        want = {row["name"] for row in _columns(expected, table)}
        have = _columns(conn, table)
        missing = want - {row["name"] for row in have}
        blocking = [c["name"] for c in have if c["name"] not in want and c["notnull"] and c["dflt_value"] is None]
        if missing or blocking:
            what = f"lacks column(s) {', '.join(sorted(missing))}" if missing else ""
            what = what or f"has column(s) {', '.join(blocking)} this version cannot fill"
            raise UsageError(
                f"results database {path!r}: table {table!r} {what}; it was not written by this "
                "surrobench version: use another database"
            )
    expected.close()


def _check_intact(conn: sqlite3.Connection, path: str) -> None:
    """UsageError when SQLite's ``PRAGMA quick_check`` (https://www.sqlite.org/pragma.html#pragma_quick_check)
    finds the file damaged, checked on open so that no command measures first and fails to store after."""
    problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    if problem != "ok":
        what = " ".join(str(problem).split())
        raise UsageError(
            f"results database {path!r} is damaged ({what}); nothing was written to it: use another database, or "
            "recover what it holds with the sqlite3 shell's .recover"
        )


#: Two readings of one process's start time differ by less than this, seconds: psutil derives it from the
#: boot time and the process's start in clock ticks (Linux ``/proc/PID/stat`` field 22, 1/100 s).
_START_TOLERANCE_S = 1.0


@dataclass(frozen=True)
class RunOwner:
    """The process that writes a run: ``pid``, ``host`` (``socket.gethostname()``, as the run's env has it),
    ``started`` (its start time, seconds since the epoch)."""

    pid: int
    host: str
    started: float

    @classmethod
    def current(cls) -> "RunOwner":
        """This process."""
        pid = os.getpid()
        return cls(pid, socket.gethostname(), psutil.Process(pid).create_time())

    def gone(self) -> bool:
        """True when this process has surely ended: the host is this one and no process with that pid and
        start time runs now. False when it is alive, or on another host (it cannot be checked from here)."""
        if self.host != socket.gethostname():
            return False
        try:
            process = psutil.Process(self.pid)
            if abs(process.create_time() - self.started) > _START_TOLERANCE_S:
                return True  # the pid was reused by a later process
            return process.status() == psutil.STATUS_ZOMBIE  # ended, not yet reaped by its parent
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:  # alive, but not ours to read (another user's process)
            return False


@dataclass(frozen=True)
class RunSummary:
    """One line of ``surrobench history``; ``state`` one of :data:`RUN_STATES` or :data:`ABANDONED`; ``kind`` ``run``
    (``n_configs`` timed, ``n_failed`` neither ``ok`` nor ``interrupted``, ``n_interrupted`` cut by Ctrl-C or a signal;
    ``diagnose``: one ``diagnose`` stored, by ``env["command_kind"]``), ``serve`` (the model served, ``n_policies``
    and ``n_points`` stored, ``n_failed`` policies ``nonfinite``) or ``optimize`` (``run_id`` the optimization's id,
    ``n_configs`` the configs searched, ``n_recipes`` those given a recipe)."""

    run_id: str
    created: str
    tag: str | None
    device_name: str | None
    models: tuple[str, ...]
    n_configs: int
    n_failed: int
    state: str = "complete"
    n_interrupted: int = 0
    kind: str = "run"
    n_policies: int = 0
    n_points: int = 0
    n_recipes: int = 0


def prefix_pattern(prefix: str) -> str:
    """A LIKE pattern (escape character ``\\``) matching ids that start with ``prefix`` literally."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _dump(obj) -> str | None:
    return None if obj is None else json.dumps(obj)


def _load(text: str | None):
    return None if text is None else json.loads(text)


def _env(text: str) -> dict:
    """A stored environment: a JSON object (anything else is a foreign row: TypeError)."""
    env = json.loads(text)
    if not isinstance(env, dict):
        raise TypeError(f"env_json is a {type(env).__name__}, not an object")
    return env


def _shown_state(state: str, pid: int | None, host: str | None, started: float | None) -> str:
    """``state`` as stored, or :data:`ABANDONED` for a ``running`` run whose owner process is gone."""
    if state == "running" and pid is not None and host is not None and started is not None:
        return ABANDONED if RunOwner(int(pid), str(host), float(started)).gone() else state
    return state


def _refuse_newer(version: int, path: str) -> None:
    """UsageError for a database of a newer schema than :data:`SCHEMA_VERSION` (its rows may not be what this
    code would write)."""
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"results database {path!r} has schema version {version}, newer than this surrobench's "
            f"{SCHEMA_VERSION}: upgrade surrobench, or use another database"
        )


#: Free bytes under which a write failure whose SQLite error names no cause (a commit that failed at 0 bytes free
#: hides its ``SQLITE_FULL``) is a full disk: a few of SQLite's default 4096-byte pages
#: (https://www.sqlite.org/pragma.html#pragma_page_size), what one more commit and its journal need at least.
_FULL_BELOW_BYTES = 64 * 4096

#: SQLite's primary result codes (``sqlite3.Error.sqlite_errorname`` without an extended suffix,
#: https://www.sqlite.org/rescode.html) and what failed, in words.
_WRITE_FAILURES = {
    "SQLITE_FULL": "disk full",
    "SQLITE_BUSY": "locked by another process",
    "SQLITE_LOCKED": "locked by another process",
    "SQLITE_READONLY": "read-only",
    "SQLITE_IOERR": "I/O error",
    "SQLITE_CANTOPEN": "cannot open the file",
    "SQLITE_CORRUPT": "the file is damaged",
    "SQLITE_NOTADB": "the file is damaged",
}


def write_failure(exc: sqlite3.Error, path: str | Path) -> str:
    """What made a write to the database at ``path`` fail, in words, from SQLite's result code (:data:`_WRITE_FAILURES`;
    a new file that cannot be opened: a file where a folder above it should be, its folder missing or not writable; a
    writable file read-only: its folder not writable); else ``disk full`` under :data:`_FULL_BELOW_BYTES` free, else
    ``write failed``."""
    code = (getattr(exc, "sqlite_errorname", None) or "").split("_")
    folder = Path(path).parent
    cause = _WRITE_FAILURES.get("_".join(code[:2]))
    if cause == _WRITE_FAILURES["SQLITE_CANTOPEN"] and not Path(path).exists():
        above = next(p for p in Path(path).absolute().parents if p.exists())  # the nearest that exists: / at last
        if not above.is_dir():
            return f"{str(above)!r} is a file, not a folder"
        if not _writable(Path(path)):
            return f"its folder {str(folder)!r} {'is not writable' if folder.is_dir() else 'does not exist'}"
    if cause == _WRITE_FAILURES["SQLITE_READONLY"] and os.access(path, os.W_OK) and not _writable(Path(path)):
        return f"its folder {str(folder)!r} is not writable (SQLite writes its journal there)"
    if cause is None and "database or disk is full" in str(exc):  # an error made without its code
        cause = "disk full"
    if cause is None:
        try:
            free = shutil.disk_usage(Path(path).resolve().parent).free
        except OSError:
            free = None
        cause = "disk full" if free is not None and free < _FULL_BELOW_BYTES else "write failed"
    return cause


def cause_text(cause: str, exc: sqlite3.Error) -> str:
    """A :func:`write_failure` cause for the error line: its words, SQLite's message where it named none."""
    return str(exc) if cause == "write failed" else cause


def _writable(path: Path) -> bool:
    """Whether SQLite could write ``path``: the file (when it exists) and its folder, which holds the
    rollback journal (https://www.sqlite.org/tempfiles.html)."""
    return (not path.exists() or os.access(path, os.W_OK)) and os.access(path.resolve().parent, os.W_OK | os.X_OK)


class ResultStore:
    """The results database at ``path`` (created with its tables on first use).

    Raises:
        UsageError: the path cannot be opened, is not a surrobench database, or is read-only and needs migrating
            (:meth:`_check_read_only_schema`).
    """

    def __init__(self, path: str | Path = DEFAULT_DB, *, read_only: bool = False) -> None:
        """``read_only``: the caller only reads; a file this process may not write is then opened with SQLite's
        ``mode=ro`` URI (https://www.sqlite.org/uri.html)."""
        self.path = str(path)
        try:
            if read_only and not _writable(Path(self.path)):
                self.conn = sqlite3.connect(Path(self.path).resolve().as_uri() + "?mode=ro", uri=True)
                self._check_read_only_schema()
            else:
                self.conn = sqlite3.connect(self.path)
                self._open_schema(read_only)
        except sqlite3.Error as exc:  # the schema probe writes: a full disk fails here, before anything is measured
            cause = write_failure(exc, self.path)  # in our words; SQLite's own text where we have none
            raise UsageError(f"cannot use results database {self.path!r}: {cause_text(cause, exc)}") from None

    def _check_read_only_schema(self) -> None:
        """What :meth:`_open_schema` checks, without writing.

        Raises:
            UsageError: as :meth:`_open_schema`, a file without our tables, or a schema older than
                :data:`SCHEMA_VERSION` (it would need migrating).
        """
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        _refuse_newer(version, self.path)
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
            raise UsageError(f"results database {self.path!r} is read-only and holds no surrobench runs")
        _check_intact(self.conn, self.path)
        if version < SCHEMA_VERSION:
            raise UsageError(
                f"results database {self.path!r} has schema version {version}, older than {SCHEMA_VERSION}, and is "
                "read-only: make it writable once so it can be migrated"
            )
        _check_tables(self.conn, self.path)

    def _open_schema(self, read_only: bool = False) -> None:
        """Create the tables of a new database, migrate an older one forward, refuse a newer one, in one
        ``BEGIN IMMEDIATE`` transaction (concurrent openers migrate once). A writer rewrites the schema version
        so that a file it cannot write fails before anything is measured; a ``read_only`` caller does not.

        Raises:
            UsageError: ``user_version`` above :data:`SCHEMA_VERSION`, tables that are not ours, or a damaged file
                (:func:`_check_intact`).
        """
        self.conn.isolation_level = None  # explicit transactions below
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            _refuse_newer(version, self.path)
            fresh = not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone()
            if not fresh:
                _check_intact(self.conn, self.path)
                for target in range(version + 1, SCHEMA_VERSION + 1):
                    for step in _MIGRATIONS[target]:
                        if callable(step):
                            step(self.conn)
                        else:
                            self.conn.execute(step)
            for statement in filter(str.strip, _SCHEMA_SQL.split(";")):
                self.conn.execute(statement)
            _check_tables(self.conn, self.path)
            if version != SCHEMA_VERSION or not read_only:
                self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        finally:
            self.conn.isolation_level = ""

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, kind, *exc) -> None:
        """An exception leaving the store marks this process's runs still ``running`` ``interrupted``
        (:class:`~surrobench.errors.Interrupted`, Ctrl-C) or ``failed``: ``abandoned`` is for a process that died."""
        if kind is not None and issubclass(kind, (Exception, KeyboardInterrupt)):
            state = "interrupted" if issubclass(kind, (Interrupted, KeyboardInterrupt)) else "failed"
            owner = RunOwner.current()
            with suppress(StoreWriteError), self._writing():
                self.conn.execute(
                    "UPDATE runs SET state = ? WHERE state = 'running' AND pid = ? AND host = ?"
                    " AND abs(pid_started - ?) < ?",
                    (state, owner.pid, owner.host, owner.started, _START_TOLERANCE_S),
                )
        self.close()

    @contextmanager
    def _writing(self):
        """One committed transaction; a failing write (disk full, locked, read-only, removed) reported in one line.

        Raises:
            StoreWriteError: the write failed; its ``cause`` says what failed (:func:`write_failure`).
        """
        try:
            with self.conn:
                yield
        except sqlite3.Error as exc:
            cause = write_failure(exc, self.path)
            text = f"cannot write to results database {self.path!r}: {cause_text(cause, exc)}"
            raise StoreWriteError(text, path=self.path, cause=cause) from None

    def replace(
        self, table: str, row: tuple, rows_table: str | None = None, rows: Sequence[tuple] = (), key: str = "config_id"
    ) -> None:
        """Store ``row`` (every column of ``table``, its key first) over the one of that key, and where ``rows_table``
        is named, that key's rows there (``key`` its column): those stored deleted, then ``rows`` (each every column
        after the key), in one transaction (:meth:`_writing`)."""
        with self._writing():
            self.conn.execute(f"INSERT OR REPLACE INTO {table} VALUES ({', '.join('?' * len(row))})", row)
            if rows_table is not None:
                self.conn.execute(f"DELETE FROM {rows_table} WHERE {key} = ?", (row[0],))
            if rows:
                marks = ", ".join("?" * (1 + len(rows[0])))
                self.conn.executemany(f"INSERT INTO {rows_table} VALUES ({marks})", [(row[0], *r) for r in rows])

    def begin_run(self, run: RunRecord, command: str | None = None) -> None:
        """Insert the run row (before any config, state ``running``, with this process as its owner:
        :class:`RunOwner`) and commit."""
        owner = RunOwner.current()
        with self._writing():
            self.conn.execute(
                "INSERT INTO runs (run_id, created, tag, env_json, command, state, pid, host, pid_started)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                (run.run_id, run.created, run.tag, json.dumps(run.env), command, owner.pid, owner.host, owner.started),
            )

    def finish_run(self, run_id: str, state: str = "complete") -> None:
        """Mark the run ``state`` (one of :data:`RUN_STATES`); one left ``running`` was killed (or is in progress).
        On a full disk, where the rollback journal cannot be written, the row is updated in place without one
        (``journal_mode = MEMORY``, https://www.sqlite.org/pragma.html#pragma_journal_mode: only an OS crash
        within that one write could damage the page), so the run's state is still told.

        Raises:
            StoreWriteError: the write failed, in place too."""
        if state not in RUN_STATES:
            raise ValueError(f"run state {state!r}: one of {RUN_STATES}")
        update = "UPDATE runs SET state = ? WHERE run_id = ?"
        try:
            with self._writing():
                self.conn.execute(update, (state, run_id))
        except StoreWriteError as exc:
            mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
            in_place = "PRAGMA journal_mode = MEMORY"
            if exc.cause != "disk full" or mode == "memory" or self.conn.execute(in_place).fetchone()[0] != "memory":
                raise  # another cause, in place already, or a journal mode that does not switch (WAL)
            try:
                with self._writing():  # once more, in place
                    self.conn.execute(update, (state, run_id))
            finally:
                self.conn.execute(f"PRAGMA journal_mode = {mode}")

    def run_state(self, run_id: str) -> str | None:
        """The state of ``run_id`` as ``history`` lists it (:data:`RUN_STATES`, or :data:`ABANDONED`: its writer is
        gone); None when no run has that id."""
        row = self.conn.execute("SELECT state, pid, host, pid_started FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else _shown_state(*row)

    def update_env(self, run_id: str, env: dict) -> None:
        """Replace the run's environment (e.g. with the clocks read after the sweep)."""
        with self._writing():
            self.conn.execute("UPDATE runs SET env_json = ? WHERE run_id = ?", (json.dumps(env), run_id))

    def add_result(self, run_id: str, r: ConfigResult) -> int:
        """Insert one config and its samples in one transaction; returns its ``config_id``."""
        with self._writing():
            return self._insert_result(run_id, r)

    def add_run(self, run: RunRecord, state: str = "complete") -> int:
        """Store ``run`` (``surrobench import``) in one transaction: the run row where none has its id, and each
        config the stored run lacks (by :meth:`~surrobench.records.run.ConfigResult.key`, as many times as the
        file holds it), so importing again adds nothing; then mark it ``state``, its env the file's (how it ended:
        ``interrupted``, ``unsaved``). Returns the configs added.

        Raises:
            UsageError: ``run.run_id`` names a stored run holding a config the file lacks (another run of that
                id), or one that is still ``running`` in a live process.
            StoreWriteError: the write failed.
        """
        stored = self.matching_run_ids(run.run_id)
        have = [r.key() for r in self.load_run(run.run_id).results] if run.run_id in stored else []
        missing = list(run.results)
        for key in have:
            match = next((r for r in missing if r.key() == key), None)
            if match is None:
                raise UsageError(
                    f"run {run.run_id} in {self.path!r} holds configs the file does not: another run of that id"
                )
            missing.remove(match)
        if run.run_id in stored and self.run_state(run.run_id) == "running":
            raise UsageError(f"run {run.run_id} in {self.path!r} is still being written by its process")
        env = json.dumps(run.env)
        with self._writing():
            if run.run_id not in stored:
                self.conn.execute(
                    "INSERT INTO runs (run_id, created, tag, env_json, state) VALUES (?, ?, ?, ?, 'running')",
                    (run.run_id, run.created, run.tag, env),
                )
            for r in missing:
                self._insert_result(run.run_id, r)
            self.conn.execute("UPDATE runs SET state = ?, env_json = ? WHERE run_id = ?", (state, env, run.run_id))
        return len(missing)

    def _insert_result(self, run_id: str, r: ConfigResult) -> int:
        """:meth:`add_result` inside the caller's transaction."""
        stats = [_dump(x.to_json() if x else None) for x in (r.latency_ms, r.device_ms)]
        values = (*(getattr(r, c) for c in _PLAIN_CONFIG_COLUMNS), json.dumps(list(r.input_shape)), *stats)
        values += (_dump(r.top_op), json.dumps(r.extra), json.dumps([spec.to_json() for spec in r.inputs]))
        columns = ", ".join(("run_id", *_CONFIG_COLUMNS))
        cur = self.conn.execute(
            f"INSERT INTO configs ({columns}) VALUES ({', '.join('?' * (1 + len(values)))})", (run_id, *values)
        )
        config_id = cur.lastrowid
        device = r.device_samples_ms or (None,) * len(r.samples_ms)
        self.conn.executemany(
            "INSERT INTO samples VALUES (?, ?, ?, ?)",
            [(config_id, i, lat, dev) for i, (lat, dev) in enumerate(zip(r.samples_ms, device))],
        )
        return config_id

    def set_top_op(self, config_id: int, top_op: dict) -> None:
        """Record the top operator of a profiled config, :attr:`ConfigResult.top_op` (``{"name", "share"}``)."""
        with self._writing():
            sql = "UPDATE configs SET top_op_json = ? WHERE config_id = ?"
            self.conn.execute(sql, (json.dumps(top_op), config_id))

    def add_extra(self, config_id: int, **extra) -> None:
        """Merge ``extra`` (JSON values) into a stored config's :attr:`ConfigResult.extra`."""
        with self._writing():
            sql = "UPDATE configs SET extra_json = json_patch(extra_json, ?) WHERE config_id = ?"
            self.conn.execute(sql, (json.dumps(extra), config_id))

    def load_run(self, run_id: str) -> RunRecord:
        """The stored run with all its configs and samples.

        Raises:
            UsageError: no run with that id (a unique prefix of an id is accepted).
        """
        run_id = self.resolve_run_id(run_id)
        head = self.conn.execute("SELECT created, tag, env_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        sql = f"SELECT config_id, {', '.join(_CONFIG_COLUMNS)} FROM configs WHERE run_id = ? ORDER BY config_id"
        rows = named(self.conn, sql, (run_id,)).fetchall()
        results, sql = [], "SELECT latency_ms, device_ms FROM samples WHERE config_id = ? ORDER BY iter"
        with self._reading(f"run {run_id}"):
            for row in rows:
                samples = named(self.conn, sql, (row["config_id"],)).fetchall()
                config = dict(row) | {field: _load(row[column]) for field, column in _JSON_COLUMNS.items()}
                config["samples_ms"] = [s["latency_ms"] for s in samples]
                config["device_samples_ms"] = [s["device_ms"] for s in samples if s["device_ms"] is not None]
                results.append(ConfigResult.of(config))
            created, tag, env_json = head
            run = RunRecord(run_id, created, tag, _env(env_json), tuple(results))
            schemas.check(run.to_json(), RUN_DOCUMENTS)  # as a run JSON file's: renderers trust what they get
            return run

    def resolve_run_id(self, prefix: str) -> str:
        """The full id of the run whose id starts with ``prefix``.

        Raises:
            UsageError: an empty ``prefix`` (it would match every run, or the only one), no run, or several runs, match.
        """
        if not prefix.strip():
            raise UsageError(f"run id {prefix!r} is empty; see `surrobench history` for the ids in {self.path!r}")
        rows = self.matching_run_ids(prefix)
        if len(rows) != 1:
            what, verb = ("no run", "matches") if not rows else (f"{len(rows)} runs", "match")
            sql = "SELECT 1 FROM optimizations WHERE optimize_id LIKE ? ESCAPE '\\'"
            other = not rows and named(self.conn, sql, (prefix_pattern(prefix),)).fetchone() is not None
            hint = f": {prefix!r} is an optimization, which `surrobench show` prints" if other else ""
            raise UsageError(f"{what} in {self.path!r} {verb} run id {prefix!r}{hint}; see `surrobench history`")
        return rows[0]

    def matching_run_ids(self, prefix: str) -> list[str]:
        """The ids of the stored runs that start with ``prefix`` (LIKE wildcards in it taken literally)."""
        rows = named(self.conn, "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\'", (prefix_pattern(prefix),))
        return [row["run_id"] for row in rows]

    def list_runs(self, model: str | None = None, tag: str | None = None, since: str | None = None) -> list[RunSummary]:
        """Stored runs, newest first, optionally filtered by model (a config's, or the one a serve run served), tag
        and creation time (ISO-8601 prefix); a ``running`` run whose process is gone is :data:`ABANDONED`."""
        query = (
            "SELECT r.run_id, r.created, r.tag, r.env_json, group_concat(DISTINCT c.model) AS models,"
            " count(c.config_id) AS n_configs, sum(c.status NOT IN ('ok', 'interrupted')) AS n_failed,"
            " sum(c.status = 'interrupted') AS n_interrupted, r.state, r.pid, r.host,"
            " r.pid_started, s.model AS served, s.record_json"
            " FROM runs r LEFT JOIN configs c ON c.run_id = r.run_id LEFT JOIN serve_runs s ON s.run_id = r.run_id"
            " WHERE (? IS NULL OR r.tag = ?) AND (? IS NULL OR r.created >= ?)"
            " AND (? IS NULL OR r.run_id IN (SELECT run_id FROM configs WHERE model = ?)"
            " OR r.run_id IN (SELECT run_id FROM serve_runs WHERE model = ?))"
            " GROUP BY r.run_id ORDER BY r.created DESC"
        )
        rows = named(self.conn, query, (tag, tag, since, since, model, model, model)).fetchall()
        summaries = []
        with self._reading("a run"):
            for row in rows:
                env, served = _env(row["env_json"]), row["served"]
                models = set((row["models"] or "").split(",")) - {""} | ({str(served)} if served is not None else set())
                made_by = "serve" if served is not None else env.get("command_kind", "run")
                policies = json.loads(row["record_json"])["policies"] if row["record_json"] is not None else []
                tag = None if row["tag"] is None else str(row["tag"])
                head = (str(row["run_id"]), str(row["created"]), tag, env.get("device_name"), tuple(sorted(models)))
                state = _shown_state(str(row["state"]), row["pid"], row["host"], row["pid_started"])
                failed = (row["n_failed"] or 0) + sum(bool(p.get("nonfinite")) for p in policies)  # serve's
                counts = {"n_configs": row["n_configs"], "n_failed": failed, "n_interrupted": row["n_interrupted"] or 0}
                points = sum(len(p["points"]) for p in policies)
                kind = {"kind": made_by, "n_policies": len(policies), "n_points": points}
                summaries.append(RunSummary(*head, **counts, state=state, **kind))
        return summaries

    @contextmanager
    def _reading(self, what: str):
        """Rows another program (or a hand edit) wrote that our types cannot read: one line, not a traceback."""
        try:
            yield
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise UsageError(
                f"results database {self.path!r}: {what} holds a row surrobench cannot read "
                f"({type(exc).__name__}: {exc}); use another database"
            ) from None


def recovery_name(db: str | Path, run_id: str) -> str:
    """The recovery file's name for run ``run_id`` of database ``db``: ``surrobench.unsaved-RUN_ID.json``."""
    return f"{Path(db).stem}.unsaved-{run_id}.json"


def replace_file(target: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``target`` whole: to a temporary file beside it, renamed over it, so a reader never sees
    half of it; with permission bits ``mode``, None: those ``open()`` gives a new file (0o666 less the umask, not
    mkstemp's 0600). Raises OSError, the temporary file removed."""
    if mode is None:
        umask = os.umask(0)  # the only portable way to read it: set and restore at once
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_recovery(document: dict, db: str | Path, run_id: str) -> Path | None:
    """Write ``document`` (a run JSON) as :func:`recovery_name` in the first folder that takes it whole
    (:func:`replace_file`; a folder where the name is taken passed over): the database's own, the current one, the
    temporary one. Returns the path written, or None when no folder took it."""
    data = (json.dumps(document, indent=1) + "\n").encode()
    try:
        here = [Path.cwd()]
    except OSError:  # the current folder was removed
        here = []
    for folder in dict.fromkeys([Path(db).resolve().parent, *here, Path(tempfile.gettempdir())]):
        target = folder / recovery_name(db, run_id)
        if target.exists():
            continue
        try:
            replace_file(target, data)
            return target
        except OSError:
            continue
    return None
