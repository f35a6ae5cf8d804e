"""``surrobench models``: list the reference surrogates with their papers, layouts and parameter counts."""

from __future__ import annotations

from pathlib import Path


from surrobench.cli.app import app
from surrobench.cli.options import output_option, console, write_json
from surrobench.records import schemas
from surrobench.report.models import models_table


@app.command()
def models(json_path: Path | None = output_option(None, "--json", help="Also write the list as JSON to PATH.")) -> None:
    """List the reference surrogates: paper, input layout, parameter count, point kind, default size."""
    from surrobench.api.benchmark import models as zoo_models

    rows = zoo_models()
    console.print(models_table(rows, width=console.width))
    write_json(json_path, {"schema": schemas.MODELS, "models": rows})
