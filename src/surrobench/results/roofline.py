"""A config's estimated roofline in the results database (schema 8: ``rooflines``).

``diagnose`` computes each profiled config's roofline once (:func:`surrobench.analysis.roofline.roofline`) and
stores it here, so a stored run (``diagnose --run``, ``report``) reads the estimated verdicts without the model
its FLOP count needs. One row per config: the whole :class:`~surrobench.analysis.roofline.RooflineReport` as JSON,
beside the columns a query would select by (device name, precision, ridge point in FLOP/byte).
"""

from __future__ import annotations

import json

from surrobench.analysis.roofline import RooflineReport
from surrobench.results.store import ResultStore, named


def add_roofline(store: ResultStore, config_id: int, roofline: RooflineReport) -> None:
    """Store (or replace) the estimated roofline of the config ``config_id``."""
    row = (config_id, roofline.ceilings.device_name, roofline.precision, roofline.ridge_flop_per_byte)
    with store._writing():
        store.conn.execute(
            "INSERT OR REPLACE INTO rooflines VALUES (?, ?, ?, ?, ?)", (*row, json.dumps(roofline.to_json()))
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
