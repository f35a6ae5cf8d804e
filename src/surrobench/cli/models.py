"""``surrobench models``: list the reference surrogates with their papers, layouts and parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from surrobench.cli import app
from surrobench.cli.options import console
from surrobench.errors import UsageError
from surrobench.workload.zoo import all_surrogates, describe

MODELS_SCHEMA = "surrobench/models-v1"


def render_models(rows: list[dict[str, object]]) -> Table:
    """The rich table for :func:`surrobench.workload.zoo.describe` rows."""
    table = Table(title="surrobench reference surrogates")
    for header, justify in (("name", "left"), ("paper", "left"), ("layout", "left"), ("parameters", "right"),
                            ("point kind", "left"), ("typical N", "right")):
        table.add_column(header, justify=justify, no_wrap=header == "name")  # the name is what users type
    for row in rows:
        table.add_row(str(row["name"]), str(row["paper"]), str(row["layout"]), f"{row['parameters']:,}",
                      str(row["point_kind"]), str(row["default_size"]))
    return table


@app.command()
def models(
    json_path: Path | None = typer.Option(None, "--json", help="Also write the list as JSON to PATH."),
) -> None:
    """List the reference surrogates: paper, input layout, parameter count, point kind, default size."""
    rows = [describe(s) for s in all_surrogates()]
    console.print(render_models(rows))
    if json_path is not None:
        try:
            json_path.write_text(json.dumps({"schema": MODELS_SCHEMA, "models": rows}, indent=2) + "\n")
        except OSError as exc:
            raise UsageError(f"--json {json_path}: cannot write: {exc.strerror or exc}") from exc
