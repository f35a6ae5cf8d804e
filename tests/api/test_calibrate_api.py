"""``surrobench.calibrate``: the ceilings measured, stored for this machine, and the sizes refused first."""

from __future__ import annotations

import math

import pytest
import torch

import surrobench
from surrobench.api.calibrate import MAX_SPREAD, check_calibration
from surrobench.collect.ceilings import Calibration
from surrobench.execution.env import fingerprint
from surrobench.results.ceilings import load_ceilings


def test_calibrate_stores_what_it_returns():
    # force: a shared test host may be busy, and a busy host is refused (test_busy_or_noisy_...)
    ceilings, path = surrobench.calibrate("cpu", matmul_n=256, copy_mib=16, iters=2, force=True)
    assert path.is_file() and ceilings.device_name == fingerprint("cpu")["device_name"]
    assert ceilings.copy_gbps > 0 and math.isfinite(ceilings.matmul_tflops["fp32"])
    assert load_ceilings(ceilings.device_name, torch.get_num_threads()) == ceilings


@pytest.mark.parametrize(
    ("sizes", "needle"), [({"matmul_n": 8}, "matmul_n 8: must be >= 256"), ({"iters": 0}, "iters 0")]
)
def test_sizes_that_time_overhead_are_refused_before_anything_is_stored(sizes, needle):
    with pytest.raises(surrobench.UsageError, match=needle):
        surrobench.calibrate("cpu", **sizes)
    assert load_ceilings(fingerprint("cpu")["device_name"], torch.get_num_threads()) is None


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"copy_mib": "x"}, "copy_mib"),
        ({"iters": "x"}, "iters"),
        ({"matmul_n": "big"}, "matmul_n"),
        ({"matmul_n": 2.5}, "matmul_n"),
        ({"matmul_n": True}, "matmul_n"),
    ],
)
def test_a_size_that_is_not_an_int_is_named_as_such_before_anything_is_measured(keywords, parameter):
    with pytest.raises(surrobench.UsageError) as bad:
        surrobench.calibrate("cpu", **keywords)
    assert bad.value.parameter == parameter and str(bad.value).startswith(f"{parameter} ")
    assert "must be an int" in str(bad.value)
    assert load_ceilings(fingerprint("cpu")["device_name"], torch.get_num_threads()) is None


def test_force_that_is_not_a_bool_is_refused_before_anything_is_measured(monkeypatch):
    import surrobench.api.calibrate as calibrate_api

    monkeypatch.setattr(calibrate_api, "measure_ceilings", lambda *a, **k: pytest.fail("measured"))
    with pytest.raises(surrobench.UsageError) as bad:
        surrobench.calibrate("cpu", force="no")
    assert bad.value.parameter == "force"


def _calibration(**spreads) -> Calibration:
    ceilings = surrobench.Ceilings("cpu", 20.0, {"fp32": 0.1})
    return Calibration(ceilings, {"copy": 0.01, "matmul:fp32": 0.02, **spreads})


def test_busy_or_noisy_calibrations_are_named_and_quiet_ones_pass():
    quiet = (0.5, 4)
    assert check_calibration(_calibration(), "cpu", quiet, threads=1) == []
    (busy,) = check_calibration(_calibration(), "cpu", (9.0, 4), threads=1)
    assert busy.startswith("busy host") and "9.0" in busy
    assert check_calibration(_calibration(), "cuda", (9.0, 4), threads=1) == []  # device ceilings: spread alone
    (noisy,) = check_calibration(_calibration(copy=3 * MAX_SPREAD), "cuda", quiet, threads=1)
    assert "copy 30%" in noisy and "matmul" not in noisy
