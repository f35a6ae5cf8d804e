"""A config's Nsight Compute counters in the results database (schema 6: ``ncu_captures``, ``ncu_kernels``).

One ``ncu_captures`` row per measured config (what the replay cost, or the problem that stopped it), one
``ncu_kernels`` row per launch with its verdict in columns, for queries, and the whole
:class:`~surrobench.records.counters.MeasuredKernel` as JSON, for reading it back.
"""

from __future__ import annotations

import json

from surrobench.records.counters import ConfigCounters, CounterProblem, MeasuredKernel
from surrobench.results.store import ResultStore, named


def add_counters(store: ResultStore, config_id: int, counters: ConfigCounters) -> None:
    """Store (or replace) the counters of the config ``config_id``."""
    p, c = counters.problem, counters
    head = (config_id, len(c.kernels), c.passes, c.ncu_wall_s, c.covered_share, json.dumps(list(c.selected)))
    head += (json.dumps(list(c.command)), p.kind if p else None, p.message if p else None)
    with store._writing():
        store.conn.execute("INSERT OR REPLACE INTO ncu_captures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", head)
        store.conn.execute("DELETE FROM ncu_kernels WHERE config_id = ?", (config_id,))
        store.conn.executemany(
            "INSERT INTO ncu_kernels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (config_id, i, k.counters.name, k.kernel_class, k.op, k.module, k.bound, k.limiter, k.cause)
                + (k.counters.duration_ns, k.counters.dram_bytes, k.counters.flops(), json.dumps(k.to_json()))
                for i, k in enumerate(c.kernels)
            ],
        )


def load_counters(store: ResultStore, config_id: int) -> ConfigCounters | None:
    """The stored counters of a config, None when it was not measured with ``--counters``."""
    head = store.conn.execute(
        "SELECT passes, ncu_wall_s, covered_share, selected_json, command_json, problem_kind, problem_message"
        " FROM ncu_captures WHERE config_id = ?",
        (config_id,),
    ).fetchone()
    if head is None:
        return None
    passes, wall_s, covered, selected, command, kind, message = head
    rows = named(store.conn, "SELECT measured_json FROM ncu_kernels WHERE config_id = ? ORDER BY launch", (config_id,))
    return ConfigCounters(
        kernels=tuple(MeasuredKernel.from_json(json.loads(r["measured_json"])) for r in rows),
        selected=tuple(json.loads(selected)),
        covered_share=covered,
        passes=passes,
        ncu_wall_s=wall_s,
        command=tuple(json.loads(command)),
        problem=CounterProblem(kind, message) if kind else None,
    )
