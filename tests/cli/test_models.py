"""``surrobench models``: the table on stdout and the same rows in the JSON file."""

from __future__ import annotations

import json


from conftest import run_cli
from surrobench.workload.zoo import all_surrogates


def test_models_table_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # rich would otherwise fold long cells at 80 columns
    out_path = tmp_path / "models.json"
    assert run_cli(["models", "--json", str(out_path)]) == 0
    stdout = capsys.readouterr().out
    data = json.loads(out_path.read_text())
    assert data["schema"] == "surrobench/models-v1"
    assert [m["name"] for m in data["models"]] == [s.info.name for s in all_surrogates()]
    for model in data["models"]:
        assert set(model) == {"name", "paper", "layout", "parameters", "point_kind", "default_size"}
        assert model["parameters"] > 0
        # The table shows the same rows: name, and the parameter count with thousands separators.
        assert model["name"] in stdout and f"{model['parameters']:,}" in stdout


def test_models_json_to_unwritable_path_is_exit_2(tmp_path, capsys):
    assert run_cli(["models", "--json", str(tmp_path / "no_dir" / "m.json")]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("surrobench: error: --json") and "\n" not in err
    assert captured.out == ""  # checked before the table is printed, like every other --json


def test_a_dash_for_an_output_file_is_refused_not_written(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli(["models", "--json", "-"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("surrobench: error: --json '-'") and "/dev/stdout" in err and "\n" not in err
    assert not (tmp_path / "-").exists()
