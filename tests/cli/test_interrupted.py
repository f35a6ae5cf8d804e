"""One interruption: a verb raises ``Interrupted(partial=record)`` and the CLI writes ``record.to_json()`` to
the command's ``--json``, and its ``--markdown`` document of the record, in one place
(:func:`surrobench.cli.options.checked_command`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from surrobench.cli.options import JsonOpt, MarkdownOpt, checked_command
from surrobench.errors import Interrupted


class _Kept:
    def to_json(self) -> dict:
        return {"schema": "surrobench/test-v1", "kept": 3}


def _app(partial, markdown=None) -> typer.Typer:
    app = typer.Typer()

    def cut(json_out: Path = JsonOpt, md_out: Path = MarkdownOpt) -> None:
        raise Interrupted("interrupted: 3 kept", partial=partial)

    app.command()(checked_command(cut, markdown))
    return app


def test_the_partial_record_of_an_interrupted_verb_is_its_json(tmp_path):
    out = tmp_path / "partial.json"
    result = CliRunner().invoke(_app(_Kept()), ["--json", str(out)])
    assert isinstance(result.exception, Interrupted)
    assert json.loads(out.read_text()) == {"schema": "surrobench/test-v1", "kept": 3}


def test_the_partial_record_is_every_document_asked_for(tmp_path):
    out, md = tmp_path / "partial.json", tmp_path / "partial.md"
    as_markdown = lambda record: f"kept {record.to_json()['kept']}\n"  # noqa: E731
    result = CliRunner().invoke(_app(_Kept(), as_markdown), ["--json", str(out), "--markdown", str(md)])
    assert isinstance(result.exception, Interrupted)
    assert json.loads(out.read_text())["kept"] == 3 and md.read_text() == "kept 3\n"
    md.write_text("the command's own")  # a command that writes its own markdown (optimize) keeps it
    CliRunner().invoke(_app(_Kept()), ["--json", str(out), "--markdown", str(md)])
    assert md.read_text() == "the command's own"


def test_an_interruption_that_kept_nothing_writes_no_json(tmp_path):
    out = tmp_path / "partial.json"
    result = CliRunner().invoke(_app(None), ["--json", str(out)])
    assert isinstance(result.exception, Interrupted) and not out.exists()


def test_every_interruption_class_carries_its_partial_record():
    from surrobench.execution.sweep import SweepInterrupted

    assert issubclass(SweepInterrupted, Interrupted)
