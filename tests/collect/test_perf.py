"""The system-level pass's plumbing: the child's control FIFO relayed to tools, tool failures, missing
tools. The end-to-end run under perf and py-spy is in ``tests/cli/test_perf_cli.py``."""

from __future__ import annotations

from surrobench.collect.perf import PERF_INSTALL, PY_SPY_INSTALL, Tools, run_windowed, system_pass
from surrobench.collect.perf_parse import PERF_EVENTS
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.execution.config import ExecConfig
from surrobench.workload.spec import ShapeSpec


def _cfg(model: str, size: int) -> ExecConfig:
    return ExecConfig(model, ShapeSpec(size=size), 1, "fp32", "cpu", "eager", 1, 4, False, 0, 1)


class _Recorder:
    """A tool that records what the relay asked of it."""

    def __init__(self):
        self.calls: list[str] = []

    def enable(self, root_pid: int) -> None:
        self.calls.append(f"enable {root_pid > 0}")

    def disable(self) -> None:
        self.calls.append("disable")


def test_child_brackets_only_the_active_steps(tmp_path):
    recorder = _Recorder()
    run = run_windowed([], _cfg("pinn-mlp", 64), ProfileSchedule(2, 1, 3), tmp_path, [recorder])
    assert run.child["status"] == "ok" and run.child["warnings"] == []
    assert recorder.calls == ["enable True", "disable"]
    assert len(run.child["step_ms"]) == 6 and len(run.child["active_step_ms"]) == 3
    assert 0 < run.window_ms < run.elapsed_ms
    assert run.window_ms >= sum(run.child["active_step_ms"]) * 0.9


def test_failing_tool_is_a_warning_not_a_hang(tmp_path):
    class Broken(_Recorder):
        def enable(self, root_pid: int) -> None:
            raise RuntimeError("cannot attach")

    run = run_windowed([], _cfg("pinn-mlp", 64), ProfileSchedule(0, 0, 2), tmp_path, [Broken()])
    assert run.child["status"] == "ok"
    assert run.child["warnings"] == ["Broken enable: cannot attach"]


def test_without_tools_the_view_says_how_to_install():
    passed = system_pass(_cfg("pinn-mlp", 64), ProfileSchedule(0, 0, 1), tools=Tools(None, None, False))
    assert passed.child["status"] == "error" and passed.view.hotspots == ()
    assert set(passed.view.unavailable) == set(PERF_EVENTS)
    assert all(PERF_INSTALL in reason for reason in passed.view.unavailable.values())
    assert any(PY_SPY_INSTALL in note for note in passed.notes) and any(PERF_INSTALL in n for n in passed.notes)


def test_a_perf_window_far_slower_than_the_timed_step_is_unreliable(monkeypatch):
    """As a trial read it: 47 steps in 30219 ms under perf and py-spy against a timed median of 43.3 ms (15x)."""
    from synthetic import config

    from surrobench.api import perf as api_perf
    from surrobench.collect.perf import SystemPass
    from surrobench.collect.profile_phase import PerfOptions
    from surrobench.records.system import SystemView

    child = {"status": "ok", "warnings": []}
    monkeypatch.setattr(
        api_perf, "system_pass", lambda *a, **k: SystemPass(SystemView(wall_ms=30219.3), None, None, child, ())
    )
    result = config([43.3] * 5)
    report = api_perf.perf_config(_cfg("pinn-mlp", 64), result, 1, None, PerfOptions(window_s=2.0), "r")
    assert report.steps == 47 and report.step_check.verdict == "unreliable"
    assert report.to_json()["step_check"]["verdict"] == "unreliable"
    fine = api_perf.perf_config(_cfg("pinn-mlp", 64), result, 1, None, PerfOptions(window_s=30.0), "r")
    assert fine.step_check.verdict == "ok"  # 30219 ms over 698 steps of 43.3 ms
