"""A profiled config's op table and kernel table in the results database (``op_profiles``/``op_stats``, schema 1;
``kernel_profiles``/``kernel_stats``, schema 5): what ``profile`` and ``diagnose`` measured, read back by
``diagnose --run``, ``show`` and ``report``. One row per op or kernel, in the table's order.
"""

from __future__ import annotations

import json

from surrobench.records.kernels import AttributionNote, KernelStat, KernelTable
from surrobench.records.ops import OpStat, OpTable, inside_from_json
from surrobench.results.store import ResultStore, named


def add_op_table(
    store: ResultStore,
    config_id: int,
    table: OpTable,
    *,
    profiled_step_ms: float | None = None,
    overhead: float | None = None,
    trace_path: str | None = None,
) -> None:
    """Store a profiled config's op table (rows in share order) with its profiling summary."""
    with store._writing():
        store.conn.execute(
            "INSERT OR REPLACE INTO op_profiles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                config_id,
                table.basis,
                table.source,
                table.total_us,
                table.active_steps,
                table.kernel_count,
                table.small_kernel_count,
                table.small_kernel_us,
                int(table.has_shapes),
                int(table.has_memory),
                profiled_step_ms,
                overhead,
                trace_path,
            ),
        )
        store.conn.execute("DELETE FROM op_stats WHERE config_id = ?", (config_id,))
        store.conn.executemany(
            "INSERT INTO op_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    config_id,
                    rank,
                    op.name,
                    op.category,
                    op.calls,
                    op.self_device_us,
                    op.total_device_us,
                    op.share,
                    op.self_cpu_us,
                    op.device_mem_bytes,
                    op.self_device_mem_bytes,
                    json.dumps(list(op.input_shapes)),
                    json.dumps([list(pair) for pair in op.inside]),
                )
                for rank, op in enumerate(table.ops)
            ],
        )


def load_op_table(store: ResultStore, config_id: int) -> OpTable | None:
    """The stored op table of a config, or None when it was not profiled."""
    head = named(
        store.conn,
        "SELECT basis, source, total_us, active_steps, kernel_count, small_kernel_count, small_kernel_us,"
        " has_shapes, has_memory FROM op_profiles WHERE config_id = ?",
        (config_id,),
    ).fetchone()
    if head is None:
        return None
    rows = named(
        store.conn,
        "SELECT name, category, calls, self_device_us, total_device_us, share, self_cpu_us, device_mem_bytes,"
        " self_device_mem_bytes, input_shapes_json, inside_json FROM op_stats WHERE config_id = ? ORDER BY rank",
        (config_id,),
    ).fetchall()
    ops = tuple(
        OpStat(
            **{k: row[k] for k in row.keys()[:9]},
            input_shapes=tuple(json.loads(row["input_shapes_json"])),
            inside=inside_from_json(json.loads(row["inside_json"])),
        )
        for row in rows
    )
    return OpTable(
        ops=ops,
        **{k: head[k] for k in head.keys()[:7]},
        has_shapes=bool(head["has_shapes"]),
        has_memory=bool(head["has_memory"]),
    )


def add_kernel_table(store: ResultStore, config_id: int, table: KernelTable) -> None:
    """Store a profiled config's kernel table (rows in the table's order, notes as JSON objects)."""
    notes = json.dumps([n.to_json() for n in table.notes])
    with store._writing():
        store.conn.execute(
            "INSERT OR REPLACE INTO kernel_profiles VALUES (?, ?, ?, ?, ?)",
            (config_id, table.total_us, table.active_steps, table.source, notes),
        )
        store.conn.execute("DELETE FROM kernel_stats WHERE config_id = ?", (config_id,))
        store.conn.executemany(
            "INSERT INTO kernel_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (config_id, rank, k.name, k.kernel_class, k.calls, k.device_us, k.share)
                + (k.op, k.module, k.origin, k.fused_ops)
                for rank, k in enumerate(table.kernels)
            ],
        )


def load_kernel_table(store: ResultStore, config_id: int) -> KernelTable | None:
    """The stored kernel table of a config, or None (not profiled on a GPU, or stored before schema 5).

    Raises:
        UsageError: a row our records refuse (a kernel class or note kind outside the vocabulary).
    """
    head = named(
        store.conn,
        "SELECT total_us, active_steps, source, notes_json FROM kernel_profiles WHERE config_id = ?",
        (config_id,),
    ).fetchone()
    if head is None:
        return None
    rows = named(
        store.conn,
        "SELECT name, kernel_class, calls, device_us, share, op, module, origin, fused_ops FROM kernel_stats"
        " WHERE config_id = ? ORDER BY rank",
        (config_id,),
    ).fetchall()
    with store._reading(f"the kernel table of config {config_id}"):
        notes = tuple(AttributionNote(**n) for n in json.loads(head["notes_json"]))
        kernels = tuple(KernelStat(**dict(row)) for row in rows)
        return KernelTable(kernels, head["total_us"], head["active_steps"], head["source"], notes)


def op_profile_step_ms(store: ResultStore, config_id: int) -> float | None:
    """The profiled step recorded with a config's op table, ms, or None: the mean of the recorded steps
    (:func:`surrobench.api.profile.profiled_step_ms`; a database written before that holds the median)."""
    row = named(store.conn, "SELECT profiled_step_ms FROM op_profiles WHERE config_id = ?", (config_id,)).fetchone()
    return row["profiled_step_ms"] if row else None


def op_profile_trace(store: ResultStore, config_id: int) -> str | None:
    """The trace file recorded with a config's op table, or None."""
    row = named(store.conn, "SELECT trace_path FROM op_profiles WHERE config_id = ?", (config_id,)).fetchone()
    return row["trace_path"] if row else None
