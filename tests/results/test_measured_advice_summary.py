"""benchmarks/measured_advice_summary.py, the goals of docs/benchmarks/h200-measured-advice.md, on a planted
diagnosis against the optimize report kept for the zoo FNO at 256² batch 8 (tests/fixtures/h200)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from surrobench.records.findings import Clause, Finding, diagnosis_json
from surrobench.records.measured import MeasuredRemedy

ROOT = Path(__file__).resolve().parents[2]
LABEL = "fno2d 8x3x256x256 b8 fp32 eager"  # its kept report: tf32 alone 1.16x, 2.994 ms baseline; recipe tf32+cudagraph


def _summary():
    spec = importlib.util.spec_from_file_location(
        "measured_advice_summary", ROOT / "benchmarks" / "measured_advice_summary.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _work(tmp_path: Path, saved_ms: float, seconds: str) -> Path:
    tf32 = MeasuredRemedy("tf32", "faster", 1.16, (1.15, 1.17), 3.0, saved_ms)
    top = Finding("compute_bound", "medium", "fp32", (), (Clause("tf32", ("tf32",)),), 0.62, LABEL, measured=(tf32,))
    (tmp_path / "diagnose_fno2d.json").write_text(json.dumps(diagnosis_json([top], {})))
    (tmp_path / "times.tsv").write_text(f"name\tstep\tseconds\texit code\nfno2d\tdiagnose\t{seconds}\t0\n")
    return tmp_path


def test_a_top_remedy_in_the_recipe_saving_what_optimize_measured_passes(tmp_path):
    (row,) = _summary().rows(_work(tmp_path, 0.42, "71.0"), ROOT / "tests" / "fixtures" / "h200")
    # optimize's tf32 alone: 2.994 ms x (1 - 1 / 1.165) = 0.42 ms
    assert row["checks"]["in recipe"] and row["checks"]["within 25%"] and row["pass"]
    assert row["recipe"].startswith("tf32+cudagraph") and row["measured"].startswith("tf32: measured 1.16x")


def test_a_saving_off_by_more_than_a_quarter_or_a_slow_diagnose_fails(tmp_path):
    (row,) = _summary().rows(_work(tmp_path, 0.8, "95.5"), ROOT / "tests" / "fixtures" / "h200")
    assert row["checks"]["in recipe"] and row["checks"]["within 25%"] is False
    assert row["checks"]["<= 90 s"] is False and not row["pass"]
