"""One interruption: a verb raises ``Interrupted(partial=record)`` and the CLI writes ``record.to_json()`` to
the command's ``--json`` in one place (:func:`surrobench.cli.options.checked_command`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from surrobench.cli.options import JsonOpt, checked_command
from surrobench.errors import Interrupted


class _Kept:
    def to_json(self) -> dict:
        return {"schema": "surrobench/test-v1", "kept": 3}


def _app(partial) -> typer.Typer:
    app = typer.Typer()

    def cut(json_out: Path = JsonOpt) -> None:
        raise Interrupted("interrupted: 3 kept", partial=partial)

    app.command()(checked_command(cut))
    return app


def test_the_partial_record_of_an_interrupted_verb_is_its_json(tmp_path):
    out = tmp_path / "partial.json"
    result = CliRunner().invoke(_app(_Kept()), ["--json", str(out)])
    assert isinstance(result.exception, Interrupted)
    assert json.loads(out.read_text()) == {"schema": "surrobench/test-v1", "kept": 3}


def test_an_interruption_that_kept_nothing_writes_no_json(tmp_path):
    out = tmp_path / "partial.json"
    result = CliRunner().invoke(_app(None), ["--json", str(out)])
    assert isinstance(result.exception, Interrupted) and not out.exists()


def test_every_interruption_class_carries_its_partial_record():
    from surrobench.execution.sweep import SweepInterrupted

    assert issubclass(SweepInterrupted, Interrupted)
