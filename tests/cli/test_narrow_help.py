"""At 80 columns ``--help`` and the ``models`` list wrap their text and cut none of it (no "…")."""

from __future__ import annotations

import pytest
from conftest import run_cli

from surrobench.workload.zoo import all_surrogates, describe

COMMANDS = (
    "run", "show", "history", "compare", "report", "profile", "analyze", "diagnose", "perf", "optimize",
    "calibrate", "models", "scenarios", "serve",
)  # fmt: skip


@pytest.mark.parametrize("argv", [["--help"], *[[name, "--help"] for name in COMMANDS]])
def test_help_at_80_columns_cuts_no_word(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli(argv) == 0
    out = capsys.readouterr().out
    assert "…" not in out and max(map(len, out.splitlines())) <= 80


def test_models_at_80_columns_shows_every_word_of_every_field(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli(["models"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    words = set(out.split())
    for surrogate in all_surrogates():
        row = describe(surrogate)
        assert set(str(row["paper"]).split()) <= words and set(str(row["layout"]).split()) <= words
