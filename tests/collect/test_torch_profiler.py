"""Schedule checks, the profiled loop on the CPU, the child's config protocol."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import re

import pytest
import torch

from surrobench.collect.child import main as child_main
from surrobench.collect.torch_profiler import ProfileSchedule, _checked, profile_steps
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.execution.ranges import annotated_step
from surrobench.records.ops import OpTable
from surrobench.workload.spec import ShapeSpec
from surrobench.cli.options import usage_line


@pytest.mark.parametrize(
    ("plan", "iters", "message"),
    [
        (ProfileSchedule(2, 5, 0), 50, "schedule.active 0: record at least 1 step"),
        (ProfileSchedule(-1, 5, 10), 50, "schedule.wait -1 schedule.warmup 5: must be >= 0"),
        (
            ProfileSchedule(2, 5, 10),
            16,
            "longer than iters 16; lower schedule.wait, schedule.warmup or schedule.active",
        ),
    ],
)
def test_schedule_check_rejects(plan, iters, message):
    """The library names its parameters; the CLI the flags (tests/cli/test_profile_cli.py)."""
    with pytest.raises(UsageError, match=re.escape(message)) as refused:
        plan.check(iters)
    assert "--" not in str(refused.value) and "--" in usage_line(refused.value)


def test_a_schedule_longer_than_iters_names_each_parameter_that_shortens_it():
    with pytest.raises(UsageError) as refused:
        ProfileSchedule(2, 5, 10).check(16)
    assert set(refused.value.others) == {"iters", "schedule.wait", "schedule.warmup", "schedule.active"}


def test_schedule_check_accepts_exact_fit():
    ProfileSchedule(2, 5, 10).check(17)


def test_profile_steps_records_the_active_steps_and_writes_a_gzip_trace(tmp_path):
    layer = torch.nn.Linear(16, 16)
    x = torch.randn(4, 16)
    step = annotated_step(lambda i: layer(x), "cpu")
    trace = tmp_path / "t.json.gz"
    with torch.inference_mode():
        capture = profile_steps(step, ProfileSchedule(1, 1, 3), "cpu", trace_path=trace)
    assert capture.errors == () and capture.warnings == ()
    assert capture.steps_recorded == 3 and capture.events > 0
    assert len(capture.step_ms) == 5 and len(capture.active_step_ms) == 3
    table = capture.op_table
    assert table.basis == "cpu" and table.active_steps == 3
    assert {op.name for op in table.ops} >= {"aten::addmm", "aten::linear"}
    assert not any(op.name.startswith(("surrobench::", "ProfilerStep")) for op in table.ops)
    addmm = next(op for op in table.ops if op.name == "aten::addmm")
    assert addmm.calls == 3 and addmm.input_shapes and "[4, 16]" in addmm.input_shapes[0]
    names = {e["name"] for e in json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]}
    assert {"surrobench::forward", "surrobench::post_process", "aten::addmm"} <= names


def test_profile_steps_keeps_the_kineto_results_only_when_asked():
    from surrobench.collect import torch_profiler

    kept = len(torch_profiler._KEPT)
    profile_steps(lambda i: torch.ones(4) + i, ProfileSchedule(0, 0, 1), "cpu")
    assert len(torch_profiler._KEPT) == kept
    profile_steps(lambda i: torch.ones(4) + i, ProfileSchedule(0, 0, 1), "cpu", keep=True)
    assert len(torch_profiler._KEPT) == kept + 1 and torch_profiler._KEPT.pop().kineto_results is not None


def test_a_step_of_many_events_records_fewer_steps_and_says_why(monkeypatch):
    """Planted: a step of ~800 events (100 ``aten::select``) against a budget of 200 a step records the minimum 2
    of 5 asked steps, and more of 20 asked; a step of a few events records all 5. The op table divides by the steps
    recorded."""
    from surrobench.collect import torch_profiler

    monkeypatch.setattr(torch_profiler, "STEP_EVENT_BUDGET", 200)
    x = torch.randn(100, 4)
    many = profile_steps(lambda i: [row.sum() for row in x], ProfileSchedule(0, 1, 5), "cpu")
    more = profile_steps(lambda i: [row.sum() for row in x], ProfileSchedule(0, 1, 20), "cpu")
    few = profile_steps(lambda i: x.sum(), ProfileSchedule(0, 1, 5), "cpu")
    assert many.errors == () and many.steps_recorded == 2 and many.op_table.active_steps == 2
    assert len(many.step_ms) == 3 and len(many.active_step_ms) == 2
    assert len(many.warnings) == 1  # why fewer: the budget (its text is for people)
    select = next(op for op in many.op_table.ops if op.name == "aten::select")
    assert select.calls == 200 and many.op_table.ms_per_step()["aten::select"] > 0
    assert more.errors == () and 2 < more.steps_recorded == more.op_table.active_steps < 20  # the budget grows
    assert few.errors == () and few.warnings == () and few.steps_recorded == 5 and few.op_table.active_steps == 5


_CAPTURE = """
from surrobench.collect.torch_profiler import ProfileSchedule, profile_steps
import torch
capture = profile_steps(lambda i: torch.ones(4) + i, ProfileSchedule(0, 0, 2), "cpu")
print(capture.steps_recorded)
"""


def test_kinetos_usdt_lines_stay_off_stderr_unless_the_user_sets_a_level():
    """Kineto writes to file descriptor 2 from C++, past any Python redirection: only a process shows it. The
    two processes (no level, a level the user set) run at once: each spends seconds importing torch."""
    base = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"} | {"OMP_NUM_THREADS": "1"}
    base["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    procs = {
        level: subprocess.Popen(
            [sys.executable, "-c", _CAPTURE],
            env=base | ({"KINETO_LOG_LEVEL": level} if level else {}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for level in (None, "2")
    }
    try:
        for level, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-2000:]
            assert out.split() == ["2"]
            assert ("profiler_start" in err) == (level is not None)
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_checks_report_an_unrecorded_capture_and_missing_cuda_activities():
    plan = ProfileSchedule(1, 1, 2)
    nothing = _checked(
        plan, "cpu", [1.0] * 4, {"events": 0, "steps": 0, "table": None, "kernels": None, "cut": None}, None
    )
    assert any("no events" in e for e in nothing.errors) and nothing.op_table is None
    short = _checked(
        plan, "cpu", [1.0] * 4, {"events": 10, "steps": 1, "table": None, "kernels": None, "cut": None}, None
    )
    assert any("1 ProfilerStep ranges, expected 2" in e for e in short.errors)
    cpu_only = OpTable(ops=(), basis="cpu", total_us=0.0, active_steps=2, source="profiler")
    no_cupti = _checked(
        plan, "cuda", [1.0] * 4, {"events": 10, "steps": 2, "table": cpu_only, "kernels": None, "cut": None}, None
    )
    assert no_cupti.errors == () and "CUPTI" in no_cupti.warnings[0]


def test_config_json_round_trip():
    for shape in (ShapeSpec(size=64), ShapeSpec(full=(2, 3, 32, 32))):
        cfg = ExecConfig("fno2d", shape, 2, "bf16", "cpu", "eager", 3, 20, False, 7, 2)
        assert ExecConfig.from_json(json.loads(json.dumps(cfg.to_json()))) == cfg


def test_child_rejects_a_bad_config_file(tmp_path, capsys):
    bad = tmp_path / "cfg.json"
    bad.write_text("{}")
    assert child_main(["--config", str(bad), "--result", str(tmp_path / "r.json")]) == 2
    assert "--config" in capsys.readouterr().err
