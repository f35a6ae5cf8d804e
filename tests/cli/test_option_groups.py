"""The shared option groups (:class:`surrobench.cli.options.WorkloadOptions`, ``TraceOptions``,
``SystemPassOptions``): each option declared once, the same names, defaults and help in every command that
takes the group, and handed to the command as one frozen object."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from surrobench.cli import _register
from surrobench.cli.app import app
from surrobench.cli.serve import ONE_CONFIG
from surrobench.cli.options import (
    SWEEP_ONLY,
    TORCH_TRACE_ONLY,
    SystemPassOptions,
    TraceOptions,
    WorkloadOptions,
    option_groups,
)

#: Each command that takes option groups: the groups, and the options it leaves out.
USES = {
    "run": ((WorkloadOptions, TraceOptions, SystemPassOptions), ()),
    "profile": ((WorkloadOptions, TraceOptions), SWEEP_ONLY),
    "perf": ((WorkloadOptions, SystemPassOptions), SWEEP_ONLY),
    "diagnose": ((WorkloadOptions, TraceOptions), (*SWEEP_ONLY, *TORCH_TRACE_ONLY)),
    "optimize": ((WorkloadOptions,), ("rounds", "trust_pickle", "timeout_s")),
    "serve": ((WorkloadOptions,), ("batch", "iters", "rounds", "timeout_s")),
}
#: A command's own help of a shared option: serve takes one model, shape, precision and mode, no list.
REWORDED = {"serve": ONE_CONFIG}


@pytest.fixture(scope="module")
def commands():
    _register()
    return get_command(app).commands


@pytest.mark.parametrize("name", sorted(USES))
def test_every_command_exposes_its_shared_options_as_declared(commands, name):
    groups, omitted = USES[name]
    params = {p.name: p for p in commands[name].params}
    for f in (f for group in groups for f in fields(group)):
        option = f.metadata["option"]
        if f.name in omitted:
            # absent, or a command's own option of that name (optimize's --rounds: rounds of a measurement)
            assert f.name not in params or params[f.name].help != option.help, (name, f.name)
            continue
        param = params[f.name]
        flags = [name for decl in option.param_decls for name in decl.split("/")]
        assert sorted(param.opts + param.secondary_opts) == sorted(flags), (name, f.name)
        assert param.default == option.default == f.default, (name, f.name)
        assert param.help == REWORDED.get(name, {}).get(f.name, option.help), (name, f.name)


def test_serve_words_the_workload_it_takes_one_of_as_one(commands):
    params = {p.name: p for p in commands["serve"].params}
    assert set(ONE_CONFIG) == {"model", "shape", "precision", "mode"}
    for name in ONE_CONFIG:  # not the sweep's "comma-separated" lists or shape ladder
        assert "comma-separated" not in params[name].help and "ladder" not in params[name].help.lower()


def test_the_field_defaults_are_the_cli_defaults():
    workload, tracing = WorkloadOptions(), TraceOptions()
    assert (workload.model, workload.batch, workload.iters, workload.cudnn_benchmark) == ("fno2d", "1,4", 60, False)
    assert (tracing.profile_active, tracing.trace_gzip, tracing.trace_out) == (5, True, Path("surrobench-traces"))


def _demo_app(seen: list) -> typer.Typer:
    demo = typer.Typer()

    @demo.command()
    @option_groups(omit=("threads", "cuda_memory_usage"))
    def go(
        target: Path = typer.Argument(..., help="A positional argument before the groups."),
        *,
        workload: WorkloadOptions,
        db: Path = typer.Option(Path("x.db"), "--db"),
        tracing: TraceOptions,
    ) -> None:
        """Record what the command was given."""
        seen.append((target, workload, db, tracing))

    @demo.command()
    def other() -> None:  # a second command, so ``go`` is a subcommand as in surrobench
        pass

    return demo


def test_the_command_gets_one_frozen_object_per_group_and_keeps_its_own_parameters():
    seen: list = []
    args = [
        "go",
        "t.json",
        "--model",
        "unet2d",
        "--batch",
        "2",
        "--channels-last",
        "--db",
        "y.db",
        "--profile-wait",
        "1",
    ]
    result = CliRunner().invoke(_demo_app(seen), args)
    assert result.exit_code == 0, result.output
    [(target, workload, db, tracing)] = seen
    assert (target, db) == (Path("t.json"), Path("y.db"))
    assert (workload.model, workload.batch, workload.channels_last) == ("unet2d", "2", True)
    assert workload.threads is None and workload.shape == "64"  # omitted: its default; not given: the CLI's
    assert (tracing.profile_wait, tracing.profile_active, tracing.cuda_memory_usage) == (1, 5, False)
    with pytest.raises(AttributeError):
        workload.model = "fno2d"  # frozen


def test_an_omitted_option_is_not_offered():
    for flag in ("--threads", "--cuda-memory-usage"):
        result = CliRunner().invoke(_demo_app([]), ["go", "t.json", flag, "2"])
        assert result.exit_code == 2 and flag in result.output


def test_the_decorator_refuses_unknown_fields_and_a_command_without_a_group():
    def bare(db: Path = Path("x.db")) -> None:
        pass

    def grouped(*, workload: WorkloadOptions) -> None:
        pass

    with pytest.raises(TypeError, match="no option group"):
        option_groups()(bare)
    with pytest.raises(TypeError, match="nosuch"):
        option_groups(omit=("nosuch",))(grouped)


def test_boolean_flags_show_no_type_in_help(commands):
    group = get_command(app)
    assert group.get_help_option(typer.Context(group)).metavar == ""
    for name, command in commands.items():
        flags = [p for p in command.params if getattr(p, "is_flag", False)]
        assert flags or name not in USES, name
        for param in (*flags, command.get_help_option(typer.Context(command))):  # --help too: no <bool>
            assert param.metavar == "", (name, param.name)
