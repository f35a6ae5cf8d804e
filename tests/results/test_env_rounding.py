"""``compare``'s environment differences show floats to 2 decimals (``load_avg_1m`` 1.2138671875 -> 1.21)."""

from __future__ import annotations

from surrobench.results.compare import compare_runs, shown_value
from synthetic import config, latency_samples, run


def test_env_floats_are_shown_to_two_decimals_and_equal_ones_are_not_differences():
    s = latency_samples(1.0, 0.01)
    base = run("a", [config(s)], env={"load_avg_1m": 1.2138671875, "cpu_temp": 40.001, "rounds": 1})
    new = run("b", [config(s)], env={"load_avg_1m": 0.5, "cpu_temp": 40.004, "rounds": 2})
    diff = {d.key: (d.base, d.new) for d in compare_runs(base, new).env_diff}
    assert diff == {"load_avg_1m": ("1.21", "0.5"), "rounds": ("1", "2")}  # 40.001 and 40.004 show as 40.0


def test_shown_value_keeps_small_and_non_float_values_readable():
    assert shown_value(0.0012345) == "0.0012" and shown_value(0.0) == "0.0"
    assert shown_value(True) == "True" and shown_value(3) == "3" and shown_value(None) == "None"
    assert shown_value(float("nan")) == "nan"


def test_a_diagnosis_stored_with_a_run_is_no_environment_difference():
    from surrobench.records.run import WARNINGS_KEY

    s = latency_samples(1.0, 0.01)
    base = run("a", [config(s)], env={"rounds": 1, WARNINGS_KEY: ["the host drifted"]})
    new = run("b", [config(s)], env={"rounds": 1})
    assert compare_runs(base, new).env_diff == ()
