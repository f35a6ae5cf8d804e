"""Every integer option is bounded (one bound, ``MAX_COUNT``), and a file option that is not text is one line."""

from __future__ import annotations

import inspect
import typing

import pytest
from conftest import run_cli
from typer.models import OptionInfo

from surrobench.analysis.thresholds import load_thresholds
from surrobench.api.benchmark import benchmark
from surrobench.cli.options import AtMost
from surrobench.errors import UsageError
from surrobench.execution.config import MAX_COUNT


def _int_options():
    from surrobench.cli import _register
    from surrobench.cli.app import app

    _register()
    for command in app.registered_commands:
        for p in inspect.signature(command.callback).parameters.values():
            if isinstance(p.default, OptionInfo) and (p.annotation is int or int in typing.get_args(p.annotation)):
                yield command.callback.__name__, p.name, p.default


def test_every_integer_option_of_every_command_has_an_upper_bound():
    options = list(_int_options())
    assert len(options) > 20  # the walk found the commands' options
    unbounded = [f"{command} {name}" for command, name, option in options if not isinstance(option.callback, AtMost)]
    assert unbounded == []
    assert {option.callback.most for _, name, option in options if name != "seed"} == {MAX_COUNT}


def test_a_huge_count_is_one_line_exit_2_and_nothing_is_stored(tmp_path, capsys):
    db = tmp_path / "r.db"
    code = run_cli(["run", "--model", "pinn-mlp", "--iters", "99999999999999999999", "--db", str(db)])
    err = capsys.readouterr().err
    assert code == 2 and "--iters" in err and len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_the_library_refuses_a_count_over_the_bound_before_running():
    with pytest.raises(UsageError, match=r"^iters 2147483648"):
        benchmark("pinn-mlp", iters=MAX_COUNT + 1, device="cpu")


def test_a_thresholds_file_that_is_not_text_is_one_line(tmp_path, capsys):
    binary = tmp_path / "ls"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)))
    with pytest.raises(UsageError, match="not UTF-8 text"):
        load_thresholds(binary)
    assert run_cli(["scenarios", "--config", str(binary)]) == 2
    assert "not UTF-8 text" in capsys.readouterr().err
