"""The typer app every command module adds itself to (``@app.command()``); :func:`surrobench.cli.main` runs it."""

from __future__ import annotations

import typer
import typer.core

#: ``--help`` lists the commands in the order of the work: measure, look, compare, explain, calibrate, list;
#: commands not named here follow in the order they were added.
COMMAND_ORDER = (
    "run",
    "show",
    "history",
    "compare",
    "report",
    "profile",
    "analyze",
    "diagnose",
    "perf",
    "optimize",
    "calibrate",
    "models",
    "scenarios",
)


class _OrderedGroup(typer.core.TyperGroup):
    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: (rank.get(name, len(rank)), names.index(name)))


app = typer.Typer(
    cls=_OrderedGroup,
    name="surrobench",
    help="Benchmark, profile and diagnose the inference of physics surrogate models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
