"""benchmarks/measured_advice_summary.py, the goals of docs/benchmarks/h200-measured-advice.md, on a planted
diagnosis against the optimize report kept for the zoo FNO at 256² batch 8 (tests/fixtures/h200)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from surrobench.records.findings import Clause, Diagnosis, Finding, MeasuredRemedy

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
    (tmp_path / "diagnose_fno2d.json").write_text(json.dumps(Diagnosis({}, (top,)).to_json()))
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


def _top(tmp_path: Path, remedy: MeasuredRemedy) -> Path:
    ids = tuple(remedy.remedy.split("+"))
    clause = Clause(remedy.remedy, ids, stacked=len(ids) > 1)
    top = Finding("launch_bound", "high", "x", (), (clause,), 0.5, LABEL, measured=(remedy,))
    (tmp_path / "diagnose_fno2d.json").write_text(json.dumps(Diagnosis({}, (top,)).to_json()))
    return tmp_path


def test_a_remedy_outside_the_recipe_counts_only_when_the_paired_rule_cannot_tell_them_apart(tmp_path):
    summary, kept = _summary(), ROOT / "tests" / "fixtures" / "h200"
    # optimize did not time this stack: diagnose's interval against the recipe's, 1.231x [1.228, 1.232]
    near = MeasuredRemedy("cudagraph+bf16", "faster", 1.24, (1.20, 1.28), 3.0, 0.58)
    (row,) = summary.rows(_top(tmp_path, near), kept)
    assert row["tie"] and row["checks"]["in recipe"]
    # optimize timed fp16 alone at 1.164x [1.163, 1.165]: its own interval is read, and the recipe clears it
    low = MeasuredRemedy("fp16", "faster", 1.24, (1.20, 1.28), 3.0, 0.58)
    (row,) = summary.rows(_top(tmp_path, low), kept)
    assert not row["tie"] and row["checks"]["in recipe"] is False and not row["pass"]
    assert summary.tied((3.55, 4.72), (3.03, 3.92)) and not summary.tied((1.5, 1.6), (1.2, 1.3))


def test_the_recipe_step_arguments_and_its_coverage_and_headroom(tmp_path):
    summary, kept = _summary(), ROOT / "tests" / "fixtures" / "h200"
    _work(tmp_path, 0.42, "71.0")
    args = summary.recipe_args(tmp_path, kept, "fno2d", ["--iters", "20"])
    assert args[args.index("--mode") + 1] == "eager,cudagraph" and args[args.index("--precision") + 1] == "tf32"
    assert args[-2:] == ["--iters", "20"] and args[args.index("--model") + 1] == "fno2d"
    label = "fno2d 8x3x256x256 b8 tf32 cudagraph"
    context = {
        "evidence_checks": {
            "fno2d 8x3x256x256 b8 tf32 eager": {"coverage": 0.99},
            label: {"coverage": 0.95, "matched_coverage": 0.93},  # after matching; the matched share is part of it
        },
        "headroom": {label: {"headroom": 2.5, "step_ms": 2.4, "roofline_bound_ms": 0.96, "covered_share": 0.94}},
    }
    (tmp_path / "diagnose_fno2d_recipe.json").write_text(json.dumps(Diagnosis(context, ()).to_json()))
    (row,) = summary.rows(tmp_path, kept)
    step = row["recipe_step"]
    assert step["label"] == label and step["coverage"] == 0.95 and step["headroom"] == 2.5
    del context["evidence_checks"][label]  # a recipe step cut before its recipe config was profiled
    assert summary.recipe_step(Diagnosis(context, ()).to_json(), cut=True)["label"] is None
    assert summary.recipe_step(Diagnosis(context, ()).to_json())["label"] == "fno2d 8x3x256x256 b8 tf32 eager"
    try:
        summary.recipe_args(tmp_path, kept, "afno", [])
    except LookupError:
        pass
    else:
        raise AssertionError("a config without an optimize report has no recipe step")


def test_kept_recipes_are_read_only_for_a_diagnosis_on_the_same_device(tmp_path):
    tf32 = MeasuredRemedy("tf32", "faster", 1.16, (1.15, 1.17), 3.0, 0.42)
    top = Finding("compute_bound", "medium", "fp32", (), (Clause("tf32", ("tf32",)),), 0.62, LABEL, measured=(tf32,))
    for device, found in (("NVIDIA H200", True), ("NVIDIA H100 80GB HBM3", False)):
        (tmp_path / "diagnose_fno2d.json").write_text(json.dumps(Diagnosis({"device_name": device}, (top,)).to_json()))
        (row,) = _summary().rows(tmp_path, ROOT / "tests" / "fixtures" / "h200")
        assert (row["recipe"] != "-") is found and (row["checks"]["in recipe"] is None) is not found


def test_an_alternative_of_the_top_remedy_in_the_recipe_counts_only_when_this_diagnosis_ties_them():
    def doc(bf16_ci):
        fp16 = MeasuredRemedy("fp16", "faster", 2.16, (2.14, 2.18), 3.0, 1.89)
        bf16 = MeasuredRemedy("bf16", "faster", 2.13, bf16_ci, 3.0, 1.87)
        a = Finding("matmul_precision", "high", "", (), (Clause("fp16", ("fp16",)),), 1.0, LABEL, measured=(fp16,))
        b = Finding("compute_bound", "high", "", (), (Clause("bf16", ("bf16",)),), 1.0, LABEL, measured=(bf16,))
        return Diagnosis({}, (a, b)).to_json()

    summary = _summary()
    assert summary.alternative_tied(doc((2.12, 2.15)), "fp16", ["bf16", "cudagraph"]) == "bf16"  # the transformer's
    assert summary.alternative_tied(doc((1.50, 1.60)), "fp16", ["bf16", "cudagraph"]) is None  # bf16 clearly slower
    assert summary.alternative_tied(doc((2.12, 2.15)), "fp16", ["tf32", "cudagraph"]) is None  # tf32 unmeasured here
    assert summary.alternative_tied(doc((2.12, 2.15)), "fp16", ["cudagraph"]) is None  # no alternative in the recipe


def test_a_remedy_is_in_a_recipe_that_applies_every_setting_it_applies():
    summary = _summary()
    assert summary.in_the_recipe("compile", ["compile-reduce-overhead", "tf32"])  # the Galerkin's: compile's mode kept
    assert not summary.in_the_recipe("cudagraph", ["compile-reduce-overhead", "tf32"])  # another mode
    assert not summary.in_the_recipe("compile-reduce-overhead", ["compile", "tf32"])  # the recipe lacks its mode
    assert summary.in_the_recipe("threads=2", ["threads=4"]) and not summary.in_the_recipe("tf32", [])
