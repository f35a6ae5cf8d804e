"""``calibrate(threads=N)``: measured under ``torch.set_num_threads(N)`` and stored for N, the count a CPU run
of N threads reads; diagnose's advice names that count; a refusal names ``force`` and every ceiling's spread."""

from __future__ import annotations

import os

import pytest
import torch

import surrobench
from conftest import run_cli
from surrobench.api import calibrate as calibrate_api
from surrobench.api.calibrate import CalibrationRefused, check_threads
from surrobench.api.diagnose import device_ceilings
from surrobench.cli.options import usage_line
from surrobench.collect.ceilings import Calibration
from surrobench.execution.env import fingerprint
from surrobench.records.ceilings import Ceilings, calibrate_command
from surrobench.results.ceilings import load_ceilings
from synthetic import config, latency_samples, run

NAME = fingerprint("cpu")["device_name"]


@pytest.fixture
def planted(monkeypatch):
    """measure_ceilings replaced: records the torch thread count it ran under; ``spreads`` sets its spreads."""
    seen: dict = {"spreads": {"copy": 0.01, "matmul:fp32": 0.02}}

    def measure(device, *, matmul_n, copy_mib, iters):
        seen["threads"] = torch.get_num_threads()
        return Calibration(Ceilings(NAME, 20.0, {"fp32": 0.5}, "2026-12-01T00:00:00+00:00", "planted"), seen["spreads"])

    monkeypatch.setattr(calibrate_api, "measure_ceilings", measure)
    monkeypatch.setattr(calibrate_api, "host_load", lambda: (None, os.cpu_count() or 1))  # never a busy host
    return seen


def test_threads_are_set_while_measuring_and_key_the_stored_ceilings(planted):
    before = torch.get_num_threads()
    ceilings, _ = surrobench.calibrate("cpu", threads=1)
    assert planted["threads"] == 1 and torch.get_num_threads() == before  # restored
    assert load_ceilings(NAME, 1) == ceilings
    if before != 1:
        assert load_ceilings(NAME, before) is None
    surrobench.calibrate("cpu")  # no threads: torch's own count
    assert planted["threads"] == before and load_ceilings(NAME, before) == ceilings


def test_the_advice_of_an_uncalibrated_thread_count_is_a_command_that_stores_it(planted):
    env = {"device": "cpu", "device_name": NAME, "cpu_count": 2, "torch_threads": 1}
    record = run("20261201-000000-tttt", [config(latency_samples(1.0, 0.01, n=20))], env=env)
    ceilings, note = device_ceilings(record)
    assert ceilings is None and calibrate_command("cpu", 1) in note
    assert calibrate_command("cpu", 1) == "surrobench calibrate --device cpu --threads 1"
    surrobench.calibrate("cpu", threads=1)  # following the advice
    assert device_ceilings(record)[0] is not None


@pytest.mark.parametrize("threads", [0, -1, (os.cpu_count() or 1) + 1, 1.5, True])
def test_bad_thread_counts_are_refused_before_measuring(planted, threads):
    with pytest.raises(surrobench.UsageError) as bad:
        surrobench.calibrate("cpu", threads=threads)
    assert bad.value.parameter == "threads" and "threads" not in planted


def test_threads_do_not_apply_to_cuda():
    assert check_threads("cuda", None) is None
    with pytest.raises(surrobench.UsageError) as bad:
        check_threads("cuda", 1)
    assert bad.value.parameter == "threads"
    assert calibrate_command("cuda", 4) == "surrobench calibrate --device cuda"


def test_a_refusal_names_force_and_every_ceilings_spread_and_stores_nothing(planted):
    planted["spreads"] = {"copy": 0.01, "matmul:fp32": 0.30}
    with pytest.raises(CalibrationRefused) as refused:
        surrobench.calibrate("cpu", threads=1)
    error = refused.value
    assert isinstance(error, surrobench.UsageError)
    assert error.parameter is None and error.others == ("force",)  # force is the way out, not the bad value
    assert error.spreads == {"copy": 0.01, "matmul:fp32": 0.30} and len(error.problems) == 1
    assert not usage_line(error).startswith("--force")
    assert load_ceilings(NAME, 1) is None
    surrobench.calibrate("cpu", threads=1, force=True)
    assert load_ceilings(NAME, 1) is not None


def test_calibrate_threads_on_the_command_line(tmp_path):
    argv = ["calibrate", "--device", "cpu", "--threads", "1", "--matmul-n", "256", "--copy-mib", "16"]
    assert run_cli([*argv, "--iters", "2", "--force"]) == 0  # force: a shared test host may be busy
    assert load_ceilings(NAME, 1) is not None


def test_a_busy_host_seen_at_the_start_is_refused_before_anything_is_measured(planted, monkeypatch):
    cpus = os.cpu_count() or 1
    monkeypatch.setattr(calibrate_api, "host_load", lambda: (10.0 * cpus, cpus))
    with pytest.raises(CalibrationRefused) as refused:
        surrobench.calibrate("cpu", threads=1)
    assert "threads" not in planted  # nothing measured
    assert refused.value.spreads == {} and len(refused.value.problems) == 1
    assert load_ceilings(NAME, 1) is None
    surrobench.calibrate("cpu", threads=1, force=True)  # force measures and stores anyway
    assert planted["threads"] == 1 and load_ceilings(NAME, 1) is not None
