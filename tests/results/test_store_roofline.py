"""A config's estimated roofline is stored with the run (schema 8: ``rooflines``) and read back whole; a database
of an older schema migrates forward and its configs have none; a row our records cannot read is one line."""

from __future__ import annotations

import json
import sqlite3

import pytest
from synthetic import config, latency_samples, run

from surrobench.analysis.roofline import OpCost, roofline
from surrobench.errors import UsageError
from surrobench.records.ceilings import Ceilings
from surrobench.records.ops import OpStat, OpTable
from surrobench.results.profiles import add_roofline, load_roofline
from surrobench.results.store import SCHEMA_VERSION, ResultStore

CEILINGS = Ceilings("Test CPU", 20.0, {"fp32": 0.2}, "2026-12-01T00:00:00+00:00", "matmul n=256")


def _roofline():
    costs = {
        "aten::addmm": OpCost("aten::addmm", 1, 2 * 64**3, 3 * 64 * 64 * 4, {"float32"}),
        "aten::relu": OpCost("aten::relu", 1, 64 * 64, 2 * 64 * 64 * 4, {"float32"}),
        "aten::copy_": OpCost("aten::copy_", 1, None, 2 * 64 * 64 * 4, {"float32"}, "no FLOP formula"),
    }
    table = OpTable(
        (
            OpStat("aten::addmm", "gemm/matmul/einsum", 1, 0.0, 0.0, 0.6, 60.0),
            OpStat("aten::relu", "elementwise/activation", 1, 0.0, 0.0, 0.3, 30.0),
            OpStat("aten::copy_", "copy/cast", 1, 0.0, 0.0, 0.1, 10.0),
        ),
        "cpu",
        100.0,
        1,
        "profiler",
    )
    return roofline(table, costs, CEILINGS, "fp32")


def _stored_config(store: ResultStore) -> int:
    record = run("20261201-000000-rrrr", [config(latency_samples(1.0, 0.01, n=20))])
    store.begin_run(record)
    return store.add_result(record.run_id, record.results[0])


def test_the_roofline_round_trips_through_sqlite(tmp_path):
    db, report = tmp_path / "r.db", _roofline()
    with ResultStore(db) as store:
        config_id = _stored_config(store)
        add_roofline(store, config_id, report)
        add_roofline(store, config_id, report)  # diagnosed again: replaced, not doubled
        row = store.conn.execute("SELECT device_name, precision, ridge_flop_per_byte FROM rooflines").fetchall()
    assert row == [("Test CPU", "fp32", pytest.approx(10.0))]
    with ResultStore(db, read_only=True) as store:
        loaded = load_roofline(store, config_id)
    assert loaded == report
    bounds = {o.name: o.bound for o in loaded.ops}
    assert bounds == {"aten::addmm": "compute", "aten::relu": "memory", "aten::copy_": "memory"}
    assert loaded.ceilings == CEILINGS and loaded.ops[0].time_ms == pytest.approx(0.06)


def test_a_config_without_a_roofline_reads_none(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        assert load_roofline(store, _stored_config(store)) is None


def test_a_version_7_database_gains_the_roofline_table(tmp_path):
    db = tmp_path / "v7.db"
    with ResultStore(db) as store:
        config_id = _stored_config(store)
    conn = sqlite3.connect(db)
    conn.executescript("DROP TABLE rooflines; PRAGMA user_version = 7;")
    conn.close()
    with ResultStore(db) as store:
        assert load_roofline(store, config_id) is None
        add_roofline(store, config_id, _roofline())
        assert load_roofline(store, config_id) == _roofline()
        assert [r.run_id for r in store.list_runs()] == ["20261201-000000-rrrr"]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 8
    conn.close()


def test_a_database_newer_than_this_code_is_refused_untouched(tmp_path):
    db = tmp_path / "v9.db"
    with ResultStore(db) as store:
        _stored_config(store)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
        ResultStore(db)


def test_a_roofline_row_our_records_cannot_read_is_one_usage_error(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        config_id = _stored_config(store)
        doc = _roofline().to_json()
        del doc["ceilings"]  # as the diagnosis JSON's roofline would be without it: too little to read back
        store.conn.execute("INSERT INTO rooflines VALUES (?, 'x', 'fp32', 1.0, ?)", (config_id, json.dumps(doc)))
        with pytest.raises(UsageError, match=f"the roofline of config {config_id} holds a row"):
            load_roofline(store, config_id)


def test_a_version_8_database_keeps_its_op_tables_and_gains_where_each_op_ran(tmp_path):
    """Migration 9: an op table stored before ``inside`` reads back with none; one stored after keeps it."""
    from surrobench.results.profiles import add_op_table, load_op_table

    db = tmp_path / "v8.db"
    table = OpTable(
        (OpStat("aten::copy_", "copy/cast/contiguous", 4, 0.0, 0.0, 1.0, 8.0, inside=(("aten::einsum", 0.9),)),),
        "cpu",
        8.0,
        1,
        "profiler",
    )
    with ResultStore(db) as store:
        config_id = _stored_config(store)
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE old AS SELECT * FROM op_stats; DROP TABLE op_stats;"
        "CREATE TABLE op_stats (config_id INTEGER NOT NULL, rank INTEGER NOT NULL, name TEXT NOT NULL,"
        " category TEXT NOT NULL, calls INTEGER NOT NULL, self_device_us REAL NOT NULL, total_device_us REAL NOT NULL,"
        " share REAL NOT NULL, self_cpu_us REAL NOT NULL, device_mem_bytes INTEGER NOT NULL,"
        " self_device_mem_bytes INTEGER NOT NULL, input_shapes_json TEXT NOT NULL, PRIMARY KEY (config_id, rank));"
        f"INSERT INTO op_profiles (config_id, basis, source, total_us, active_steps, has_shapes, has_memory)"
        f" VALUES ({config_id}, 'cpu', 'profiler', 8.0, 1, 0, 0);"
        f"INSERT INTO op_stats VALUES ({config_id}, 0, 'aten::copy_', 'copy/cast/contiguous', 4, 0, 0, 1.0, 8.0, 0, 0,"
        " '[]'); DROP TABLE old; PRAGMA user_version = 8;"
    )
    conn.close()
    with ResultStore(db) as store:
        assert load_op_table(store, config_id).ops[0].inside == ()
        add_op_table(store, config_id, table)
        assert load_op_table(store, config_id).ops == table.ops
