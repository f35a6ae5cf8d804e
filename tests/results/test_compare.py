"""The comparison library on synthetic samples whose answer is known by construction."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synthetic import config, latency_samples, run

from surrobench.errors import UsageError
from surrobench.results.compare import (
    PAIRED_UNITS_KEY,
    compare_config,
    compare_runs,
    diff_ops,
    gate_failed,
    match_configs,
)
from surrobench.records.schemas import COMPARE as COMPARE_SCHEMA
from surrobench.records.paired import PairedSamples


def test_identical_samples_are_unchanged():
    s = latency_samples(2.0, 0.01)
    c = compare_config(config(s), config(s))
    assert c.verdict == "unchanged"
    assert c.median_ratio.ratio == 1.0
    lo, hi = c.median_ratio.ci95
    assert lo <= 1.0 <= hi and hi - lo < 0.01
    assert c.speedup.median == 1.0 and not c.speedup.faster() and not c.speedup.slower()


def test_ten_percent_slower_with_low_noise_regresses():
    c = compare_config(config(latency_samples(2.0, 0.01, seed=1)), config(latency_samples(2.2, 0.01, seed=2)))
    assert c.verdict == "regressed"
    assert c.median_ratio.ratio == pytest.approx(1.10, abs=0.01)
    assert c.median_ratio.ci95[0] > 1.02 and c.speedup.slower()
    assert c.p95_ratio.ratio == pytest.approx(1.10, abs=0.02)


def test_ten_percent_faster_with_low_noise_improves():
    c = compare_config(config(latency_samples(2.0, 0.01, seed=1)), config(latency_samples(1.8, 0.01, seed=2)))
    assert c.verdict == "improved"
    assert c.median_ratio.ci95[1] < 0.98


def test_one_percent_shift_is_unchanged_only_where_its_interval_is_inside_the_band():
    """With 2% noise the interval of a 1% shift lies inside the 2% band; with 5% noise it reaches past it."""
    c = compare_config(config(latency_samples(2.0, 0.02, seed=1)), config(latency_samples(2.02, 0.02, seed=2)))
    assert c.verdict == "unchanged"
    c = compare_config(config(latency_samples(2.0, 0.05, seed=1)), config(latency_samples(2.02, 0.05, seed=2)))
    assert c.verdict == "inconclusive" and c.speedup.ci95[0] < 1 / 1.02


def test_resolved_but_below_threshold_is_unchanged():
    # 1% shift with 0.1% noise: the interval excludes 1, but the change is under the 2% threshold.
    c = compare_config(config(latency_samples(2.0, 0.001, seed=1)), config(latency_samples(2.02, 0.001, seed=2)))
    assert c.median_ratio.ci95[0] > 1.0 and c.verdict == "unchanged"
    # The same samples with a 0.5% threshold regress.
    c = compare_config(
        config(latency_samples(2.0, 0.001, seed=1)), config(latency_samples(2.02, 0.001, seed=2)), threshold=0.005
    )
    assert c.verdict == "regressed"


def test_large_but_uncertain_shift_is_inconclusive_in_verdict_and_note():
    # 5% shift, 20% noise, 10 samples: beyond the threshold as a point estimate, not as an interval.
    c = compare_config(config(latency_samples(2.0, 0.2, n=10, seed=3)), config(latency_samples(2.1, 0.2, n=10, seed=4)))
    assert abs(c.median_ratio.ratio - 1) > c.speedup.margin()
    assert c.verdict == "inconclusive" and c.to_json()["verdict"] == "inconclusive"
    assert any(n.startswith("inconclusive") for n in c.notes)


def test_a_verdict_never_contradicts_its_note():
    """The H200 case: a median ratio 0.021 away from 1 with a wide interval was labelled "unchanged" while its
    note said "inconclusive". A verdict and a note now come from one rule: the note, in the rule's words of its
    numbers (Speedup.words: "slower, within the margin" as optimize says it), exists iff the verdict is inconclusive."""
    rng = np.random.default_rng(0)
    base = np.concatenate([rng.normal(1.0, 0.01, 37), rng.normal(130.0, 1.0, 39)])  # median in the slow mode
    cases = [(base, rng.normal(1.0, 0.01, 76))] + [
        (latency_samples(2.0, noise, n=n, seed=seed), latency_samples(2.0 * shift, noise, n=n, seed=seed + 1))
        for seed, (noise, n, shift) in enumerate(
            [(0.2, 10, 1.05), (0.05, 30, 1.021), (0.01, 100, 1.021), (0.3, 12, 0.9)]
        )
    ]
    for b, n in cases:
        c = compare_config(config(list(b)), config(list(n)))
        noted = any(note.startswith(f"{c.speedup.words()[0]}: ") for note in c.notes)  # the rule's own words
        assert noted == (c.verdict == "inconclusive")


def test_small_samples_flag_p95():
    c = compare_config(config(latency_samples(2.0, 0.01, n=20)), config(latency_samples(2.0, 0.01, n=20, seed=5)))
    assert not c.p95_trustworthy and any("P95 from 20 samples" in n for n in c.notes)
    c = compare_config(config(latency_samples(2.0, 0.01, n=60)), config(latency_samples(2.0, 0.01, n=60, seed=5)))
    assert c.p95_trustworthy and not any("P95" in n for n in c.notes)


def test_failed_configs():
    ok = config(latency_samples(2.0, 0.01))
    oom = config((), status="oom")
    assert compare_config(ok, oom).verdict == "regressed"
    assert compare_config(oom, ok).verdict == "improved"
    both = compare_config(oom, oom)
    assert both.verdict == "not_compared" and both.median_ratio is None
    cut = config(latency_samples(2.0, 0.01, n=3), status="interrupted")  # Ctrl-C after 3 calls: no regression
    assert compare_config(ok, cut).verdict == compare_config(cut, ok).verdict == "not_compared"


def test_memory_and_top_op_ratios():
    s = latency_samples(2.0, 0.01)
    fft = {"name": "aten::_fft_r2c", "share": 0.4}
    c = compare_config(
        config(s, peak_mem_bytes=100 << 20, top_op=fft),
        config(s, peak_mem_bytes=150 << 20, top_op={**fft, "share": 0.2}),
    )
    assert c.peak_mem_ratio == 1.5 and c.top_op_share_ratio == 0.5
    # a CPU RSS growth under 1 MiB is the heap's page reuse: no ratio over it (0.1 -> 117.5 MiB read 791x)
    assert (
        compare_config(config(s, peak_mem_bytes=100 << 10), config(s, peak_mem_bytes=117 << 20)).peak_mem_ratio is None
    )
    other = compare_config(config(s, top_op=fft), config(s, top_op={"name": "aten::conv2d", "share": 0.2}))
    assert other.top_op_share_ratio is None


def test_matching_lists_unmatched_configs_on_both_sides():
    s = latency_samples(1.0, 0.01)
    base = [config(s, size=64), config(s, size=128), config(s, size=64, batch=4)]
    new = [
        config(s, size=64),
        config(s, size=256),
        config(s, size=64, mode="cudagraph"),
        config(s, size=64, batch=4, precision="fp16"),
    ]
    pairs, only_base, only_new = match_configs(tuple(base), tuple(new))
    assert [(b.key(), n.key()) for b, n in pairs] == [(base[0].key(), new[0].key())]
    assert [r.key() for r in only_base] == [base[1].key(), base[2].key()]
    assert [r.key() for r in only_new] == [r.key() for r in new[1:]]


def test_compare_runs_env_mismatch_and_differences():
    s = latency_samples(1.0, 0.01)
    base = run("a", [config(s, extra={"cudnn_benchmark": False, "matmul_allow_tf32": False})], device_name="GPU A")
    new = run(
        "b",
        [config(s, extra={"cudnn_benchmark": True, "matmul_allow_tf32": False})],
        device_name="GPU B",
        env={"torch": "2.14.0"},
    )
    with pytest.raises(UsageError, match="^allow_env_mismatch: runs "):
        compare_runs(base, new)
    cmp = compare_runs(base, new, allow_env_mismatch=True)
    diff = {d.key: (d.base, d.new) for d in cmp.env_diff}
    assert diff == {
        "device_name": ("GPU A", "GPU B"),
        "torch": ("2.13.0", "2.14.0"),
        "config.cudnn_benchmark": ("False", "True"),
    }
    assert cmp.env_diff[0].key == "device_name"
    # a setting recorded for the run and for each config is listed once; a measurement is no setting (page faults
    # too: a fresh-user trial saw them listed as environment differences of an A/A pair)
    measured = {"host_submit_ms": 0.2, "load_1m": 1.5, "usable_cpus": 2, "minor_faults_per_call": 5.3}
    measured["measured_remedies"] = [{"remedy": "compile", "verdict": "slower"}]  # what diagnose measured
    base = run("a", [config(s, extra={"cudnn_benchmark": False, **measured})], env={"cudnn_benchmark": False})
    measured = {"host_submit_ms": 0.3, "load_1m": 3.0, "usable_cpus": 4, "minor_faults_per_call": 0.5}
    measured["measured_remedies"] = [{"remedy": "compile", "verdict": "faster"}]
    new = run("b", [config(s, extra={"cudnn_benchmark": True, **measured})], env={"cudnn_benchmark": True})
    assert [d.key for d in compare_runs(base, new).env_diff] == ["cudnn_benchmark"]


def test_compare_runs_json_and_gate():
    fast, slow = latency_samples(1.0, 0.01, seed=1), latency_samples(1.2, 0.01, seed=2)
    base = run("a", [config(fast, size=64), config(fast, size=128), config(fast, size=32)])
    new = run("b", [config(fast, size=64), config(slow, size=128), config(fast, size=256)])
    cmp = compare_runs(base, new)
    assert [c.verdict for c in cmp.configs] == ["unchanged", "regressed"]
    assert gate_failed(cmp) and cmp.verdict_counts["regressed"] == 1
    data = json.loads(json.dumps(cmp.to_json()))
    assert data["schema"] == COMPARE_SCHEMA
    assert data["configs"][1]["median_ratio"]["ratio"] == pytest.approx(1.2, abs=0.01)
    assert [o["input_shape"] for o in data["only_base"]] == [[1, 3, 32, 32]]
    assert [o["input_shape"] for o in data["only_new"]] == [[1, 3, 256, 256]]
    assert not gate_failed(compare_runs(base, base))


def test_one_model_file_spelled_two_ways_is_named_when_its_configs_do_not_match():
    from surrobench.report.comparison import summary_line

    s = latency_samples(1.0, 0.01)
    base = run("a", [config(s, model="models.py:sfno"), config(s, model="other.py:sfno", size=32)])
    new = run("b", [config(s, model="../models.py:sfno"), config(s, model="./other.py:sfno", size=16)])
    cmp = compare_runs(base, new)
    assert not cmp.configs and cmp.respelled == (("models.py:sfno", "../models.py:sfno"),)  # other.py: shapes differ
    assert json.loads(json.dumps(cmp.to_json()))["respelled"] == [["models.py:sfno", "../models.py:sfno"]]
    line = summary_line(cmp)
    assert all(repr(name) in line for name in cmp.respelled[0])  # the two spellings, as the record has them
    # stored labels are matched as they are: the same spelling still pairs, other zoo names are never respelled
    same = compare_runs(base, run("c", [config(s, model="models.py:sfno"), config(s, model="fno2d")]))
    assert len(same.configs) == 1 and same.respelled == ()
    with pytest.raises(UsageError, match="no config in common"):
        gate_failed(cmp)


@pytest.mark.parametrize("threshold", [-0.1, 1.0, "0.05", None, True])
def test_bad_threshold_is_a_usage_error_naming_the_parameter(threshold):
    r = run("a", [])
    with pytest.raises(UsageError, match="^threshold"):
        compare_runs(r, r, threshold=threshold)


def test_op_diff_orders_by_absolute_change_and_keeps_one_sided_ops():
    deltas = diff_ops({"fft": 1.0, "conv": 2.0, "gone": 0.3}, {"fft": 0.5, "conv": 2.1, "new_kernel": 0.2})
    assert [d.name for d in deltas] == ["fft", "gone", "new_kernel", "conv"]
    fft, gone, added = deltas[0], deltas[1], deltas[2]
    assert fft.delta_ms == -0.5 and fft.ratio == 0.5
    assert gone.new_ms is None and gone.delta_ms == -0.3 and gone.ratio is None
    assert added.base_ms is None and added.delta_ms == 0.2


def test_op_tables_flow_into_config_comparisons():
    s = latency_samples(1.0, 0.01)
    base, new = run("a", [config(s)]), run("b", [config(s)])
    key = base.results[0].key()
    cmp = compare_runs(base, new, base_ops={key: {"fft": 1.0}}, new_ops={key: {"fft": 0.8}})
    assert [(d.name, d.delta_ms) for d in cmp.configs[0].op_deltas] == [("fft", pytest.approx(-0.2))]
    assert compare_runs(base, new, base_ops={key: {"fft": 1.0}}).configs[0].op_deltas == ()


def test_ignoring_the_mode_matches_eager_with_cudagraph():
    s = latency_samples(1.0, 0.01)
    base = (config(s, mode="eager", size=64), config(s, mode="eager", size=128))
    new = (config(latency_samples(0.5, 0.01, seed=3), mode="cudagraph", size=64),)
    pairs, only_base, only_new = match_configs(base, new)
    assert not pairs and len(only_base) == 2 and len(only_new) == 1
    pairs, only_base, only_new = match_configs(base, new, ("mode",))
    assert [(b.mode, n.mode, b.input_shape) for b, n in pairs] == [("eager", "cudagraph", (1, 3, 64, 64))]
    assert [r.input_shape[-1] for r in only_base] == [128] and not only_new
    cmp = compare_runs(run("a", base), run("b", new), ignore_fields=("mode",))
    assert cmp.configs[0].verdict == "improved"
    with pytest.raises(UsageError, match="ignore_fields batch"):
        match_configs(base, new, ("batch",))
    by_text = compare_runs(run("a", base), run("b", new), ignore_fields="mode")  # the CLI's comma-separated text
    assert [c.verdict for c in by_text.configs] == ["improved"]
    with pytest.raises(UsageError, match="ignore_fields batch"):
        compare_runs(run("a", base), run("b", new), ignore_fields="mode, batch")
    for wrong in (None, 5, b"mode", [5]):
        with pytest.raises(UsageError, match="^ignore_fields"):
            compare_runs(run("a", base), run("b", new), ignore_fields=wrong)


@pytest.mark.parametrize("rounds", [1, 2, 4])
def test_a_verdict_from_fewer_rounds_than_a_gate_needs_says_how_to_confirm_it(rounds):
    from synthetic import config, latency_samples

    from surrobench.results.compare import MIN_GATE_ROUNDS, compare_config

    extra = {"rounds": rounds}
    confirm = f"{MIN_GATE_ROUNDS} rounds or more"
    base = config(latency_samples(1.0, 0.01, n=40, seed=1), extra=extra)
    c = compare_config(base, config(latency_samples(1.2, 0.01, n=40, seed=2), extra=extra))
    assert c.verdict == "regressed"
    assert any(confirm in n for n in c.notes) == (rounds < MIN_GATE_ROUNDS)
    same = compare_config(base, config(latency_samples(1.0, 0.01, n=40, seed=3), extra=extra))
    assert not any(confirm in n for n in same.notes)


@pytest.mark.parametrize("factor", [1.01, 1.3, 0.7, 1.03])
def test_compare_and_optimize_agree_on_the_same_pair(factor):
    """A pair timed together in two windows of three rounds (as optimize stores its baseline and recipe): compare's
    verdict is the rule's verdict on optimize's record of the same rounds."""
    rng = np.random.default_rng(int(factor * 100))
    drift = [1.0, 1.03, 0.97, 1.02, 0.99, 1.0]
    base = [list(10.0 * d * (1 + 0.01 * rng.standard_normal(20))) for d in drift]
    cand = [list(10.0 / factor * d * (1 + 0.01 * rng.standard_normal(20))) for d in drift]
    units = {PAIRED_UNITS_KEY: [[0, i // 3] for i in range(6)], "rounds": 6}
    c = compare_config(
        config([s for r in base for s in r], extra=units), config([s for r in cand for s in r], extra=units)
    )
    optimize = PairedSamples.interleaved(base, cand, windows=[i // 3 for i in range(6)]).speedup()
    assert c.speedup == optimize
    assert (c.verdict == "improved") == optimize.faster() and (c.verdict == "regressed") == optimize.slower()


def test_a_pair_that_ran_with_other_settings_says_which():
    """channels_last, the thread count, the compile mode and cudnn.benchmark are outside the config key, so the
    table cannot show them: a note names both sides, and only where they differ."""
    s = latency_samples(1.0, 0.01)
    plain, last = config(s), config(s, extra={"channels_last": True, "cudnn_benchmark": True})
    cmp = compare_runs(run("a", [plain]), run("b", [last]))
    assert cmp.configs[0].notes[0] == "settings differ: BASE eager, NEW eager channels_last cudnn_benchmark"
    assert not any(
        n.startswith("settings differ") for n in compare_runs(run("a", [last]), run("b", [last])).configs[0].notes
    )
    threads = config(s, mode="cudagraph", extra={"threads": 1})
    cmp = compare_runs(run("a", [plain]), run("b", [threads]), ignore_fields="mode")
    assert cmp.configs[0].notes[0] == "settings differ: BASE eager, NEW cudagraph threads=1"


def test_a_pair_timed_while_other_processes_kept_the_cpus_busy_says_so():
    """As a trial stored it: BASE timed with about 1.0 of 2 usable CPUs busy with other processes, NEW on a quiet
    host, the same code 1.8x "faster": the verdict stands, marked contended, and the headline counts it apart."""
    from surrobench.report.comparison import summary_line

    busy, quiet = ({"usable_cpus": 2, "torch_threads": 1, "other_cpus": others} for others in (0.98, 0.0))
    base = run(
        "a", [config(latency_samples(17.2, 0.01, seed=1), extra=busy), config(latency_samples(2.0, 0.01), size=32)]
    )
    new = run(
        "b", [config(latency_samples(9.3, 0.01, seed=2), extra=quiet), config(latency_samples(2.0, 0.01), size=32)]
    )
    contended, calm = compare_runs(base, new).configs
    assert contended.verdict == "improved" and contended.contended == {"base": 0.98, "new": 0.0}
    assert calm.contended is None and json.loads(json.dumps(contended.to_json()))["contended"]["base"] == 0.98
    assert "1 on a busy host" in summary_line(compare_runs(base, new))
    assert compare_runs(new, new).configs[0].contended is None


def test_the_verdict_cell_of_a_pair_timed_on_a_busy_host_says_so():
    """A fresh-user trial: both configs regressed with other processes busy, and the table's verdict cells read a
    plain ``regressed``; the terminal's and the markdown's cell is marked, the JSON's verdict stays the word."""
    from surrobench.report.comparison import comparison_markdown, comparison_rows, comparison_tables

    quiet, busy = ({"usable_cpus": 2, "torch_threads": 1, "other_cpus": others} for others in (0.1, 1.7))
    base = run(
        "a", [config(latency_samples(7.0, 0.01, seed=1), extra=quiet), config(latency_samples(2.0, 0.01), size=32)]
    )
    new = run(
        "b", [config(latency_samples(26.0, 0.01, seed=2), extra=busy), config(latency_samples(2.0, 0.01), size=32)]
    )
    cmp = compare_runs(base, new)
    contended = cmp.configs[0]
    assert (contended.verdict, contended.contended) == ("regressed", {"base": 0.1, "new": 1.7})
    assert contended.to_json()["verdict"] == "regressed"
    cells = [row["verdict"] for row in comparison_rows(cmp)]
    assert cells[0] == "regressed (busy host)" and "busy host" not in cells[1]
    assert "| regressed (busy host) |" in comparison_markdown(cmp)
    verdicts = next(list(c.cells) for c in comparison_tables(cmp, width=400)[0].columns if c.header == "verdict")
    assert "busy host" in str(verdicts[0]) and "busy host" not in str(verdicts[1])
