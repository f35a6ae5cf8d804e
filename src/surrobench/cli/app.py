"""The typer app every command module adds itself to (``@app.command()``); :func:`surrobench.cli.main` runs it."""

from __future__ import annotations

import inspect

import typer
import typer.core
import typer.rich_utils

#: ``--help`` lists the commands in the order of the work; commands not named here follow as added.
COMMAND_ORDER = tuple(
    "run show history import compare report profile analyze diagnose perf optimize calibrate models scenarios".split()
)


class _FlagHelp:
    """``--help`` in ``--help`` as the flag it is, with no ``<bool>`` (as :func:`surrobench.cli.options.flag`)."""

    def get_help_option(self, ctx):
        option = super().get_help_option(ctx)
        if option is not None:
            option.metavar = ""
        return option


class _Command(_FlagHelp, typer.core.TyperCommand):
    pass


class _OrderedGroup(_FlagHelp, typer.core.TyperGroup):
    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: (rank.get(name, len(rank)), names.index(name)))


class _CheckedApp(typer.Typer):
    """The app: each command it registers is :func:`surrobench.cli.options.checked_command` (with ``markdown``)."""

    def command(self, *args, markdown=None, **kwargs):
        register = super().command(*args, **{"cls": _Command, **kwargs})

        def decorate(command):
            from surrobench.cli.options import checked_command  # with the commands: `--version` needs none

            register(checked_command(command, markdown))
            return command

        return decorate


app = _CheckedApp(
    cls=_OrderedGroup,
    name="surrobench",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def flow_help() -> None:
    """Give each registered command without ``help`` its docstring, the breaks inside a paragraph removed, so
    ``--help`` wraps it to the terminal (typer keeps a docstring's breaks after the first paragraph)."""
    for info in app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            paragraphs = inspect.cleandoc(info.callback.__doc__).split("\n\n")
            info.help = "\n\n".join(" ".join(p.split()) for p in paragraphs)


def fold_option_help() -> None:
    """Wrap an option's help at 80 columns instead of cutting a word wider than typer's column (``torch.backends.
    cudnn.benchmark``) into "…": rich's ``fold`` overflow on what ``rich_utils._get_parameter_help`` builds (typer
    0.12 to 0.29; without that function the help stays as typer draws it)."""
    build = getattr(typer.rich_utils, "_get_parameter_help", None)
    if build is None or getattr(build, "folds", False):
        return

    def folded(*args, **kwargs):
        columns = build(*args, **kwargs)
        for item in getattr(columns, "renderables", ()):
            if hasattr(item, "overflow"):
                item.overflow = "fold"
        return columns

    folded.folds = True
    typer.rich_utils._get_parameter_help = folded
