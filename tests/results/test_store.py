import contextlib
import json
import os
import shutil
import subprocess

import pytest
from conftest import run_cli

from surrobench.errors import UsageError
from surrobench.records.run import RESULT_KEYS_V3, ConfigResult, RunRecord, run_from_json
from surrobench.records.schemas import RUN as SCHEMA
from surrobench.records.stats import LatencyStats
from surrobench.results.store import ResultStore

DESIGN_RUN_KEYS = {"schema", "run_id", "created", "tag", "env", "results", "scaling"}
DESIGN_STAT_KEYS = {"median", "p95", "p99", "mean", "std", "min", "max", "iqr", "ci95_median"}


def _result(batch=1, status="ok", device=True):
    samples = (1.0, 1.2, 1.1, 0.9)
    return ConfigResult(
        model="fno2d",
        shape_label="64",
        input_shape=(batch, 3, 64, 64),
        batch=batch,
        precision="fp32",
        device="cuda" if device else "cpu",
        mode="eager",
        status=status,
        error=None if status == "ok" else "boom",
        warmup=10,
        iters=4,
        cold_start_ms=30.0,
        latency_ms=LatencyStats.from_samples(samples) if status == "ok" else None,
        device_ms=LatencyStats.from_samples([0.5] * 4) if status == "ok" and device else None,
        samples_per_s=900.0,
        points_per_s=900.0 * 4096,
        peak_mem_bytes=1 << 20,
        peak_reserved_bytes=2 << 20,
        samples_ms=samples if status == "ok" else (),
        device_samples_ms=(0.5,) * 4 if status == "ok" and device else (),
        extra={"sm_clock_mhz": 1980},
    )


def _run(results=()):
    return RunRecord("20261130-120000-abcd", "2026-11-30T12:00:00+00:00", "t", {"device_name": "H200"}, tuple(results))


def test_round_trip_through_sqlite(tmp_path):
    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        run = _run()
        store.begin_run(run, "surrobench run")
        ids = [store.add_result(run.run_id, r) for r in (_result(1), _result(2, status="oom"))]
        store.set_top_op(ids[0], {"name": "aten::_fft_r2c", "share": 0.4})
    with ResultStore(db) as store:  # reopened: everything was committed
        loaded = store.load_run("20261130")
    assert loaded.results[0].top_op == {"name": "aten::_fft_r2c", "share": 0.4}
    assert loaded.results[0].latency_ms == _result(1).latency_ms
    assert loaded.results[0].samples_ms == _result(1).samples_ms
    assert loaded.results[0].device_samples_ms == (0.5,) * 4
    assert loaded.results[1].status == "oom" and loaded.results[1].latency_ms is None
    assert loaded.results[0].extra == {"sm_clock_mhz": 1980}


def test_history_filters(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(_run())
        store.add_result("20261130-120000-abcd", _result(1))
        store.add_result("20261130-120000-abcd", _result(2, status="error"))
        store.begin_run(RunRecord("20261201-0900-ffff", "2026-12-01T09:00:00+00:00", None, {}))
        runs = store.list_runs()
        assert [r.run_id for r in runs] == ["20261201-0900-ffff", "20261130-120000-abcd"]
        assert runs[1].n_configs == 2 and runs[1].n_failed == 1 and runs[1].models == ("fno2d",)
        assert [r.run_id for r in store.list_runs(model="fno2d")] == ["20261130-120000-abcd"]
        assert [r.run_id for r in store.list_runs(tag="t")] == ["20261130-120000-abcd"]
        assert [r.run_id for r in store.list_runs(since="2026-12")] == ["20261201-0900-ffff"]


def test_history_counts_a_config_cut_by_ctrl_c_as_interrupted_not_failed(tmp_path):
    """A fresh-user trial: a run cut by Ctrl-C whose config kept 1807 timed calls (``interrupted``) read "1 config,
    1 failed" in ``surrobench history``."""
    from dataclasses import replace

    from surrobench.report.history import contents

    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(_run())
        store.add_result("20261130-120000-abcd", _result(1, status="interrupted"))
        store.add_result("20261130-120000-abcd", _result(2, status="error"))
        (summary,) = store.list_runs()
    assert (summary.n_configs, summary.n_failed, summary.n_interrupted) == (2, 1, 1)
    assert contents(summary) == "2 configs, 1 failed, 1 interrupted"
    assert contents(replace(summary, n_configs=1, n_failed=0)) == "1 config, 1 interrupted"


def test_unknown_or_ambiguous_run_id(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(_run())
        store.begin_run(RunRecord("20261130-130000-0000", "x", None, {}))
        with pytest.raises(UsageError, match="2 runs"):
            store.load_run("2026")
        with pytest.raises(UsageError, match="no run"):
            store.load_run("1999")


def test_an_empty_run_id_is_refused_even_with_one_run_stored(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(_run())  # '' is a prefix of it: it would be picked silently
        for empty in ("", "  "):
            with pytest.raises(UsageError, match="is empty"):
                store.load_run(empty)


def test_not_a_database(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_text("this is not sqlite" * 100)
    with pytest.raises(UsageError, match="bad.db"):
        ResultStore(bad)


def test_a_database_damaged_inside_is_refused_when_opened(tmp_path):
    """A page overwritten in the middle of a valid database: refused at open, for a writer (before it measures)
    and a reader alike, naming the file; the header still reads, so only SQLite's check finds it."""
    db = tmp_path / "d.db"
    with ResultStore(db) as store:
        run = _run()
        store.begin_run(run, "surrobench run")
        store.add_result(run.run_id, _result(1))
    page = 4096  # SQLite's default page size; page 3 holds a table of ours
    assert db.stat().st_size > 4 * page
    with open(db, "r+b") as f:
        f.seek(2 * page)
        f.write(b"\xff" * page)
    for read_only in (False, True):
        with pytest.raises(UsageError, match="is damaged") as raised:
            ResultStore(db, read_only=read_only)
        assert str(db) in str(raised.value)


def test_run_json_has_exactly_the_design_keys():
    doc = _run([_result(2), _result(1, status="error", device=False)]).to_json()
    assert set(doc) == DESIGN_RUN_KEYS and doc["schema"] == SCHEMA
    for entry in doc["results"]:
        assert tuple(entry) == RESULT_KEYS_V3
        assert set(entry["throughput"]) == {"samples_per_s", "points_per_s"}
    assert set(doc["results"][0]["latency_ms"]) == DESIGN_STAT_KEYS
    assert doc["results"][0]["input_shape"] == [2, 3, 64, 64]
    assert doc["results"][1]["device_ms"] is None
    json.dumps(doc)  # serializable as is


def test_run_json_round_trip():
    run = _run([_result(2)])
    back = run_from_json(json.loads(json.dumps(run.to_json())))
    assert back.results[0].latency_ms == run.results[0].latency_ms
    assert back.results[0].key() == run.results[0].key()
    with pytest.raises(ValueError, match="run-v5"):
        run_from_json({"schema": "other"})


@contextlib.contextmanager
def _unwritable(path):
    """``path`` made unwritable: mode 0444, and for root (whom modes do not stop) the immutable attribute
    where ``chattr`` can set it; skips the test when neither takes effect."""
    path.chmod(0o444)
    immutable = False
    if os.access(path, os.W_OK) and shutil.which("chattr"):
        immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    try:
        if os.access(path, os.W_OK):
            pytest.skip("neither chmod nor chattr makes the file unwritable for this user")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


def test_a_read_only_database_is_read_by_the_commands_that_only_read(tmp_path):
    from surrobench.api.compare import load_run
    from surrobench.api.report import build_report

    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        run = _run()
        store.begin_run(run, "surrobench run")
        store.add_result(run.run_id, _result(1))
    with _unwritable(db):
        with ResultStore(db, read_only=True) as store:
            assert [r.run_id for r in store.list_runs()] == [run.run_id]
        assert load_run(run.run_id, db).results[0].batch == 1  # show, compare
        assert build_report([run.run_id], db=db).runs[0].run_id == run.run_id  # report
        assert run_cli(["history", "--db", str(db)]) == 0  # history
        with pytest.raises(UsageError, match="read-only$"):  # a command that writes fails at once, in our words
            ResultStore(db)
