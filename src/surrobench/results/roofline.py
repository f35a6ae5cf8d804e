"""A config's estimated roofline in the results database (schema 8: ``rooflines``).

``diagnose`` computes each profiled config's roofline once (:func:`surrobench.analysis.roofline.roofline`: the
op table's self times against the FLOPs and bytes of one forward under torch's FLOP counter, and the device's
calibrated ceilings) and stores it here, beside the config's op table, kernel table and counters, so a stored
run (``diagnose --run``, ``surrobench report``) reads the estimated verdicts of the run that measured them: the
FLOP count needs the model, which a stored run no longer has.

One row per config: the whole :class:`~surrobench.analysis.roofline.RooflineReport` as JSON
(:meth:`~surrobench.analysis.roofline.RooflineReport.to_json`, read back by ``from_json``), because it is read
back whole and nested (its ceilings, then one record per op with nullable FLOPs, intensity and rates); the
columns beside it (the ceilings' device name, the precision, the ridge point in FLOP/byte) are what a query
would select configs by. Units are the record's: times ms per step, FLOPs and bytes per step, TFLOP/s, GB/s.
"""

from __future__ import annotations

import json

from surrobench.analysis.roofline import RooflineReport
from surrobench.results.store import ResultStore, named


def add_roofline(store: ResultStore, config_id: int, roofline: RooflineReport) -> None:
    """Store (or replace) the estimated roofline of the config ``config_id``."""
    with store._writing():
        store.conn.execute(
            "INSERT OR REPLACE INTO rooflines VALUES (?, ?, ?, ?, ?)",
            (
                config_id,
                roofline.ceilings.device_name,
                roofline.precision,
                roofline.ridge_flop_per_byte,
                json.dumps(roofline.to_json()),
            ),
        )


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
