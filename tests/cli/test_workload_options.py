"""The shared workload options: declared once (:class:`surrobench.cli.options.WorkloadOptions`), the same
names, defaults and help in every command that takes a workload, and handed to the command as one object."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from surrobench.cli import _register
from surrobench.cli.app import app
from surrobench.cli.options import SWEEP_ONLY, WORKLOAD_FIELDS, WorkloadOptions, workload_options

#: Each command that takes a workload, and the shared options it leaves out.
OMITTED = {
    "run": (),
    "profile": SWEEP_ONLY,
    "perf": SWEEP_ONLY,
    "diagnose": SWEEP_ONLY,
    "optimize": ("rounds", "trust_pickle"),
}


@pytest.fixture(scope="module")
def commands():
    _register()
    return get_command(app).commands


@pytest.mark.parametrize("name", sorted(OMITTED))
def test_every_workload_command_exposes_the_shared_options_as_declared(commands, name):
    params = {p.name: p for p in commands[name].params}
    for f in fields(WorkloadOptions):
        option = f.metadata["option"]
        if f.name in OMITTED[name]:
            # absent, or a command's own option of that name (optimize's --rounds: rounds of a measurement)
            assert f.name not in params or params[f.name].help != option.help, (name, f.name)
            continue
        param = params[f.name]
        declared = [d for d in option.param_decls if "/" not in d]
        flags = [s for d in option.param_decls if "/" in d for s in d.split("/")]
        assert sorted(param.opts + param.secondary_opts) == sorted(declared + flags), (name, f.name)
        assert param.default == option.default == f.default, (name, f.name)
        assert param.help == option.help, (name, f.name)


def test_the_field_defaults_are_the_cli_defaults():
    workload = WorkloadOptions()
    assert (workload.model, workload.batch, workload.iters, workload.cudnn_benchmark) == ("fno2d", "1,4", 60, False)
    assert set(WORKLOAD_FIELDS) == {f.name for f in fields(WorkloadOptions)}


def _demo_app(seen: list) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @workload_options(omit=("threads",))
    def go(
        target: Path = typer.Argument(..., help="A positional argument before the shared options."),
        *,
        workload: WorkloadOptions,
        db: Path = typer.Option(Path("x.db"), "--db"),
    ) -> None:
        """Record what the command was given."""
        seen.append((target, workload, db))

    @demo.command()
    def other() -> None:  # a second command, so ``go`` is a subcommand as in surrobench
        pass

    return demo


def test_the_command_gets_one_frozen_workload_object_and_keeps_its_own_parameters():
    seen: list = []
    result = CliRunner().invoke(
        _demo_app(seen),
        ["go", "t.json", "--model", "unet2d", "--batch", "2", "--iters", "7", "--channels-last", "--db", "y.db"],
    )
    assert result.exit_code == 0, result.output
    [(target, workload, db)] = seen
    assert (target, db) == (Path("t.json"), Path("y.db"))
    assert (workload.model, workload.batch, workload.iters, workload.channels_last) == ("unet2d", "2", 7, True)
    assert workload.threads is None and workload.shape == "64"  # omitted: its default; not given: the CLI's
    with pytest.raises(AttributeError):
        workload.model = "fno2d"  # frozen


def test_an_omitted_option_is_not_offered():
    result = CliRunner().invoke(_demo_app([]), ["go", "t.json", "--threads", "2"])
    assert result.exit_code == 2 and "--threads" in result.output


def test_the_decorator_refuses_unknown_fields_and_a_command_without_workload():
    with pytest.raises(TypeError, match="no such option"):
        workload_options(omit=("nosuch",))

    def bare(db: Path = Path("x.db")) -> None:
        pass

    with pytest.raises(TypeError, match="workload"):
        workload_options()(bare)


def test_boolean_flags_show_no_type_in_help(commands):
    for name in OMITTED:
        flags = [p for p in commands[name].params if getattr(p, "is_flag", False) and p.name != "help"]
        assert flags, name
        for param in flags:
            assert param.metavar == "", (name, param.name)
