"""The list of stored runs (``surrobench history``) for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.results.store import RunSummary

# run ids and times are copied from here: never cut (report.fit); the state is never dropped (a run left
# `running` or `interrupted` is what the list is read for); device, models and tag go first on a narrow terminal
_COLUMNS = (
    Col("run id", keep=True),
    Col("created", keep=True),
    Col("state", keep=True),
    Col("tag", minor=1),
    Col("device", minor=3),
    Col("models", minor=2),
    Col("configs", "right", keep=True),
)


def _configs(r: RunSummary) -> str:
    return f"{r.n_configs}, {r.n_failed} failed" if r.n_failed else str(r.n_configs)


def history_table(runs: Iterable[RunSummary], title: str, width: int | None = None) -> Table:
    """One row per stored run, newest first as given: id, creation time (to the minute, UTC), state, tag,
    device, models, and the config count (with the failed ones: ``12, 3 failed``); fitted to ``width`` cells
    (:func:`~surrobench.report.fit.fit_table`: device, models, then tag left out first and named in the
    caption; the state never). ``title`` is markup."""
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
                _configs(r),
            )
        ]
        for r in runs
    ]
    return fit_table(list(_COLUMNS), rows, width, title=title)
