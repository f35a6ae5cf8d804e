"""The database schema is versioned (``PRAGMA user_version``): older files migrate forward, newer or foreign
ones are refused on open (before anything is measured), foreign rows are one line, not a traceback."""

from __future__ import annotations

import sqlite3

import pytest
from synthetic import config, latency_samples, run

from surrobench.errors import Interrupted, UsageError
from surrobench.results.store import SCHEMA_VERSION, ResultStore

# the tables as written before the schema was versioned (user_version 0, no runs.state)
_V0_RUNS = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, created TEXT NOT NULL, tag TEXT, env_json TEXT NOT NULL, command TEXT)"
)


def _version(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def test_new_database_is_stamped_and_runs_carry_their_state(tmp_path):
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        rec = run("20261201-000000-aaaa", [config(latency_samples(1.0, 0.01, n=20))])
        store.begin_run(rec)
        assert store.run_state(rec.run_id) == "running"  # a kill -9 leaves it so
        store.finish_run(rec.run_id, "interrupted")
        assert [r.state for r in store.list_runs()] == ["interrupted"]
    assert _version(db) == SCHEMA_VERSION


def test_unversioned_database_migrates_forward_keeping_its_runs(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute(_V0_RUNS)
    conn.execute("INSERT INTO runs VALUES ('20250101-000000-bbbb', '2025-01-01T00:00:00+00:00', NULL, '{}', 'x')")
    conn.commit()
    conn.close()
    with ResultStore(db) as store:
        (summary,) = store.list_runs()
        assert summary.run_id == "20250101-000000-bbbb" and summary.state == "complete"
    assert _version(db) == SCHEMA_VERSION


def test_newer_database_is_refused_on_open_and_left_untouched(tmp_path):
    db = tmp_path / "new.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="schema version 99, newer than this surrobench's"):
        ResultStore(db)
    assert _version(db) == 99
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0  # no tables were created
    conn.close()


def test_table_with_a_column_we_cannot_fill_is_refused(tmp_path):
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute(_V0_RUNS.replace("command TEXT)", "command TEXT, owner TEXT NOT NULL)"))
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="table 'runs' has column.s. owner"):
        ResultStore(db)


def test_a_foreign_row_is_one_line_for_every_reader(tmp_path):
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        store.begin_run(run("20261201-000000-cccc", [config(latency_samples(1.0, 0.01, n=20))]))
        store.add_result("20261201-000000-cccc", config(latency_samples(1.0, 0.01, n=20)))
        store.conn.execute("INSERT INTO runs (run_id, created, env_json) VALUES ('x-foreign', 'now', '[1]')")
        store.conn.execute("UPDATE configs SET precision = 'fp64'")
        store.conn.commit()
    with ResultStore(db) as store:
        with pytest.raises(UsageError, match="holds a row surrobench cannot read"):
            store.list_runs()
        with pytest.raises(UsageError, match=r"results\[0\]\.precision: 'fp64' is not one of"):
            store.load_run("20261201-000000-cccc")


def test_configs_of_a_migrated_database_carry_their_row_ids(tmp_path):
    """Results read back from an old file carry their config ids (what later stages find op tables by)."""
    db = tmp_path / "old.db"
    with ResultStore(db) as store:
        rec = run(
            "20250101-000000-dddd",
            [config(latency_samples(1.0, 0.01, n=20)), config(latency_samples(2.0, 0.01, n=20), batch=2)],
        )
        store.begin_run(rec)
        ids = [store.add_result(rec.run_id, r) for r in rec.results]
        store.finish_run(rec.run_id)
    conn = sqlite3.connect(db)  # back to the unversioned layout: no runs.state nor owner, user_version 0
    for column in ("state", "pid", "host", "pid_started"):
        conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()
    with ResultStore(db) as store:
        loaded = store.load_run(rec.run_id)
    assert _version(db) == SCHEMA_VERSION
    assert [(r.batch, r.config_id) for r in loaded.results] == [(1, ids[0]), (2, ids[1])]


def _stored_running(store: ResultStore, run_id: str, **owner) -> None:
    store.begin_run(run(run_id, [config(latency_samples(1.0, 0.01, n=20))]))
    for column, value in owner.items():
        store.conn.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, run_id))
    store.conn.commit()


def test_a_running_run_whose_process_is_gone_is_listed_abandoned(tmp_path):
    import socket
    import subprocess
    import sys

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    with ResultStore(tmp_path / "r.db") as store:
        _stored_running(store, "20261201-000001-live")  # this process: alive
        _stored_running(store, "20261201-000002-gone", pid=ended.pid)
        _stored_running(store, "20261201-000003-reus", pid_started=0.0)  # this pid, but a later process
        _stored_running(store, "20261201-000004-else", pid=ended.pid, host=socket.gethostname() + "-other")
        states = {r.run_id[-4:]: r.state for r in store.list_runs()}
        stored = store.conn.execute("SELECT state FROM runs WHERE run_id = '20261201-000002-gone'").fetchone()
        assert store.run_state("20261201-000002-gone") == "abandoned" and stored == ("running",)  # derived, not written
    assert states == {"live": "running", "gone": "abandoned", "reus": "abandoned", "else": "running"}


@pytest.mark.parametrize(
    "error, state",
    [
        (RuntimeError("planted"), "failed"),
        (Interrupted("planted"), "interrupted"),
        (KeyboardInterrupt(), "interrupted"),
    ],
)
def test_an_error_leaving_the_store_marks_this_process_s_running_runs(tmp_path, error, state):
    db = tmp_path / "r.db"
    with pytest.raises(type(error)), ResultStore(db) as store:
        _stored_running(store, "20261201-000007-mine")
        _stored_running(store, "20261201-000008-othr", pid=1)  # another process's: left as it is
        _stored_running(store, "20261201-000009-done")
        store.finish_run("20261201-000009-done")
        raise error
    with ResultStore(db) as store:
        assert {run_id[-4:]: state for run_id, state in store.conn.execute("SELECT run_id, state FROM runs")} == {
            "mine": state,
            "othr": "running",
            "done": "complete",
        }


def test_a_version_2_database_gains_the_run_owner_columns(tmp_path):
    db = tmp_path / "v2.db"
    with ResultStore(db) as store:
        _stored_running(store, "20261201-000005-vtwo")
    conn = sqlite3.connect(db)
    for column in ("pid", "host", "pid_started"):
        conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with ResultStore(db) as store:
        (summary,) = store.list_runs()  # no owner recorded: its liveness is unknown, shown as stored
        assert summary.state == "running"
        _stored_running(store, "20261201-000006-vthr")
        assert store.conn.execute("SELECT pid FROM runs WHERE run_id LIKE '%vthr'").fetchone()[0] > 0
    assert _version(db) == SCHEMA_VERSION


def test_opening_a_current_database_writes_nothing(tmp_path):
    """A reader (``history``, ``show``) leaves the file as it was: SQLite's file change counter (bytes 24-27 of
    the header, https://www.sqlite.org/fileformat.html) does not move when a database of this schema is opened."""
    db = tmp_path / "r.db"
    ResultStore(db).close()
    before = db.read_bytes()[24:28]
    for _ in range(2):
        with ResultStore(db, read_only=True) as store:
            store.list_runs()
    assert db.read_bytes()[24:28] == before
