"""The planted-bottleneck suite as a library call (what ``surrobench scenarios`` renders)."""

from __future__ import annotations

import pytest
from gpu_terms import gpu_words

import surrobench
from surrobench.api.scenarios import SUITE_SCHEDULE, run_scenarios
from surrobench.errors import UsageError
from surrobench.records import schemas
from surrobench.results.store import ResultStore


def test_on_the_cpu_gpu_only_scenarios_are_skipped_with_their_reason():
    suite = surrobench.run_scenarios(["tiny-mlp", "gemm-bf16"], device="cpu")
    assert suite.device == "cpu" and not suite.failed
    assert [(o.scenario.name, o.passed) for o in suite.outcomes] == [("tiny-mlp", None), ("gemm-bf16", None)]
    doc = suite.to_json()
    assert doc["schema"] == schemas.SCENARIOS and doc["outcomes"][0]["note"] == "needs a CUDA GPU"
    assert suite.findings == {}


def test_a_scenario_that_runs_is_timed_profiled_diagnosed_and_stored(tmp_path):
    db = tmp_path / "s.db"
    suite = run_scenarios("groupnorm-large", device="cpu", db=db, warmup=1, iters=SUITE_SCHEDULE.total)
    (outcome,) = suite.outcomes
    assert outcome.passed is not None and outcome.note.startswith("run ")
    found = suite.findings["groupnorm-large"]
    assert found and outcome.top_kind == found[0].kind
    texts = " ".join(t for f in found for t in (f.summary, f.action, *(e.text for e in f.evidence)))
    assert gpu_words(texts) == []  # a CPU diagnosis in CPU terms
    with ResultStore(db) as store:
        record = store.load_run(outcome.note.removeprefix("run "))
    assert record.tag == "scenario:groupnorm-large" and [r.input_shape for r in record.results] == [(1, 3, 64, 64)]
    assert record.results[0].top_op is not None  # profiled


def test_bad_input_is_a_usage_error_before_anything_runs():
    with pytest.raises(UsageError, match="unknown scenario nope"):
        run_scenarios("nope", device="cpu")
    with pytest.raises(UsageError):
        run_scenarios("groupnorm-large", device="cpu", iters=SUITE_SCHEDULE.total - 1)


@pytest.mark.parametrize(
    ("keywords", "parameter"),
    [
        ({"iters": "x"}, "iters"),
        ({"iters": 2.5}, "iters"),
        ({"warmup": -1}, "warmup"),
        ({"thresholds": "x"}, "thresholds"),
    ],
)
def test_a_bad_count_or_thresholds_is_named_before_anything_runs(monkeypatch, keywords, parameter):
    import surrobench.api.scenarios as scenarios_api

    monkeypatch.setattr(scenarios_api, "sweep_plan", lambda *a, **k: pytest.fail("planned"))
    with pytest.raises(UsageError) as bad:
        run_scenarios("tiny-mlp", device="cpu", **keywords)
    assert bad.value.parameter == parameter and str(bad.value).startswith(f"{parameter} ")
