"""A run JSON is validated on read: a crafted file is ``not a surrobench run JSON: key: what``, exit 2."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import config, latency_samples, run

from surrobench.records.run import run_from_json
from surrobench.records.schemas import DocumentError

GOOD = run("20261201-000000-dddd", [config(latency_samples(1.0, 0.01, n=20))]).to_json()


def _with(path: tuple, value) -> dict:
    doc = json.loads(json.dumps(GOOD))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("results", 0, "latency_ms", "median"), float("nan"), r"results\[0\]\.latency_ms\.median: nan is not"),
        (("results", 0, "samples_ms"), [1.0, float("inf")], r"samples_ms\[1\]: inf is not"),
        (("results", 0, "batch"), "1", r"results\[0\]\.batch: expected a whole number >= 1"),
        (("results", 0, "model"), 7, r"results\[0\]\.model: expected a string"),
        (("results", 0, "input_shape"), [1, None], r"input_shape\[1\]"),
        (("results", 0, "mode"), "turbo", r"mode: 'turbo' is not one of"),
        (("results",), {"a": 1}, r"results: expected a list"),
        (("env",), [], r"env: expected an object"),
        (("results", 0, "latency_ms"), None, r"latency_ms: null for an ok config"),
        (("results", 0, "throughput"), None, r"throughput: expected an object"),
    ],
)
def test_crafted_fields_are_named(path, value, message):
    with pytest.raises(DocumentError, match=message):
        run_from_json(_with(path, value))


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    ),
    st.sampled_from(["model", "input_shape", "batch", "latency_ms", "samples_ms", "throughput", "top_op", "error"]),
)
def test_any_value_in_any_field_is_accepted_or_a_run_json_error(value, key):
    try:
        record = run_from_json(_with(("results", 0, key), value))
    except DocumentError:
        return
    record.results[0].label()  # what was accepted is usable


def test_show_compare_report_say_not_a_run_json(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with(("results", 0, "latency_ms", "p95"), "fast")))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GOOD))
    for argv in (
        ["show", str(bad)],
        ["compare", str(good), str(bad)],
        ["report", str(bad), "-o", str(tmp_path / "r.html")],
    ):
        assert run_cli(argv) == 2
        err = capsys.readouterr().err
        assert (
            "not a surrobench run JSON: results[0].latency_ms.p95: expected a number" in err and "Traceback" not in err
        )


def test_show_and_report_of_names_with_markup_and_mathtext(tmp_path, capsys):
    doc = _with(("results", 0, "model"), "[/]$\\undefinedmacro{$<b>\ud800")
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    assert run_cli(["show", str(path), "--markdown", str(tmp_path / "t.md")]) == 0
    assert "[/]$\\undefinedmacro{$<b>" in capsys.readouterr().out
    assert "&lt;b&gt;" in (tmp_path / "t.md").read_text()
    assert run_cli(["report", str(path), str(path), "-o", str(tmp_path / "r.html")]) == 0


def test_multi_rank_rows_are_checked_too():
    placement = {"config": 0, "role": "rank", "rank": 1, "world_size": 2, "host": "h", "device_uuid": None}
    assert run_from_json(_with(("results", 0, "placement"), placement)).results[0].extra["placement"] == placement
    with pytest.raises(DocumentError, match=r"placement\.world_size"):
        run_from_json(_with(("results", 0, "placement"), {**placement, "world_size": "2"}))
    with pytest.raises(DocumentError, match=r"results\[0\]\.comm: expected an object"):
        run_from_json(_with(("results", 0, "comm"), [1]))
