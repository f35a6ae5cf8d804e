"""The list of stored runs (``surrobench history``) for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.results.store import RunSummary

# run ids and times are copied from here: never cut (report.fit); the device name goes first
_COLUMNS = (
    Col("run id", keep=True),
    Col("created", keep=True),
    Col("state", keep=True, minor=1),
    Col("tag"),
    Col("device", minor=2),
    Col("models"),
    Col("configs", "right", keep=True),
    Col("failed", "right", keep=True),
)


def history_table(runs: Iterable[RunSummary], title: str, width: int | None = None) -> Table:
    """One row per stored run, newest first as given: id, creation time (to the minute, UTC), state, tag,
    device, models, config and failed-config counts; fitted to ``width`` cells. ``title`` is markup."""
    rows = [
        [
            rich_escape(cell)
            for cell in (
                r.run_id,
                r.created[:16].replace("T", " "),
                r.state,
                r.tag or "-",
                r.device_name or "-",
                ", ".join(r.models),
                str(r.n_configs),
                str(r.n_failed),
            )
        ]
        for r in runs
    ]
    return fit_table(list(_COLUMNS), rows, width, title=title)
