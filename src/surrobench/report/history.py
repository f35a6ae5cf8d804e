"""The list of stored runs (``surrobench history``) for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table

from surrobench.report.escape import rich_escape
from surrobench.report.fit import Col, fit_table
from surrobench.results.store import RunSummary

# ids and times never cut, the state never dropped; when narrow the tag goes first, then kind and device, the
# models (which model a run was) last
_COLUMNS = (Col("run id", keep=True), Col("created", keep=True), Col("state", keep=True), Col("kind", minor=4))
_COLUMNS += (Col("tag", minor=5), Col("device", minor=3), Col("models", minor=2), Col("contents", "right", keep=True))


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def contents(r: RunSummary) -> str:
    """What a run holds: ``12 configs, 3 failed``, ``2 configs, 1 interrupted``, ``2 policies, 6 loads``, ``2 configs
    optimized`` (each given a recipe; else ``2 configs searched, 1 recipe``, and when the search was cut short)."""
    recipes = _count(r.n_recipes, "recipe", "recipes")
    done = " optimized" if r.state == "complete" and r.n_recipes == r.n_configs else f" searched, {recipes}"
    held = _count(r.n_configs, "config", "configs") + (done if r.kind == "optimize" else "")
    if r.kind == "serve":
        held = f"{_count(r.n_policies, 'policy', 'policies')}, {_count(r.n_points, 'load', 'loads')}"
    cut = [f"{n} {word}" for n, word in ((r.n_failed, "failed"), (r.n_interrupted, "interrupted")) if n]
    return ", ".join([held, *cut])


def history_table(runs: Iterable[RunSummary], title: str, width: int | None = None) -> Table:
    """One row per stored run, fitted to ``width`` (tag, kind, device, models dropped first, in that order)."""
    cells = [
        (r.run_id, r.created[:16].replace("T", " "), r.state, r.kind, r.tag or "-", r.device_name or "-")
        + (", ".join(r.models) or "-", contents(r))
        for r in runs
    ]
    rows = [[rich_escape(cell) for cell in row] for row in cells]
    return fit_table(list(_COLUMNS), rows, width, title=title)
