"""A profiled config's kernel table is stored with its op table (schema 5) and read back whole; a database of
an older schema migrates forward and its configs have no kernel table."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

from synthetic import config, latency_samples, run

from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.api.diagnose import diagnose_stored
from surrobench.records.kernels import KernelRows
from surrobench.records.ops import OpTable
from surrobench.results.store import SCHEMA_VERSION, ResultStore
from surrobench.results.profiles import add_kernel_table, add_op_table, load_kernel_table

GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x64_16x6_nn_align4>"
FLASH = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false>>"


def _table():
    rows = KernelRows()
    fused = ["aten::view", "aten::_transformer_encoder_layer_fwd"]
    rows.add(GEMM, 30.0, fused, "encoder.layers.0", calls=2)
    rows.add(FLASH, 12.5, ["aten::_scaled_dot_product_flash_attention", "aten::scaled_dot_product_attention"], "attn")
    rows.add("triton_poi_fused_add_mul_0", 4.0, [], None, lost="graph_replay")
    rows.lost_modules("CUDA-graph replay")
    return rows.finish(active_steps=2, source="profiler")


def _stored_config(store: ResultStore) -> int:
    record = run("20261201-000000-kkkk", [config(latency_samples(1.0, 0.01, n=20))])
    store.begin_run(record)
    return store.add_result(record.run_id, record.results[0])


def test_the_kernel_table_round_trips_through_sqlite_with_its_notes(tmp_path):
    db = tmp_path / "r.db"
    table = _table()
    with ResultStore(db) as store:
        config_id = _stored_config(store)
        add_kernel_table(store, config_id, table)
        add_kernel_table(store, config_id, table)  # profiled again: replaced, not doubled
    with ResultStore(db, read_only=True) as store:
        loaded = load_kernel_table(store, config_id)
    assert loaded == table
    assert [k.origin for k in loaded.kernels] == ["recredited", "launch", "graph_replay"]
    assert {n.kind for n in loaded.notes} >= {"metadata_op_recredited", "graph_replay_unmapped", "module_path_lost"}
    assert loaded.class_shares()["gemm"] == table.class_shares()["gemm"]


def test_a_config_without_a_kernel_table_reads_none(tmp_path):
    with ResultStore(tmp_path / "r.db") as store:
        assert load_kernel_table(store, _stored_config(store)) is None


def test_a_version_2_database_gains_the_kernel_tables(tmp_path):
    db = tmp_path / "v2.db"
    with ResultStore(db) as store:
        config_id = _stored_config(store)
    conn = sqlite3.connect(db)
    conn.executescript("DROP TABLE kernel_stats; DROP TABLE kernel_profiles; PRAGMA user_version = 2;")
    conn.close()
    with ResultStore(db) as store:
        assert load_kernel_table(store, config_id) is None
        add_kernel_table(store, config_id, _table())
        assert load_kernel_table(store, config_id) == _table()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 5
    conn.close()


def test_a_stored_run_is_diagnosed_from_its_stored_kernel_classes(tmp_path):
    fixture = json.loads((Path(__file__).parents[1] / "fixtures" / "op_table_transformer_fp32_h200.json").read_text())
    op_table = OpTable.from_json(fixture["op_table"])
    result = dataclasses.replace(config([fixture["unprofiled_ms"]] * 20), device="cuda")
    record = run("20261201-000000-dddd", [result])
    rows = KernelRows()  # every kernel a GEMM: the op categories would also count attention
    rows.add(GEMM, op_table.total_us, ["aten::_transformer_encoder_layer_fwd"], "encoder.layers.0")
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(record)
        config_id = store.add_result(record.run_id, result)
        add_op_table(store, config_id, op_table)
        add_kernel_table(store, config_id, rows.finish(active_steps=op_table.active_steps, source="profiler"))
        _, findings, _, _ = diagnose_stored(record.run_id, store, DEFAULT_THRESHOLDS)
    (finding,) = [f for f in findings if f.kind == "matmul_precision"]
    assert [e.value for e in finding.evidence] == [1.0]
