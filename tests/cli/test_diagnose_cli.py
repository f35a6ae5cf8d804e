"""``surrobench diagnose``, ``calibrate`` and ``scenarios`` end to end: exit codes, JSON, stored ceilings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import run_cli

from surrobench.errors import UsageError
from surrobench.report.findings import NO_FINDINGS_FAILED
from surrobench.results.ceilings import load_ceilings

FNO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


def test_diagnose_trace_writes_findings_json_and_markdown(tmp_path):
    out, md = tmp_path / "d.json", tmp_path / "d.md"
    assert run_cli(["diagnose", str(FNO), "--json", str(out), "--markdown", str(md)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/diagnosis-v8" and doc["findings"][0]["kind"] == "launch_bound"
    assert "| launch_bound | high |" in md.read_text()


def test_diagnose_prints_compact_findings_and_the_evidence_behind_explain(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert run_cli(["diagnose", str(FNO), "--json", str(out)]) == 0
    compact = capsys.readouterr().out
    evidence = [e["text"] for f in json.loads(out.read_text())["findings"] for e in f["evidence"]]
    assert "launch_bound" in compact and "--explain" in compact and evidence
    assert not any(text in compact for text in evidence)
    assert run_cli(["diagnose", str(FNO), "--explain"]) == 0
    explained = " ".join(capsys.readouterr().out.split())
    assert all(" ".join(text.split()) in explained for text in evidence)


def test_diagnose_bad_inputs_exit_2(tmp_path, capsys):
    assert run_cli(["diagnose", str(tmp_path / "missing.json")]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[[")
    assert run_cli(["diagnose", str(FNO), "--config", str(bad)]) == 2
    assert run_cli(["diagnose", "--run", "nope", "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("surrobench: error:") == 3 and "Traceback" not in err


def test_timing_options_with_a_stored_run_are_refused_as_not_applying(tmp_path, capsys):
    assert run_cli(["diagnose", "--run", "nope", "--iters", "5", "--warmup", "2", "--db", str(tmp_path / "x.db")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "surrobench: error: --run diagnoses a stored run, so --warmup, --iters do not apply: drop them"
    ]


def test_calibrate_on_cpu_is_stored_and_read_back(tmp_path, capsys):
    assert (
        run_cli(
            [
                "calibrate",
                "--device",
                "cpu",
                "--matmul-n",
                "256",
                "--copy-mib",
                "16",
                "--iters",
                "3",
                "--force",  # a shared test host may be busy: calibrate would refuse to store (tested apart)
                "--json",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["schema"] == "surrobench/ceilings-v1"
    stored = load_ceilings(written["device_name"], torch.get_num_threads())
    assert stored is not None and stored.copy_gbps == written["copy_gbps"] > 0
    assert set(stored.matmul_tflops) == {"fp32", "fp16", "bf16"}  # no tf32 on the CPU: the switch is CUDA's
    out = capsys.readouterr().out
    assert "(read + write)" in out and "device-to-device" not in out and "tf32" not in out  # the CPU's copy label
    assert load_ceilings("no such device") is None


def test_diagnose_live_then_stored_run_on_cpu(tmp_path, capsys, monkeypatch):
    """The stored run reads as the live one, from another working folder too (its traces are stored by their
    absolute path, though --trace-out was relative)."""
    db, out = tmp_path / "r.db", tmp_path / "live.json"
    monkeypatch.chdir(tmp_path)
    argv = [
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
        "tr",
        "--measure-s",
        "0",  # estimates only: the order then rests on the profile, not on remedies timed on a loaded host
    ]
    assert run_cli(["diagnose", *argv, "--json", str(out)]) == 0
    live = json.loads(out.read_text())
    # memory_bound is found; whether it leads fragmented_ops rests on op shares a loaded host moves
    memory = next(f for f in live["findings"] if f["kind"] == "memory_bound")
    # CPU op times are self CPU times under the profiler: the finding says how they relate to the real step
    assert any("profiler overhead" in e["text"] for e in memory["evidence"])
    assert run_cli(["history", "--db", str(db), "--json", str(tmp_path / "h.json")]) == 0
    assert [r["kind"] for r in json.loads((tmp_path / "h.json").read_text())["runs"]] == ["diagnose"]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    assert run_cli(["diagnose", "--run", live["context"]["run_id"], "--db", str(db), "--json", str(out)]) == 0
    assert "not available" not in capsys.readouterr().err
    stored = json.loads(out.read_text())["findings"]
    assert [f["kind"] for f in stored] == [f["kind"] for f in live["findings"]]  # the same profile, the same verdicts
    assert any("profiler overhead" in e["text"] for f in stored if f["kind"] == "memory_bound" for e in f["evidence"])


def test_scenarios_on_cpu_skip_gpu_verdicts_with_the_reason_and_unknown_name_is_usage_error(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert (
        run_cli(
            [
                "scenarios",
                "--only",
                "gemm-bf16,tiny-mlp",
                "--device",
                "auto",
                "--db",
                str(tmp_path / "s.db"),
                "--iters",
                "17",
                "--warmup",
                "1",
                "--trace-out",
                str(tmp_path / "tr"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert "scenarios on cpu" in capsys.readouterr().out  # the device used, not "auto"
    outcomes = {o["scenario"]: o for o in json.loads(out.read_text())["outcomes"]}
    assert outcomes["gemm-bf16"]["passed"] is None and "tensor-core peak" in outcomes["gemm-bf16"]["note"]
    assert outcomes["tiny-mlp"]["passed"] is None and outcomes["tiny-mlp"]["note"] == "needs a CUDA GPU"
    assert run_cli(["scenarios", "--only", "nope"]) == 2


def test_scenario_models_resolve_but_stay_out_of_the_zoo():
    from surrobench.workload.loader import resolve_model
    from surrobench.workload.zoo import all_surrogates

    assert resolve_model("scenario:tiny-mlp").info.name == "scenario:tiny-mlp"
    assert not any(s.info.name.startswith("scenario:") for s in all_surrogates())


def _perf_doc(*views):
    """A ``surrobench perf --json`` document with one report per view (None: a config without a system pass)."""
    from synthetic import config

    from surrobench.api.perf import PerfReport
    from surrobench.collect.perf import SystemPass
    from surrobench.collect.perf_parse import CounterSummary
    from surrobench.records.schemas import PERF as PERF_SCHEMA

    reports = []
    for i, view in enumerate(views):
        system = None
        if view is not None:
            summary = CounterSummary(dict(view.counters), dict(view.unavailable), {"cycles": 0.5}, view.ipc, 0.1, 0.02)
            system = SystemPass(view, summary, Path("/tmp/f.svg"), {"status": "ok"}, ("a note",))
        reports.append(PerfReport(config([1.0], size=64 * (i + 1)), i, "ok", None, system, 10).to_json())
    return {"schema": PERF_SCHEMA, "run": {}, "perf": reports}


def test_perf_json_feeds_diagnose_system_view(tmp_path, capsys):
    """``surrobench perf --json`` output is a valid ``diagnose --system-view`` (it was not: extra keys)."""
    from surrobench.api.diagnose import load_system_view
    from surrobench.records.system import HostHotspot, SystemView
    from surrobench.report.findings import system_lines

    view = SystemView(
        12.0,
        10.0,
        1.2,
        1.5,
        {"cycles": 1e9, "task-clock": 12.0},
        {"instructions": "no PMU"},
        (HostHotspot("prep.py:12 build_mask", 0.6, 0.55, "py-spy"), HostHotspot("libc memcpy", 0.1)),
    )
    assert SystemView.from_json(view.to_json()) == view
    doc = tmp_path / "perf.json"
    doc.write_text(json.dumps(_perf_doc(view)))
    assert load_system_view(doc) == view
    bare = tmp_path / "view.json"
    bare.write_text(json.dumps(_perf_doc(view)["perf"][0]["system"]))  # extra keys ignored
    assert load_system_view(bare) == view
    out = tmp_path / "d.json"
    capsys.readouterr()
    assert run_cli(["diagnose", str(FNO), "--system-view", str(doc), "--json", str(out)]) == 0
    pre = next(f for f in json.loads(out.read_text())["findings"] if f["kind"] == "cpu_preprocess")
    assert "prep.py:12 build_mask" in pre["summary"]
    views = json.loads(out.read_text())["context"]["system"]  # the view's headline printed, one line per config
    (line,) = system_lines(views)
    assert "prep.py:12 build_mask" in line and line in capsys.readouterr().out
    # several configs with a view: which one applies is the user's call, said with the config labels
    doc.write_text(json.dumps(_perf_doc(view, None, view)))
    assert run_cli(["diagnose", str(FNO), "--system-view", str(doc)]) == 2
    err = capsys.readouterr().err
    labels = [r["label"] for r in json.loads(doc.read_text())["perf"] if "system" in r]
    assert len(labels) == 2 and all(label in err for label in labels)
    assert f"error: --system-view {str(doc)!r}:" in err  # the CLI names its flag, the library its parameter
    with pytest.raises(UsageError) as raised:
        load_system_view(doc)
    assert raised.value.parameter == "system_view" and str(raised.value).startswith(f"system_view {str(doc)!r}:")
    doc.write_text(json.dumps(_perf_doc(None)))
    assert run_cli(["diagnose", str(FNO), "--system-view", str(doc)]) == 2
    bare.write_text(json.dumps({"hotspots": [{"share": 0.5}]}))
    assert run_cli(["diagnose", str(FNO), "--system-view", str(bare)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and err.count("--system-view") == 2 and "'function'" in err


def test_diagnose_json_carries_the_per_operator_roofline_with_fft_flops(tmp_path):
    db, out = tmp_path / "r.db", tmp_path / "d.json"
    calibrate = ["calibrate", "--device", "cpu", "--matmul-n", "256", "--copy-mib", "16", "--iters", "3", "--force"]
    assert run_cli(calibrate) == 0
    assert (
        run_cli(
            [
                "diagnose",
                "--model",
                "fno2d",
                "--shape",
                "16",
                "--batch",
                "1",
                "--device",
                "cpu",
                "--db",
                str(db),
                "--iters",
                "2",
                "--warmup",
                "1",
                *("--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "1"),  # one recorded step
                "--trace-out",
                str(tmp_path / "tr"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    (roof,) = json.loads(out.read_text())["context"]["roofline"].values()
    ops = {o["name"]: o for o in roof["ops"]}
    r2c = ops["aten::_fft_r2c"]
    assert r2c["flops"] > 0 and r2c["intensity"] > 0 and r2c["bound"] in ("memory", "compute")
    assert {"name", "flops", "bytes", "intensity", "achieved_tflops", "achieved_gbps", "bound"} <= set(r2c)
    unknown = [o for o in roof["ops"] if o["flops"] is None]
    assert all(o["intensity"] is None and o["achieved_tflops"] is None for o in unknown)


def test_workload_options_with_a_trace_are_refused_by_name(capsys):
    assert run_cli(["diagnose", str(FNO), "--channels-last"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("surrobench: error: a TRACE is diagnosed as recorded, so --channels-last does not apply")
    assert run_cli(["diagnose", str(FNO), "--threads", "2", "--compile-mode", "reduce-overhead"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--compile-mode" in err and "--threads" in err


def test_diagnose_schedule_longer_than_iters_fails_before_planning(tmp_path, capsys, monkeypatch):
    from surrobench.cli.options import WorkloadOptions

    def no_plan(self):
        raise AssertionError("planned (models resolved, shapes checked) before the schedule was checked")

    monkeypatch.setattr(WorkloadOptions, "plan", no_plan)
    argv = ["diagnose", "--model", "pinn-mlp", "--device", "cpu", "--db", str(tmp_path / "r.db"), "--iters", "7"]
    assert run_cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "surrobench: error: profiler schedule wait 2 + warmup 1 + active 5 = 8 steps is longer than --iters 7; "
        "lower --profile-wait, --profile-warmup or --profile-active, or raise --iters"
    ]


def test_a_config_that_failed_is_the_headline_and_exit_3(tmp_path, capsys):
    """A factory that raises leaves nothing to diagnose: the failure and its cause come first, not 'no findings'."""
    model = tmp_path / "m.py"
    model.write_text("def raises():\n    raise ValueError('factory fails')\n")
    out = tmp_path / "d.json"
    argv = ["diagnose", "--model", f"{model}:raises", "--shape", "8", "--batch", "1", "--device", "cpu"]
    argv += ["--warmup", "1", "--iters", "20", "--db", str(tmp_path / "r.db"), "--json", str(out)]
    assert run_cli(argv) == 3
    printed = capsys.readouterr().out
    assert printed.startswith("failed: ") and printed.index("factory fails") < printed.index("diagnosis of run")
    assert (
        NO_FINDINGS_FAILED.split(";")[0] not in printed
    )  # no config ran: not "no findings among the configs that ran"
    (failed,) = json.loads(out.read_text())["context"]["failed_configs"]
    assert failed["status"] == "error" and failed["batch"] == 1 and "factory fails" in failed["error"]


def test_ctrl_c_while_profiling_writes_the_findings_of_what_was_read(tmp_path, capsys, monkeypatch):
    """Ctrl-C in the second config's profiling child: the run is marked interrupted and --json and --markdown hold
    the diagnosis of the first config, read as it was profiled; nothing more is measured for it."""
    from surrobench.api import profile as api_profile
    from surrobench.results.store import ResultStore

    spawn, calls = api_profile.spawn, []

    def second_interrupts(cfg, *args, **kwargs):
        calls.append(cfg.batch)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return spawn(cfg, *args, **kwargs)

    monkeypatch.setattr(api_profile, "spawn", second_interrupts)
    db, out = tmp_path / "r.db", tmp_path / "d.json"
    argv = ["diagnose", "--model", "scenario:groupnorm-large", "--shape", "32", "--batch", "1,2", "--device", "cpu"]
    argv += ["--iters", "17", "--warmup", "1", "--trace-out", str(tmp_path / "tr"), "--db", str(db), "--json", str(out)]
    assert run_cli([*argv, "--markdown", str(tmp_path / "d.md")]) == 130
    err = capsys.readouterr().err
    doc = json.loads(out.read_text())
    context = doc["context"]
    assert context["run_id"] in err  # the line names the run kept
    assert "Traceback" not in err and calls == [1, 2]
    assert doc["schema"] == "surrobench/diagnosis-v8" and context["interrupted"] is True
    (label,) = context["profiled"]
    assert "b1" in label and doc["findings"][0]["kind"] == "memory_bound" and doc["findings"][0]["config"] == label
    md = (tmp_path / "d.md").read_text()
    assert f"| memory_bound | {doc['findings'][0]['severity']} | {label} |" in md  # the same diagnosis, as a table
    assert "(interrupted: " in md.splitlines()[0]  # the title says it is partial
    (cut,) = [key for key, check in context["evidence_checks"].items() if check["problems"] == ["not_profiled"]]
    assert " b2 " in cut  # the config cut off is "not profiled", not "no finding"
    assert f"{cut}: no finding" not in md and "not profiled" in md
    # b2 was profiled after the cut: only the run-level checks over the timed configs may name it (a noisy host can
    # make b2's timing read as superlinear in the batch)
    run_level = {"memory_pressure", "precision_mismatch", "superlinear_scaling"}
    assert all(f["kind"] in run_level for f in doc["findings"] if f["config"] and "b2" in f["config"])
    with ResultStore(db) as store:
        assert store.run_state(context["run_id"]) == "interrupted"
        assert len(store.load_run(context["run_id"]).results) == 2  # both timed, one of them profiled


def test_measure_s_is_checked_and_refused_where_nothing_is_measured(capsys):
    assert run_cli(["diagnose", "--model", "pinn-mlp", "--shape", "32", "--device", "cpu", "--measure-s", "-1"]) == 2
    assert "--measure-s" in capsys.readouterr().err
    assert run_cli(["diagnose", str(FNO), "--measure-s", "10"]) == 2  # a trace alone: nothing to measure on
    assert "--measure-s" in capsys.readouterr().err


def test_a_trace_with_no_kernels_cannot_be_judged_and_exits_4(tmp_path, capsys):
    from kineto_synth import runtime, write

    from surrobench.errors import EXIT_CANNOT_JUDGE

    trace, out = write(tmp_path / "t.json", [runtime("cudaLaunchKernel", 10, 5, 1)]), tmp_path / "d.json"
    assert run_cli(["diagnose", str(trace), "--json", str(out)]) == EXIT_CANNOT_JUDGE == 4
    (check,) = json.loads(out.read_text())["context"]["evidence_checks"].values()
    assert check["verdict"] == "cannot_judge" and "no_kernels" in check["problems"]
    out = capsys.readouterr().out
    assert "cannot judge" in out and "no findings" not in out  # not also "nothing above the report floor"


def _cut_as_the_profile_is_read(tmp_path, monkeypatch) -> tuple[dict, list, str]:
    """diagnose of one config, Ctrl-C as its stored profile is read (counting its FLOPs): exit 130, the 1-of-1 line;
    the --json document's context and findings, and the --markdown."""
    from surrobench.api import diagnose as api_diagnose

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api_diagnose, "count_op_costs", interrupted)
    db, out, md = tmp_path / "r.db", tmp_path / "d.json", tmp_path / "d.md"
    argv = ["diagnose", "--model", "scenario:groupnorm-large", "--shape", "32", "--batch", "1", "--device", "cpu"]
    argv += ["--iters", "17", "--warmup", "1", "--trace-out", str(tmp_path / "tr"), "--db", str(db)]
    assert run_cli([*argv, "--json", str(out), "--markdown", str(md)]) == 130
    doc = json.loads(out.read_text())
    return doc["context"], doc["findings"], md.read_text()


def test_ctrl_c_as_a_profile_is_read_reads_it_from_the_store(tmp_path, capsys, monkeypatch):
    """The partial document reads the profile stored as ``diagnose --run`` does: its findings, never "no finding"
    for a config counted profiled."""
    import surrobench

    context, findings, md = _cut_as_the_profile_is_read(tmp_path, monkeypatch)
    assert "1 of 1 profiled" in capsys.readouterr().err
    stored = surrobench.diagnose(run=context["run_id"], db=tmp_path / "r.db")
    assert context["profiled"] == [stored.findings[0].config] and findings
    assert [(f["kind"], f["config"]) for f in findings] == [(f.kind, f.config) for f in stored.findings]
    assert context["evidence_checks"][context["profiled"][0]]["verdict"] != "cannot_judge"
    assert "no finding" not in md


def test_a_profile_not_read_as_diagnose_is_cut_cannot_be_judged(tmp_path, monkeypatch):
    """Its stored profile unreadable too: the config is not counted profiled, "cannot judge", not "no finding"."""
    from surrobench.api import diagnose as api_diagnose

    monkeypatch.setattr(api_diagnose, "load_op_table", lambda *args: 1 / 0)
    context, findings, md = _cut_as_the_profile_is_read(tmp_path, monkeypatch)
    (label,) = context["evidence_checks"]
    assert context["profiled"] == [] and context["evidence_checks"][label]["problems"] == ["not_profiled"]
    assert all(f["config"] != label or f["kind"] in {"superlinear_scaling", "memory_pressure"} for f in findings)
    assert f"{label}: no finding" not in md and "not profiled" in md


def test_the_host_headline_names_the_hottest_function_by_self_time_not_the_steps_wrapper():
    from surrobench.report.findings import system_lines

    wrapper = {"function": "eager_step.<locals>.step", "share": 0.95, "self_share": 0.01}
    view = {
        "cpu_utilization": 0.98,
        "ipc": None,
        "hotspots": [wrapper, {"function": "addmm", "share": 0.4, "self_share": 0.4}],
    }
    (line,) = system_lines({"cfg": view})
    assert "addmm" in line and "eager_step" not in line
    (bare,) = system_lines({"cfg": {"hotspots": []}})  # no samples: no function named
    assert "hottest" not in bare
