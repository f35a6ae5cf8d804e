"""``surrobench models``: list the reference surrogates with their papers, layouts and parameter counts."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from surrobench.cli.app import app
from surrobench.cli.options import check_writable, console, write_json
from surrobench.records import schemas
from surrobench.workload.zoo import all_surrogates, describe


def render_models(rows: list[dict[str, object]]) -> Table:
    """The rich table for :func:`surrobench.workload.zoo.describe` rows."""
    table = Table(title="surrobench reference surrogates")
    for header, justify in (
        ("name", "left"),
        ("paper", "left"),
        ("layout", "left"),
        ("parameters", "right"),
        ("point kind", "left"),
        ("typical N", "right"),
    ):
        table.add_column(header, justify=justify, no_wrap=header == "name")  # the name is what users type
    for row in rows:
        table.add_row(
            str(row["name"]),
            str(row["paper"]),
            str(row["layout"]),
            f"{row['parameters']:,}",
            str(row["point_kind"]),
            str(row["default_size"]),
        )
    return table


@app.command()
def models(
    json_path: Path | None = typer.Option(None, "--json", help="Also write the list as JSON to PATH."),
) -> None:
    """List the reference surrogates: paper, input layout, parameter count, point kind, default size."""
    check_writable(json_path, "--json")
    rows = [describe(s) for s in all_surrogates()]
    console.print(render_models(rows))
    write_json(json_path, {"schema": schemas.MODELS, "models": rows})
