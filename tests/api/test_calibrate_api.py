"""``surrobench.calibrate``: the ceilings measured, stored for this machine, and the sizes refused first."""

from __future__ import annotations

import math

import pytest
import torch

import surrobench
from surrobench.execution.env import fingerprint
from surrobench.results.ceilings import load_ceilings


def test_calibrate_stores_what_it_returns():
    ceilings, path = surrobench.calibrate("cpu", matmul_n=256, copy_mib=16, iters=2)
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
