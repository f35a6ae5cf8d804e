"""``surrobench calibrate`` input checks and ``diagnose`` against a degenerate stored calibration."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import run_cli

from surrobench.execution.env import fingerprint
from surrobench.records.ceilings import Ceilings
from surrobench.records.findings import GAIN_UNKNOWN
from surrobench.results.ceilings import CACHE_ENV, cache_dir, load_ceilings, save_ceilings


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--matmul-n", "0"], "--matmul-n 0: must be a positive integer"),
        (["--copy-mib", "0"], "--copy-mib 0: must be a positive integer"),
        (["--iters", "0"], "--iters 0: must be a positive integer"),
        (["--matmul-n", "-3"], "--matmul-n -3: must be a positive integer"),
        (["--matmul-n", "1"], "--matmul-n 1: must be >= 256 on cpu"),
        (["--copy-mib", "1"], "--copy-mib 1: must be >= 16 on cpu"),
    ],
)
def test_calibrate_rejects_non_positive_and_tiny_sizes_naming_only_the_flag(tmp_path, capsys, flags, message):
    assert run_cli(["calibrate", "--device", "cpu", *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"surrobench: error: {message}" in err
    named = {"--matmul-n", "--copy-mib", "--iters"} - {flags[0]}
    assert not any(flag in err for flag in named)  # no values the user never typed


def test_rejected_tiny_calibration_keeps_the_stored_one(tmp_path):
    name, threads = fingerprint("cpu")["device_name"], torch.get_num_threads()
    good = Ceilings(name, 21.0, {"fp32": 0.07, "bf16": 0.13}, "2026-11-30T00:00:00+00:00", "good")
    save_ceilings(good, threads)
    assert run_cli(["calibrate", "--device", "cpu", "--matmul-n", "1", "--copy-mib", "1", "--iters", "1"]) == 2
    assert load_ceilings(name, threads) == good


def test_ceilings_are_per_machine_and_thread_count_not_per_database(tmp_path, monkeypatch):
    """A diagnosis in another folder (another --db) found no ceilings when they lived in the database."""
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "surrobench"
    c = Ceilings("CPU X", 21.0, {"fp32": 0.07}, "2026-12-01", "t")
    assert save_ceilings(c, 2) == tmp_path / "xdg" / "surrobench" / "ceilings.json"
    assert load_ceilings("CPU X", 2) == c and load_ceilings("CPU X", 1) is None and load_ceilings("CPU Y", 2) is None
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "override"))
    assert load_ceilings("CPU X", 2) is None and cache_dir() == tmp_path / "override"


#: Thresholds under which the category rule names every low-intensity op memory-bound, whatever its share, time per
#: call or stake: which ops cross the default ones depends on the host's timings (under load the GroupNorm's share,
#: its profiler-deflated time and the timed step move apart), and the rule's reading is what the test is about.
EVERY_LOW_INTENSITY_OP = "bound_op_share_min = 0\ncpu_small_call_us = 0\nreport_min_fraction = 0\n"


def test_diagnose_draws_no_roofline_against_a_zero_ceiling(tmp_path, capsys):
    db, out, config = tmp_path / "r.db", tmp_path / "d.json", tmp_path / "th.toml"
    config.write_text(EVERY_LOW_INTENSITY_OP)
    # a degenerate calibration: fp32 matmul measured as 0 TFLOP/s
    save_ceilings(
        Ceilings(fingerprint("cpu")["device_name"], 21.0, {"fp32": 0.0}, "2026-11-30", "bad"), torch.get_num_threads()
    )
    assert (
        run_cli(
            [
                "diagnose",
                "--model",
                "scenario:groupnorm-large",
                "--shape",
                "32",
                "--batch",
                "1",
                "--device",
                "cpu",
                "--db",
                str(db),
                "--iters",
                "17",
                "--warmup",
                "1",
                "--trace-out",
                str(tmp_path / "tr"),
                "--json",
                str(out),
                "--measure-s",
                "0",
                "--config",
                str(config),
            ]
        )
        == 0
    )
    err = " ".join(capsys.readouterr().err.split())
    assert "no fp32 roofline" in err and "0.0 TFLOP/s" in err and "not a ceiling" in err  # the rate refused
    findings = json.loads(out.read_text())["findings"]
    assert not any(e["source"] == "roofline" and e["unit"] != GAIN_UNKNOWN for f in findings for e in f["evidence"])
    # the category rule still judges the GroupNorm, gain unknown (its rank among the findings follows the timings)
    (memory,) = [f for f in findings if f["kind"] == "memory_bound"]
    assert any("group_norm" in e["text"] for e in memory["evidence"] if e["source"] == "profiler")
    assert [e["unit"] for e in memory["evidence"] if e["source"] == "roofline"] == [GAIN_UNKNOWN]


def test_format_ridge_keeps_a_cpu_fp16_ridge_readable():
    """One ridge text for calibrate's table and the roofline evidence of diagnose."""
    from surrobench.analysis.roofline import format_ridge

    assert format_ridge(12.345) == "12.3" and format_ridge(0.1) == "0.1" and format_ridge(0.0512) == "0.0512"
