"""optimize warns when its in-process baseline and the baseline of its fresh processes differ by the paired rule
(:meth:`surrobench.results.optimize.ConfigOptimization.drift_warning`), naming the likely cause."""

from __future__ import annotations

import numpy as np

from surrobench.records.run import ConfigResult
from surrobench.results.optimize import ConfigOptimization
from surrobench.tune.config import _baseline_drift
from surrobench.tune.fresh import ProcessWindows


def _rounds(ms: float, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    return (ms * (1 + 0.02 * rng.standard_normal((6, 20)))).tolist()


def _entry(in_process_ms: float, fresh_ms: float) -> ConfigOptimization:
    base = ConfigResult("m", "64", (1, 3, 64, 64), 1, "fp32", "cpu", "eager", "ok", None, 1, 20)
    fresh = ProcessWindows(
        1, tuple(map(tuple, _rounds(fresh_ms, 1))), tuple(map(tuple, _rounds(1.0, 2))), (), None, 1.0
    )
    return ConfigOptimization(baseline=base, baseline_drift=_baseline_drift(_rounds(in_process_ms, 0), fresh))


def test_a_baseline_that_ran_3x_faster_in_process_than_fresh_is_a_warning_naming_the_allocator():
    entry = _entry(2.685, 10.5)  # the fresh-user trial's figures, ms
    assert entry.baseline_drift.slower() and entry.baseline_drift.median < 0.3
    warning = entry.drift_warning()
    assert warning is not None and "allocator" in warning and entry.baseline.label() in warning
    assert entry.to_json()["baseline_drift"]["median"] == entry.baseline_drift.median


def test_a_baseline_within_the_noise_is_no_warning_and_none_without_fresh_processes():
    assert _entry(5.0, 5.0).drift_warning() is None
    assert _baseline_drift(_rounds(5.0, 0), None) is None
