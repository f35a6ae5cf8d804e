"""``timeout_s``: a config over its limit ends ``timeout`` with what it measured, and the sweep goes on; a
forward that sleeps inside one call is stopped mid-call (execution.deadline)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch
from conftest import TinySurrogate, exec_config

from surrobench.errors import UsageError
from surrobench.api.benchmark import sweep_request
from surrobench.execution.deadline import ConfigTimeout, deadline
from surrobench.execution.runner import prepare_model, run_config


class Sleeps(torch.nn.Module):
    """Sleeps ``first_s`` in its first call and ``each_s`` in every later one."""

    def __init__(self, first_s: float, each_s: float):
        super().__init__()
        self.first_s, self.each_s, self.calls = first_s, each_s, 0

    def forward(self, x):
        self.calls += 1
        time.sleep(self.first_s if self.calls == 1 else self.each_s)
        return x * 2


def _run(module: torch.nn.Module, timeout_s: float, **fields):
    prepared = prepare_model(TinySurrogate(lambda: module), "cpu", 0)
    return run_config(exec_config(**fields), prepared, timeout_s=timeout_s)


def test_a_config_over_its_limit_keeps_the_timed_calls_that_finished():
    result = _run(Sleeps(0.0, 0.05), timeout_s=0.5, warmup=0, iters=40)
    kept = result.extra["timed_calls"]
    assert result.status == "timeout" and 1 <= kept < 40 and len(result.samples_ms) == kept
    assert result.latency_ms.median >= 50 and result.cold_start_ms is not None
    assert f"{kept} of 40" in result.error and result.extra["timeout_s"] == 0.5


def test_a_forward_that_hangs_in_one_call_is_stopped_mid_call():
    module = Sleeps(600.0, 0.0)
    result = _run(module, timeout_s=0.3)
    assert result.status == "timeout" and module.calls == 1 and result.samples_ms == ()
    assert "in the first call" in result.error and result.latency_ms is None


def test_no_limit_and_a_config_within_it_are_untouched():
    assert _run(Sleeps(0.0, 0.0), timeout_s=30.0).status == "ok"
    assert _run(Sleeps(0.0, 0.0), timeout_s=None).status == "ok"


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), "5", True])
def test_a_limit_that_is_not_a_positive_number_of_seconds_is_refused(bad):
    with pytest.raises(UsageError, match="timeout"):
        sweep_request("pinn-mlp", timeout_s=bad)


def test_a_limit_hit_after_the_first_call_with_no_warm_up_names_the_input_sets_check():
    torch.set_num_threads(1)
    module = Sleeps(0.0, 600.0)  # the first call returns, the next (input set 2's check) hangs
    result = _run(module, timeout_s=0.3, warmup=0, iters=5, input_sets=2)
    assert result.status == "timeout" and result.extra["timeout_phase"] == "input_sets_check"
    assert result.cold_start_ms is not None and result.extra["timed_calls"] == 0


@pytest.mark.parametrize("calls", [1, 3])
def test_ctrl_c_keeps_the_timed_calls_that_finished_as_a_timeout_does(calls):
    """A before_each that raises KeyboardInterrupt before timed call ``calls + 1``: the config goes on with the
    exception, ``interrupted``, with the ``calls`` timed before it (one call too: its statistics from one)."""
    seen = []

    def before_each():
        seen.append(1)
        if len(seen) > calls:
            raise KeyboardInterrupt

    prepared = prepare_model(TinySurrogate(lambda: Sleeps(0.0, 0.0)), "cpu", 0)
    with pytest.raises(KeyboardInterrupt) as cut:
        run_config(exec_config(warmup=0, iters=50), prepared, before_each)
    kept = cut.value.cut_result
    assert kept.status == "interrupted" and kept.extra["timed_calls"] == calls == len(kept.samples_ms)
    assert kept.latency_ms is not None and kept.extra["timeout_phase"] == "timed" and kept.extra["timeout_s"] is None
    assert f"{calls} of 50" in kept.error


def _sleeper(marker: str, spawn: bool = False) -> list[str]:
    """A python process sleeping 30 s, ``marker`` in its command line; with ``spawn``, it first starts one more
    like it (a grandchild of the test) and prints that one's pid."""
    code = "import time; time.sleep(30)"
    if spawn:
        code = (
            "import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(30)', sys.argv[1]]); print(child.pid, flush=True); time.sleep(30)"
        )
    return [sys.executable, "-c", code, marker]


def _gone(pid: int) -> bool:
    """Whether ``pid`` ended (a zombie or no longer listed)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_cut_kills_torch_compiles_workers_and_resets_its_pool(monkeypatch):
    """A cut leaves no compile worker behind (child or grandchild) and resets torch's pool; other children live."""
    shutdowns = []
    pool = types.SimpleNamespace(shutdown_compile_workers=lambda: shutdowns.append(True))
    monkeypatch.setitem(sys.modules, "torch._inductor.async_compile", pool)
    worker = subprocess.Popen(
        _sleeper("torch/_inductor/compile_worker/__main__.py", spawn=True), stdout=subprocess.PIPE
    )
    other = subprocess.Popen(_sleeper("not-a-worker"))
    try:
        grandchild = int(worker.stdout.readline())
        with deadline(0.5, "test"):
            pass
        assert not shutdowns and worker.poll() is None  # no cut: untouched
        with pytest.raises(ConfigTimeout), deadline(0.05, "test"):
            time.sleep(5)
        assert shutdowns == [True] and worker.wait(5) == -signal.SIGKILL
        for _ in range(100):
            if _gone(grandchild):
                break
            time.sleep(0.05)
        assert _gone(grandchild) and other.poll() is None
    finally:
        for process in (worker, other):
            process.kill()
            process.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_cut_reads_processes_whose_names_are_not_utf8(monkeypatch, tmp_path):
    """A process named with bytes that are not UTF-8 (``/proc/PID/stat`` holds its name) leaves the cut a timeout."""
    monkeypatch.setitem(sys.modules, "torch._inductor.async_compile", types.SimpleNamespace())
    link = os.path.join(os.fsencode(tmp_path), b"\xffsleep")
    os.symlink(b"/bin/sleep", link)
    other = subprocess.Popen([link, "30"])
    try:
        time.sleep(0.1)  # the exec has renamed it
        with pytest.raises(ConfigTimeout), deadline(0.05, "test"):
            time.sleep(5)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
