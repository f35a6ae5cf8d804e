"""A results database that fails mid-sweep (disk full, locked, read-only) loses nothing measured: the run's
``--json`` is written, or a recovery file beside the database; the error says what failed and where the run is;
the run is marked ``unsaved``; ``surrobench import`` stores the file back, once."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli

import surrobench
from surrobench.cli.options import invoked_as
from surrobench.records.run import ConfigResult, run_from_json
from surrobench.records.serve import serve_from_json
from surrobench.results import store as store_module
from surrobench.results.store import ResultStore, write_failure

SWEEP = ["run", "--model", "pinn-mlp", "--shape", "16", "--batch", "1,2,4", "--device", "cpu"]
FAST = ["--warmup", "0", "--iters", "2", "--input-sets", "1"]


@pytest.fixture
def disk_full_on_second_config(monkeypatch):
    """The database takes the run row and the first config; the second config's insert fails as SQLite fails
    on a full disk."""
    real = ResultStore._insert_result
    disk = {"inserts": 0, "full": True}

    def insert(self, run_id, result):
        disk["inserts"] += 1
        if disk["full"] and disk["inserts"] == 2:
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, run_id, result)

    monkeypatch.setattr(ResultStore, "_insert_result", insert)
    return disk


def _stored(db: Path) -> tuple[str, int]:
    with ResultStore(db) as store:
        (summary,) = store.list_runs()
    return summary.state, summary.n_configs


def test_a_disk_full_sweep_keeps_its_json(tmp_path, capsys, disk_full_on_second_config):
    db, out = tmp_path / "r.db", tmp_path / "run.json"
    assert run_cli([*SWEEP, *FAST, "--db", str(db), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the low-iterations warning
    assert err.startswith("surrobench: error: ") and "disk full" in err and str(out) in err and "import" in err
    assert "database or disk is full" not in err  # the cause in the tool's words, not SQLite's too
    run = run_from_json(json.loads(out.read_text()))
    assert [r.batch for r in run.results] == [1, 2]  # the stored config and the one the database refused
    assert all(r.status == "ok" and len(r.samples_ms) == 2 for r in run.results)
    assert _stored(db) == ("unsaved", 1)


def test_without_json_a_recovery_file_beside_the_database_imports_back(tmp_path, capsys, disk_full_on_second_config):
    db = tmp_path / "r.db"
    assert run_cli([*SWEEP, *FAST, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    (recovery,) = tmp_path.glob("r.unsaved-*.json")
    assert str(recovery) in err and "disk full" in err
    assert f"{invoked_as()} import " in err  # the line to store it back starts as surrobench was started
    kept = run_from_json(json.loads(recovery.read_text()))
    assert len(kept.results) == 2
    disk_full_on_second_config["full"] = False  # the disk has room again

    fresh = tmp_path / "new.db"
    imported = surrobench.import_run(recovery, db=fresh)
    assert (imported.what, imported.record_id, imported.added) == ("run", kept.run_id, 2)
    with ResultStore(fresh) as store:
        assert store.load_run(kept.run_id) == kept
    assert _stored(fresh) == ("unsaved", 2)  # as the file says it ended: 2 of 3 configs measured
    assert surrobench.import_run(recovery, db=fresh).added == 0  # idempotent

    assert run_cli(["import", str(recovery), "--db", str(db)]) == 0  # stores the rest in its own database
    assert _stored(db) == ("unsaved", 2)
    with ResultStore(db) as store:
        again = store.load_run(kept.run_id)
    # the first config as the sweep stored it (its ladder label and settings beyond the run JSON's), then the one imported
    assert [(r.key(), r.samples_ms) for r in again.results] == [(r.key(), r.samples_ms) for r in kept.results]


def test_a_disk_that_fills_mid_run_keeps_the_runs_state_at_each_step(
    tmp_path, capsys, monkeypatch, disk_full_on_second_config
):
    """At 0 bytes free no journaled write goes through (SQLite's rollback journal cannot grow): the run is still
    marked ``unsaved`` (in place), its recovery file says how it ended, and ``import`` keeps that, not ``complete``."""
    from contextlib import contextmanager

    from surrobench.errors import StoreWriteError

    real = ResultStore._writing

    @contextmanager
    def journaled(self):  # once the second config failed, the disk is full for every write with a journal
        full = disk_full_on_second_config["inserts"] >= 2 and disk_full_on_second_config["full"]
        if full and self.conn.execute("PRAGMA journal_mode").fetchone()[0] != "memory":
            raise StoreWriteError("cannot write: disk full", path=self.path, cause="disk full")
        with real(self):
            yield

    monkeypatch.setattr(ResultStore, "_writing", journaled)
    db = tmp_path / "r.db"
    assert run_cli([*SWEEP, *FAST, "--db", str(db)]) == 2
    (recovery,) = tmp_path.glob("r.unsaved-*.json")
    doc = json.loads(recovery.read_text())
    assert doc["env"]["unsaved"] == {"cause": "disk full", "planned": 3} and len(doc["results"]) == 2
    assert _stored(db) == ("unsaved", 1)  # not left running (abandoned once the process is gone)
    disk_full_on_second_config["full"] = False
    assert surrobench.import_run(recovery, db=db).added == 1
    assert _stored(db) == ("unsaved", 2)  # 2 of the 3 configs planned: not complete
    capsys.readouterr()
    shown = tmp_path / "shown.json"
    assert run_cli(["show", doc["run_id"], "--db", str(db), "--json", str(shown)]) == 0
    assert "disk full" in capsys.readouterr().err  # show warns how the run ended, from the fields below
    stored = json.loads(shown.read_text())
    assert stored["env"]["unsaved"] == {"cause": "disk full", "planned": 3} and len(stored["results"]) == 2


def test_import_refuses_another_run_of_the_same_id(tmp_path, capsys):
    doc = {"schema": "surrobench/run-v1", "run_id": "r1", "created": "now", "tag": None, "env": {}, "results": []}
    file = tmp_path / "r1.json"
    file.write_text(json.dumps(doc))
    db = tmp_path / "r.db"
    assert run_cli(["import", str(file), "--db", str(db)]) == 0
    assert run_cli(["import", str(file), "--db", str(db)]) == 0  # the same run: nothing to add
    failed = ConfigResult("m", "1", (1,), 1, "fp32", "cpu", "eager", "error", "boom", 0, 1)
    with ResultStore(db) as store:
        store.add_result("r1", failed)  # now the stored r1 holds a config the file lacks: another run
    capsys.readouterr()
    assert run_cli(["import", str(file), "--db", str(db)]) == 2
    assert "another run of that id" in capsys.readouterr().err
    assert run_cli(["import", str(tmp_path / "missing.json"), "--db", str(db)]) == 2


def _error(name: str, text: str = "x") -> sqlite3.Error:
    exc = sqlite3.OperationalError(text)
    exc.sqlite_errorname = name
    return exc


@pytest.mark.parametrize(
    ("error", "free_bytes", "cause"),
    [
        (_error("SQLITE_FULL"), 10**9, "disk full"),
        (_error("SQLITE_BUSY"), 10**9, "locked by another process"),
        (_error("SQLITE_READONLY_DBMOVED"), 10**9, "read-only"),
        (_error("SQLITE_IOERR_WRITE"), 10**9, "I/O error"),
        (sqlite3.OperationalError("database or disk is full"), 10**9, "disk full"),
        # at 0 bytes free the commit's own error is hidden behind the rollback that follows it
        (_error("SQLITE_ERROR", "cannot rollback - no transaction is active"), 0, "disk full"),
        (_error("SQLITE_ERROR", "cannot rollback - no transaction is active"), 10**9, "write failed"),
    ],
)
def test_what_failed_is_named(tmp_path, monkeypatch, error, free_bytes, cause):
    monkeypatch.setattr(store_module.shutil, "disk_usage", lambda path: type("U", (), {"free": free_bytes})())
    assert write_failure(error, tmp_path / "r.db") == cause


def test_the_error_line_tells_the_cause_in_its_own_words(tmp_path, monkeypatch):
    """SQLite's text is on the line only where no cause is known; a database opened on a full disk says so alone."""
    from surrobench.errors import UsageError

    rollback = _error("SQLITE_ERROR", "cannot rollback - no transaction is active")
    assert store_module.cause_text("disk full", rollback) == "disk full"
    assert store_module.cause_text("write failed", rollback) == "cannot rollback - no transaction is active"
    monkeypatch.setattr(store_module.shutil, "disk_usage", lambda path: type("U", (), {"free": 0})())

    def full(self, read_only=False):
        raise rollback

    monkeypatch.setattr(ResultStore, "_open_schema", full)
    with pytest.raises(UsageError) as raised:
        ResultStore(tmp_path / "r.db")
    assert str(raised.value) == f"cannot use results database {str(tmp_path / 'r.db')!r}: disk full"


NOT_WRITABLE_JOURNAL = "is not writable (SQLite writes its journal there)"


def test_a_new_database_in_a_folder_it_cannot_write_names_the_folder(tmp_path, monkeypatch):
    """A fresh-user trial's ``--db ro/s.db`` (no such file yet, a read-only folder) read "cannot open the file"; an
    existing writable file there said "read-only" (a later trial). SQLite's CANTOPEN for a new file names its folder,
    unwritable or missing; its READONLY for a writable file names the folder that cannot hold the journal."""
    folder = tmp_path / "ro"
    folder.mkdir()
    writes = lambda path, mode: Path(path).exists() and Path(path) != folder  # noqa: E731 (root writes anywhere)
    monkeypatch.setattr(store_module.os, "access", writes)
    cantopen = _error("SQLITE_CANTOPEN", "unable to open database file")
    assert write_failure(cantopen, folder / "s.db") == f"its folder {str(folder)!r} is not writable"
    assert write_failure(cantopen, tmp_path / "no" / "s.db") == f"its folder {str(tmp_path / 'no')!r} does not exist"
    (folder / "old.db").touch()  # an existing file SQLite cannot open: not its folder's fault
    assert write_failure(cantopen, folder / "old.db") == "cannot open the file"
    readonly = _error("SQLITE_READONLY", "attempt to write a readonly database")  # a writable file, its folder not
    assert write_failure(readonly, folder / "old.db") == f"its folder {str(folder)!r} {NOT_WRITABLE_JOURNAL}"
    monkeypatch.setattr(store_module.os, "access", lambda path, mode: False)  # the file itself read-only
    assert write_failure(readonly, folder / "old.db") == "read-only"
    monkeypatch.undo()
    from surrobench.errors import UsageError

    with pytest.raises(UsageError) as raised:  # a command that writes opens its store first
        ResultStore(tmp_path / "no" / "s.db")
    assert str(raised.value).endswith(f"s.db': its folder {str(tmp_path / 'no')!r} does not exist")


def test_a_database_under_a_regular_file_names_that_file(tmp_path):
    """A trial's ``--db /etc/hostname/surro.db`` read "cannot open the file" (with an x bit on the file, else "its
    folder does not exist"): the path is refused before anything is measured, the file in the way named (exit 2)."""
    import surrobench
    from surrobench.errors import UsageError

    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    cantopen = _error("SQLITE_CANTOPEN", "unable to open database file")
    for mode in (0o644, 0o755):
        afile.chmod(mode)
        for db in (afile / "x.db", afile / "sub" / "x.db"):
            assert write_failure(cantopen, db) == f"{str(afile)!r} is a file, not a folder"
    with pytest.raises(UsageError):
        surrobench.benchmark("pinn-mlp", db=afile / "x.db", shapes="8", batches="1", device="cpu", threads=1)
    assert run_cli([*SWEEP, *FAST, "--db", str(afile / "x.db")]) == 2
    assert afile.read_text() == "not a folder" and [p.name for p in tmp_path.iterdir()] == ["afile"]  # no recovery


def test_a_serve_run_whose_database_locks_keeps_its_load_points(tmp_path, capsys, monkeypatch):
    """The run row is written, then the first load point's write finds the database locked: the load point is in
    the recovery file, which imports back as the serve run."""
    from surrobench.results import serve_store

    real, writes = serve_store._write, []

    def locked_after_begin(store, record):
        writes.append(record)
        if len(writes) == 1:
            return real(store, record)
        with store._writing():
            raise _error("SQLITE_BUSY", "database is locked")

    monkeypatch.setattr(serve_store, "_write", locked_after_begin)
    db = tmp_path / "r.db"
    args = ["--model", "pinn-mlp", "--shape", "16", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--rate", "40,80", "--duration-s", "0.2", "--warmup-s", "0.05", "--min-requests", "0", "--db", str(db)]
    assert run_cli(["serve", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    (recovery,) = tmp_path.glob("r.unsaved-*.json")
    assert "locked" in err and str(recovery) in err  # the cause; the load point measured is in the document
    doc = json.loads(recovery.read_text())
    assert [len(p["points"]) for p in doc["policies"]] == [1]
    assert _stored(db)[0] == "unsaved"

    monkeypatch.setattr(serve_store, "_write", real)
    imported = surrobench.import_run(recovery, db=db)
    assert (imported.what, imported.record_id, imported.added) == ("serve run", doc["run_id"], 0)
    with ResultStore(db) as store:
        assert serve_store.load_serve(store, doc["run_id"]) == serve_from_json(doc)
    assert _stored(db)[0] == "unsaved" and doc["env"]["unsaved"] == {
        "cause": "locked by another process",
        "planned": 2,
    }


def test_an_optimize_whose_database_fills_keeps_its_json(tmp_path, capsys, disk_full_on_second_config):
    """The baseline run's row is written, its config's result is not: the search is in --json, which imports back
    as the optimization."""
    disk_full_on_second_config["inserts"] = 1  # the next insert, the baseline's config, is the one that fails
    out, db = tmp_path / "o.json", tmp_path / "o.db"
    argv = ["optimize", "--model", "pinn-mlp", "--shape", "16", "--batch", "1", "--only", "channels_last"]
    argv += ["--rounds", "2", "--warmup", "1", "--iters", "3", "--input-sets", "1", "--device", "cpu"]
    assert run_cli([*argv, "--processes", "0", "--db", str(db), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    doc = json.loads(out.read_text())
    assert "disk full" in err and doc["optimize_id"] in err  # the cause, the optimization kept in --json
    assert [c["model"] for c in doc["configs"]] == ["pinn-mlp"] and doc["configs"][0]["candidates"]
    disk_full_on_second_config["full"] = False
    assert run_cli(["import", str(out), "--db", str(db)]) == 0
    assert run_cli(["show", doc["optimize_id"], "--db", str(db), "--json", str(tmp_path / "back.json")]) == 0
    assert json.loads((tmp_path / "back.json").read_text()) == doc


def test_the_recovery_file_goes_where_there_is_room(tmp_path, monkeypatch):
    """Beside the database first; a folder with no room is passed over, for the current one."""
    from surrobench.results import store

    full, here = tmp_path / "full", tmp_path / "here"
    full.mkdir()
    here.mkdir()
    monkeypatch.chdir(here)
    real = store.tempfile.mkstemp

    def no_room(*args, dir=None, **kwargs):
        if Path(dir) == full:
            raise OSError(28, "No space left on device")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(store.tempfile, "mkstemp", no_room)
    path = store.write_recovery({"schema": "x"}, full / "r.db", "R1")
    assert path == here / "r.unsaved-R1.json" and json.loads(path.read_text()) == {"schema": "x"}
    assert list(full.iterdir()) == []
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(store.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    again = store.write_recovery({}, here / "r.db", "R1")  # an existing file is never replaced
    assert again == tmp_path / "tmp" / "r.unsaved-R1.json" and json.loads(path.read_text()) == {"schema": "x"}


def test_import_of_a_document_of_another_kind_names_what_it_takes(tmp_path):
    for doc in ({"schema": "surrobench/timeline-v1"}, {"results": []}):
        path = tmp_path / "other.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(surrobench.UsageError) as raised:
            surrobench.import_run(path, db=tmp_path / "r.db")
        assert "surrobench/serve-v2" in str(raised.value) and "surrobench/optimize-v3" in str(raised.value)
