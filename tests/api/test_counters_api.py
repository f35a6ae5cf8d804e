"""``counters=True`` in the profiling phase (:func:`surrobench.api.profile.profile_config`): the profiling child is
stood in by its result (the H200 transformer's kernels), ncu by a fake executable that writes the H200 capture
or prints ncu's refusal; the counters are joined, stored, and a refusal is one warning, the profile intact."""

from __future__ import annotations

import gzip
import json
import stat
import sys
from pathlib import Path

from conftest import run_cli
from synthetic import config, latency_samples, run

import surrobench.api.profile as profile_api
from surrobench.analysis.detect_counters import MEASURED, counter_findings
from surrobench.api.counters import remeasure
from surrobench.api.diagnose import device_ceilings, diagnose
from surrobench.api.report import build_report
from surrobench.collect.profile_phase import ProfileOptions
from surrobench.execution.config import ExecConfig
from surrobench.records.kernels import KernelRows
from surrobench.records.ops import OpTable
from surrobench.report.html import report_page
from surrobench.results.profiles import load_counters
from surrobench.results.store import ResultStore
from surrobench.workload.spec import ShapeSpec

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ncu"
RUN_ID = "20261201-100000-bbbb"


def _child() -> dict:
    trace = json.loads(gzip.open(FIXTURES / "transformer_256_b8_fp32_h200_trace.json.gz").read())
    rows = KernelRows()
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel":
            rows.add(event["name"], event["dur"], ["aten::_transformer_encoder_layer_fwd"], None)
    kernels = rows.finish(active_steps=2, source="profiler")
    table = OpTable((), "device", kernels.total_us, 2, "profiler")
    return {
        "status": "ok",
        "error": None,
        "warnings": [],
        "op_table": table.to_json(),
        "kernel_table": kernels.to_json(),
        "active_step_ms": [4.0, 4.0],
        "trace_path": None,
        "input_shape": [8, 3, 256, 256],
    }


def _capture(tmp_path, monkeypatch) -> str:
    """The fake ncu's body that replays the H200 capture through ncu's filters (tests/fake_ncu.py)."""
    monkeypatch.setenv("FAKE_NCU_CSV", str(FIXTURES / "transformer_step_raw.csv"))
    monkeypatch.setenv("FAKE_NCU_CALLS", str(tmp_path / "ncu_calls.jsonl"))
    return f'exec "{sys.executable}" "{Path(__file__).parent.parent / "fake_ncu.py"}" "$@"\n'


def _profile(tmp_path, monkeypatch, ncu_body: str):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n" + ncu_body)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NCU", str(fake))
    monkeypatch.setattr(profile_api, "spawn", lambda *args, **kwargs: _child())
    cfg = ExecConfig("patch-transformer", ShapeSpec(size=256), 8, "fp32", "cuda", "eager", 5, 20, False, 0, 1)
    result = config(latency_samples(3.9, 0.0), model="patch-transformer")
    with ResultStore(tmp_path / "r.db") as store:
        store.begin_run(run(RUN_ID, [], device_name="NVIDIA H200", env={"device": "cuda"}))
        config_id = store.add_result(RUN_ID, result)
        report = profile_api.profile_config(cfg, result, config_id, store, ProfileOptions(counters=True), RUN_ID)
        return report, load_counters(store, config_id)


def test_counters_join_the_profiled_kernels_and_are_stored(tmp_path, monkeypatch):
    body = _capture(tmp_path, monkeypatch)
    report, stored = _profile(tmp_path, monkeypatch, body)
    counters = report.counters
    assert counters.problem is None and stored == counters
    assert {k.op for k in counters.kernels} == {"aten::_transformer_encoder_layer_fwd"}
    assert counters.covered_share >= 0.9 and "fmha_cutlassF_f32_aligned_64x64_rf_sm80" in counters.selected
    # identical launches measured once: 9 of the 40, plus the enumerating pass (one pass a launch)
    assert counters.measured_launches == 9 and len(counters.kernels) == 40
    assert counters.passes == sum(k.counters.passes for k in counters.kernels) + 40 == 9 * 18 + 40
    assert report.to_json()["counters"]["kernels"][0]["bound"] in ("memory", "compute", "latency")


def test_refused_counters_are_one_warning_and_the_profile_stands(tmp_path, monkeypatch):
    report, stored = _profile(tmp_path, monkeypatch, f"cat '{FIXTURES / 'err_nvgpuctrperm.txt'}'\nexit 1\n")
    assert report.status == "ok" and report.kernel_table is not None
    assert stored.problem.kind == "permission" and stored.kernels == ()
    assert [w for w in report.warnings if "ERR_NVGPUCTRPERM" in w]


def test_diagnose_run_reads_the_stored_counters_back(tmp_path, monkeypatch):
    body = _capture(tmp_path, monkeypatch)
    report, _ = _profile(tmp_path, monkeypatch, body)
    diagnosis = diagnose(run=RUN_ID, db=tmp_path / "r.db")
    # what diagnose_workload reads right after measuring: the counters against the table and the ceilings
    ceilings, _ = device_ceilings(diagnosis.run)
    measured = remeasure(report.counters, report.kernel_table, ceilings)
    expected = counter_findings(report.label(), measured, ceilings)
    got = [f for f in diagnosis.findings if f.evidence_source == MEASURED]
    assert expected and sorted(got, key=lambda f: f.kind) == sorted(expected, key=lambda f: f.kind)
    assert diagnosis.context["counters"] == {report.label(): measured.to_json()}
    head = diagnosis.context["headroom"][report.label()]  # the step against its measured roofline bound
    assert 0 < head["roofline_bound_ms"] < head["step_ms"] and head["headroom"] > 1 and head["launches"] == 40
    assert all(k.roof_tflops is not None for k in measured.kernels if k.precision is not None)


def test_diagnose_run_prints_the_counters_table_and_their_cost(tmp_path, monkeypatch, capsys):
    body = _capture(tmp_path, monkeypatch)
    report, stored = _profile(tmp_path, monkeypatch, body)
    out = tmp_path / "d.json"
    assert run_cli(["diagnose", "--run", RUN_ID, "--db", str(tmp_path / "r.db"), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{len(stored.kernels)} kernel launches" in printed and f"{stored.passes} passes" in printed
    assert f"({stored.measured_launches} measured" in printed
    assert "Nsight Compute counters" in printed and "its roofline bound" in printed
    assert json.loads(out.read_text())["context"]["counters"][report.label()]["passes"] == stored.passes


def test_the_report_draws_the_stored_counters_on_the_run_roofline(tmp_path, monkeypatch):
    body = _capture(tmp_path, monkeypatch)
    report, stored = _profile(tmp_path, monkeypatch, body)
    built = build_report([RUN_ID], db=tmp_path / "r.db")
    roof = built.rooflines[RUN_ID]
    assert list(roof.measured) == [report.label()] and roof.estimated == {}
    assert roof.ceilings == device_ceilings(built.runs[0])[0]
    assert len(roof.measured[report.label()]["kernels"]) == len(stored.kernels)
    assert 'alt="roofline, measured and estimated points"' in report_page(built)
