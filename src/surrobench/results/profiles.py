"""A profiled config's op table and kernel table in the results database (``op_profiles``/``op_stats``, schema 1;
``kernel_profiles``/``kernel_stats``, schema 5): what ``profile`` and ``diagnose`` measured, read back by
``diagnose --run``, ``show`` and ``report``. One row per op or kernel, in the table's order.

Its Nsight Compute counters (schema 6: one ``ncu_captures`` row per config, one ``ncu_kernels`` row per launch, its
verdict in columns and the whole :class:`~surrobench.records.counters.MeasuredKernel` as JSON) and its estimated
roofline (schema 8: one ``rooflines`` row, the whole :class:`~surrobench.analysis.roofline.RooflineReport` as JSON
beside its device name, precision and ridge point): why so, docs/design.md, "estimated roofline, stored".
"""

from __future__ import annotations

import json

from surrobench.analysis.roofline import RooflineReport
from surrobench.records.counters import ConfigCounters, CounterProblem, MeasuredKernel
from surrobench.records.kernels import AttributionNote, KernelStat, KernelTable
from surrobench.records.ops import OpStat, OpTable
from surrobench.results.store import ResultStore, named

#: The columns of ``op_profiles`` (after ``config_id``) and ``op_stats`` (after ``config_id, rank``) that are
#: :class:`OpTable` and :class:`OpStat` fields; ``kernel_stats``'s are :class:`KernelStat`'s.
_OP_TABLE = ("basis", "source", "total_us", "active_steps", "kernel_count", "small_kernel_count", "small_kernel_us")
_OP_TABLE_FLAGS = ("has_shapes", "has_memory")
_OP = ("name", "category", "calls", "self_device_us", "total_device_us", "share", "self_cpu_us")
_OP_MEMORY = ("device_mem_bytes", "self_device_mem_bytes")
_KERNEL = ("name", "kernel_class", "calls", "device_us", "share", "op", "module", "origin", "fused_ops")


def _values(record: object, columns: tuple[str, ...]) -> tuple:
    return tuple(getattr(record, c) for c in columns)


def _stored(store: ResultStore, config_id: int, head: str, rows: str, order: str = "rank") -> tuple | None:
    """The ``head`` row of a config's table (``SELECT ... WHERE config_id = ?``) and its ``rows`` (the same, by
    the ``order`` column), or None when the config has no such table."""
    found = named(store.conn, head + " WHERE config_id = ?", (config_id,)).fetchone()
    if found is None:
        return None
    return found, named(store.conn, f"{rows} WHERE config_id = ? ORDER BY {order}", (config_id,)).fetchall()


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
    summary = (*_values(table, _OP_TABLE + _OP_TABLE_FLAGS), profiled_step_ms, overhead, trace_path)
    rows = [
        (rank, *_values(op, _OP + _OP_MEMORY), json.dumps(list(op.input_shapes)))
        + (json.dumps([list(pair) for pair in op.inside]),)
        for rank, op in enumerate(table.ops)
    ]
    store.replace("op_profiles", (config_id, *summary), "op_stats", rows)


def load_op_table(store: ResultStore, config_id: int) -> OpTable | None:
    """The stored op table of a config, or None when it was not profiled."""
    stored = _stored(
        store,
        config_id,
        f"SELECT {', '.join(_OP_TABLE + _OP_TABLE_FLAGS)} FROM op_profiles",
        f"SELECT {', '.join(_OP + _OP_MEMORY)}, input_shapes_json, inside_json FROM op_stats",
    )
    if stored is None:
        return None
    head, rows = stored
    ops = tuple(
        OpStat(
            **{k: row[k] for k in _OP + _OP_MEMORY},
            input_shapes=tuple(json.loads(row["input_shapes_json"])),
            inside=tuple((str(op), float(share)) for op, share in json.loads(row["inside_json"])),
        )
        for row in rows
    )
    return OpTable(ops, **{k: head[k] for k in _OP_TABLE}, **{k: bool(head[k]) for k in _OP_TABLE_FLAGS})


def add_kernel_table(store: ResultStore, config_id: int, table: KernelTable) -> None:
    """Store a profiled config's kernel table (rows in the table's order, notes as JSON objects)."""
    notes = json.dumps([n.to_json() for n in table.notes])
    head = (config_id, table.total_us, table.active_steps, table.source, notes)
    rows = [(rank, *_values(k, _KERNEL)) for rank, k in enumerate(table.kernels)]
    store.replace("kernel_profiles", head, "kernel_stats", rows)


def load_kernel_table(store: ResultStore, config_id: int) -> KernelTable | None:
    """The stored kernel table of a config, or None (not profiled on a GPU, or stored before schema 5).

    Raises:
        UsageError: a row our records refuse (a kernel class or note kind outside the vocabulary).
    """
    head = "SELECT total_us, active_steps, source, notes_json FROM kernel_profiles"
    stored = _stored(store, config_id, head, f"SELECT {', '.join(_KERNEL)} FROM kernel_stats")
    if stored is None:
        return None
    head, rows = stored
    with store._reading(f"the kernel table of config {config_id}"):
        notes = tuple(AttributionNote(**n) for n in json.loads(head["notes_json"]))
        kernels = tuple(KernelStat(**dict(row)) for row in rows)
        return KernelTable(kernels, head["total_us"], head["active_steps"], head["source"], notes)


def op_profile_step(store: ResultStore, config_id: int) -> tuple[float | None, str | None]:
    """The profiled step recorded with a config's op table, ms: the mean of the recorded steps
    (:attr:`surrobench.api.profile.ProfileReport.profiled_step_ms`; a database written before that holds the median),
    and the trace file; each None where not recorded."""
    sql = "SELECT profiled_step_ms, trace_path FROM op_profiles WHERE config_id = ?"
    row = named(store.conn, sql, (config_id,)).fetchone()
    return (row["profiled_step_ms"], row["trace_path"]) if row else (None, None)


def add_counters(store: ResultStore, config_id: int, counters: ConfigCounters) -> None:
    """Store (or replace) the counters of the config ``config_id``."""
    p, c = counters.problem, counters
    head = (config_id, len(c.kernels), c.passes, c.ncu_wall_s, c.covered_share, json.dumps(list(c.selected)))
    head += (json.dumps(list(c.command)), p.kind if p else None, p.message if p else None)
    rows = [
        (i, k.counters.name, k.kernel_class, k.op, k.module, k.bound, k.limiter, k.cause, k.counters.duration_ns)
        + (k.counters.dram_bytes, k.counters.flops(), json.dumps(k.to_json()))
        for i, k in enumerate(c.kernels)
    ]
    store.replace("ncu_captures", head, "ncu_kernels", rows)


def load_counters(store: ResultStore, config_id: int) -> ConfigCounters | None:
    """The stored counters of a config, None when it was not measured with ``--counters``."""
    head = "SELECT passes, ncu_wall_s, covered_share, selected_json, command_json, problem_kind, problem_message"
    stored = _stored(store, config_id, head + " FROM ncu_captures", "SELECT measured_json FROM ncu_kernels", "launch")
    if stored is None:
        return None
    (passes, wall_s, covered, selected, command, kind, message), rows = stored
    return ConfigCounters(
        kernels=tuple(MeasuredKernel.from_json(json.loads(r["measured_json"])) for r in rows),
        selected=tuple(json.loads(selected)),
        covered_share=covered,
        passes=passes,
        ncu_wall_s=wall_s,
        command=tuple(json.loads(command)),
        problem=CounterProblem(kind, message) if kind else None,
    )


def add_roofline(store: ResultStore, config_id: int, roofline: RooflineReport) -> None:
    """Store (or replace) the estimated roofline of the config ``config_id``."""
    row = (config_id, roofline.ceilings.device_name, roofline.precision, roofline.ridge_flop_per_byte)
    store.replace("rooflines", (*row, json.dumps(roofline.to_json())))


def load_roofline(store: ResultStore, config_id: int) -> RooflineReport | None:
    """The stored estimated roofline of a config; None when none was stored (a run profiled but not
    diagnosed, a device without calibrated ceilings, or a run stored before schema 8).

    Raises:
        UsageError: a row our records cannot read.
    """
    row = named(store.conn, "SELECT roofline_json FROM rooflines WHERE config_id = ?", (config_id,)).fetchone()
    if row is None:
        return None
    with store._reading(f"the roofline of config {config_id}"):
        return RooflineReport.from_json(json.loads(row["roofline_json"]))
