"""``surrobench calibrate`` input checks and ``diagnose`` against a degenerate stored calibration."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from surrobench.analysis.roofline import Ceilings
from surrobench.execution.env import fingerprint
from surrobench.results.store import ResultStore, add_ceilings, load_ceilings


@pytest.mark.parametrize("flags, message", [
    (["--matmul-n", "0"], "--matmul-n 0: must be a positive integer"),
    (["--copy-mib", "0"], "--copy-mib 0: must be a positive integer"),
    (["--iters", "0"], "--iters 0: must be a positive integer"),
    (["--matmul-n", "-3"], "--matmul-n -3: must be a positive integer"),
    (["--matmul-n", "1"], "--matmul-n 1: must be >= 256 on cpu"),
    (["--copy-mib", "1"], "--copy-mib 1: must be >= 16 on cpu"),
])  # fmt: skip
def test_calibrate_rejects_non_positive_and_tiny_sizes_naming_only_the_flag(tmp_path, capsys, flags, message):
    assert run_cli(["calibrate", "--device", "cpu", "--db", str(tmp_path / "c.db"), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"surrobench: error: {message}" in err
    named = {"--matmul-n", "--copy-mib", "--iters"} - {flags[0]}
    assert not any(flag in err for flag in named)  # no values the user never typed


def test_rejected_tiny_calibration_keeps_the_stored_one(tmp_path):
    db, name = tmp_path / "c.db", fingerprint("cpu")["device_name"]
    good = Ceilings(name, 21.0, {"fp32": 0.07, "bf16": 0.13}, "2026-11-30T00:00:00+00:00", "good")
    with ResultStore(db) as store:
        add_ceilings(store, good)
    assert run_cli(["calibrate", "--device", "cpu", "--db", str(db), "--matmul-n", "1", "--copy-mib", "1",
                    "--iters", "1"]) == 2
    with ResultStore(db) as store:
        assert load_ceilings(store, name) == good


def test_diagnose_draws_no_roofline_against_a_zero_ceiling(tmp_path, capsys):
    db, out = tmp_path / "r.db", tmp_path / "d.json"
    with ResultStore(db) as store:  # a degenerate calibration: fp32 matmul measured as 0 TFLOP/s
        add_ceilings(store, Ceilings(fingerprint("cpu")["device_name"], 21.0, {"fp32": 0.0}, "2026-11-30", "bad"))
    assert run_cli(["diagnose", "--model", "scenario:groupnorm-large", "--shape", "32", "--batch", "1", "--device",
                    "cpu", "--db", str(db), "--iters", "17", "--warmup", "1", "--trace-out", str(tmp_path / "tr"),
                    "--json", str(out)]) == 0  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())
    assert "no fp32 roofline" in err and "fp32 matmul rate 0.0 TFLOP/s is not a ceiling" in err
    findings = json.loads(out.read_text())["findings"]
    assert not any(e["source"] == "roofline" for f in findings for e in f["evidence"])
    assert findings[0]["kind"] == "memory_bound"  # the category rule still judges the GroupNorm


def test_format_ridge_keeps_a_cpu_fp16_ridge_readable():
    """One ridge text for calibrate's table and the roofline evidence of diagnose."""
    from surrobench.analysis.roofline import format_ridge

    assert format_ridge(12.345) == "12.3" and format_ridge(0.1) == "0.1" and format_ridge(0.0512) == "0.0512"
