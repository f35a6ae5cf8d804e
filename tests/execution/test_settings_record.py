"""The execution settings as one record (records/config.ExecSettings), with matmul_precision as the example
of a setting added end to end: request -> config -> execution site -> result -> store -> document."""

from __future__ import annotations

import json

import pytest
import torch

from conftest import exec_config, run_cli
from surrobench.errors import UsageError
from surrobench.execution.config import REQUEST_FIELDS, execution_settings
from surrobench.execution.runner import prepare_model, run_config
from surrobench.records.config import EXEC_SETTINGS, ExecSettings
from surrobench.results.store import ResultStore


def test_the_record_names_every_setting_once_and_checks_its_choices():
    assert EXEC_SETTINGS == ("channels_last", "compile_mode", "threads", "matmul_precision")
    assert set(EXEC_SETTINGS) <= set(REQUEST_FIELDS)
    assert ExecSettings(matmul_precision="high", threads=2).changed() == {"threads": 2, "matmul_precision": "high"}
    with pytest.raises(UsageError, match="matmul_precision"):
        exec_config(matmul_precision="fast")


def test_the_execution_site_sets_and_restores_the_matmul_precision(tiny):
    before = torch.get_float32_matmul_precision()
    cfg = exec_config(matmul_precision="medium")
    with execution_settings(cfg):
        assert torch.get_float32_matmul_precision() == "medium"
    assert torch.get_float32_matmul_precision() == before
    result = run_config(cfg, prepare_model(tiny, "cpu", 0))
    assert result.status == "ok" and result.extra["matmul_precision"] == "medium"
    assert "matmul_precision=medium" in result.label()


def test_the_cli_option_reaches_the_store_and_the_document(tmp_path):
    db, out = tmp_path / "r.db", tmp_path / "r.json"
    argv = [
        "run",
        "--model",
        "pinn-mlp",
        "--shape",
        "64",
        "--batch",
        "1",
        "--iters",
        "2",
        "--warmup",
        "0",
        "--matmul-precision",
    ]
    assert run_cli([*argv, "high", "--db", str(db), "--json", str(out)]) == 0
    (result,) = json.loads(out.read_text())["results"]
    assert result["settings"] == {"matmul_precision": "high"}
    with ResultStore(db) as store:
        (stored,) = store.load_run(json.loads(out.read_text())["run_id"]).results
    assert stored.extra["matmul_precision"] == "high"
    assert run_cli([*argv, "fast", "--db", str(db)]) == 2


def test_the_few_iterations_note_is_for_valid_counts_only():
    from surrobench.execution.config import low_iterations_note

    assert "iters 5 (< 50)" in low_iterations_note(10, 5) and low_iterations_note(10, 50) is None
    assert low_iterations_note(10, -5) is None and low_iterations_note(-1, 5) is None  # their errors say it


def test_a_compile_mode_is_set_on_the_compile_configs_alone():
    from surrobench.api.benchmark import sweep_plan

    plan = sweep_plan(
        "fno2d", shapes="16", batches=1, modes="eager,compile", compile_mode="reduce-overhead", device="cpu"
    )
    assert {c.mode: c.compile_mode for c in plan.configs} == {"eager": None, "compile": "reduce-overhead"}
