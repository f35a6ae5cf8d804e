"""Traces that used to crash or mislead: every one is loaded with a visible anomaly or refused with one
line (UsageError). Small generated inputs, plus a property-based fuzz of event dicts."""

from __future__ import annotations

import gzip
import json
import os
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kineto_synth import annotation, kernel, launch, write

from surrobench.analysis.timeline import analyze_timeline
from surrobench.errors import UsageError
from surrobench.trace import kineto_json, load_trace, source

BIG = [2**63, 2**63 + 5, 1e30, -(2**63) - 1]


def one_line_error(path, match=None):
    with pytest.raises(UsageError, match=match) as info:
        load_trace(path)
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("value", BIG)
@pytest.mark.parametrize("field", ["correlation", "stream", "device", "External id"])
def test_ids_out_of_range_are_counted_not_crashed(tmp_path, field, value):
    events = launch(0, 2, 1, 5, 3) + launch(10, 2, 2, 15, 3)
    events[0 if field == "External id" else 1]["args"][field] = value  # a field its table reads
    tl = load_trace(write(tmp_path / "t.json", events))
    assert tl.meta.anomalies == {"values_out_of_range": 1}
    report = analyze_timeline(tl)
    assert report.anomalies.trace == {"values_out_of_range": 1}


@pytest.mark.parametrize("value", BIG)
def test_tid_and_rank_out_of_range(tmp_path, value):
    events = launch(0, 2, 1, 5, 3)
    events[0]["tid"] = value
    assert load_trace(write(tmp_path / "t.json", events)).meta.anomalies == {"values_out_of_range": 1}
    one_line_error(
        write(tmp_path / "r.json", events, distributedInfo={"rank": int(min(abs(value), 2**70))}), "out of range"
    )


def test_profiler_step_with_a_20_digit_number_is_a_plain_range(tmp_path):
    events = [annotation("ProfilerStep#" + "9" * 20, 0, 10), annotation("ProfilerStep#3", 20, 10)]
    tl = load_trace(write(tmp_path / "t.json", events + launch(0, 1, 1, 2, 1)))
    assert tl.steps.step.tolist() == [3] and len(tl.ranges) == 1


@pytest.mark.parametrize("name", [7, None, 1.5, ["a"], {"b": 1}, True, "[/]", "\ud800", "[bold]x"])
def test_names_of_any_json_type_are_text(tmp_path, name):
    events = launch(0, 2, 1, 5, 3)
    events[1]["name"] = name
    events[0]["name"] = name
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))  # ensure_ascii: a lone surrogate stays an escape
    tl = load_trace(path)
    assert all(isinstance(n, str) for n in tl.names)
    analyze_timeline(tl)


@pytest.mark.parametrize(
    "args",
    [
        {"correlation": [1, 2]},
        {"correlation": {"a": 1}},
        {"correlation": "7"},
        {"correlation": 2.5},
        {"device": -5},
        [1, 2],
        "text",
        None,
    ],
)
def test_args_of_odd_types(tmp_path, args):
    events = launch(0, 2, 1, 5, 3)
    events[1]["args"] = args
    tl = load_trace(write(tmp_path / "t.json", events))
    assert len(tl.kernels) == 1
    analyze_timeline(tl)


def test_deep_nesting_is_an_error_not_a_recursion_crash(tmp_path):
    deep = "[" * 5000 + "]" * 5000
    for i, text in enumerate(
        [
            '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "args": ' + deep + "}]}",
            '{"meta": ' + deep + ', "traceEvents": []}',
            '{"traceEvents": [], "meta": ' + deep + "}",
            '{"a": ' + deep.replace("[", '{"x":').replace("]", "}")[:-1] + "}",
        ]
    ):
        path = tmp_path / f"deep{i}.json"
        path.write_text(text)
        one_line_error(path)


@pytest.mark.parametrize("ts, dur", [(1e300, 1), (2**63 + 5, 1), (1, 1e300), (1, 2**63 + 5), (-1e300, 1)])
def test_times_beyond_int64_nanoseconds_are_refused(tmp_path, ts, dur):
    events = [{"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": dur, "args": {}}]
    one_line_error(write(tmp_path / "t.json", events), "not a number of microseconds")


def test_every_duration_missing_is_a_status_not_gpu_busy_zero(tmp_path):
    events = launch(0, 2, 1, 5, 3) + launch(10, 2, 2, 15, 3)
    for e in events:
        del e["dur"]
    tl = load_trace(write(tmp_path / "t.json", events))
    report = analyze_timeline(tl)
    assert report.status == "durations_missing" and report.anomalies.trace == {"events_without_duration": 4}
    assert report.gaps is None and report.launches is None


def test_one_range_at_ts_zero_is_dropped_as_an_outlier(tmp_path):
    events = [e for i in range(200) for e in launch(10 * i, 2, i + 1, 10 * i + 5, 3)]
    outlier = {**annotation("stray", 0, 5), "ts": 0.0}
    tl = load_trace(write(tmp_path / "t.json", events + [outlier]))
    assert tl.meta.anomalies == {"time_outlier_events": 1}
    report = analyze_timeline(tl)
    assert report.devices[0].window_ms < 10 and report.anomalies.trace == {"time_outlier_events": 1}


def test_pipe_is_read_once_without_losing_its_first_bytes(tmp_path):
    path = write(tmp_path / "t.json.gz", launch(0, 2, 1, 5, 3), gz=True)
    for data in (path.read_bytes(), gzip.decompress(path.read_bytes())):  # gzip and plain through a pipe
        r, w = os.pipe()
        writer = threading.Thread(target=lambda d=data, fd=w: (os.write(fd, d), os.close(fd)))
        writer.start()
        try:
            tl = load_trace(f"/dev/fd/{r}")
        finally:
            writer.join()
            os.close(r)
        assert len(tl.kernels) == 1


def test_fifo_nobody_writes_to_times_out(tmp_path, monkeypatch):
    monkeypatch.setattr(source, "PIPE_IDLE_TIMEOUT_S", 0.2)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line_error(fifo, "nothing is writing|no data")


def test_devices_are_refused():
    one_line_error("/dev/zero", "not a regular file")


def test_long_path_component_is_one_line(tmp_path):
    one_line_error(tmp_path / ("x" * 300) / "t.json")


def test_whitespace_run_and_huge_event_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kineto_json, "MAX_EVENT_BYTES", 1 << 20)
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 1 << 16)
    body = json.dumps(kernel(0, 1, 1))
    path = tmp_path / "ws.json.gz"
    path.write_bytes(
        gzip.compress(b'{"traceEvents": [' + body.encode() + b"," + b" " * (3 << 20) + body.encode() + b"]}")
    )
    one_line_error(path, "no event boundary")


def test_a_large_string_is_parsed_once(tmp_path):
    events = [kernel(0, 1, 1, name="n" * (16 << 20)), kernel(5, 1, 2)]
    tl = load_trace(write(tmp_path / "big.json", events))
    assert len(tl.kernels) == 2 and max(map(len, tl.names)) == 16 << 20


def test_no_trace_events_in_a_large_document_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kineto_json, "MAX_HEADER_BYTES", 1 << 20)
    path = tmp_path / "big.json"
    path.write_text('{"data": [' + ", ".join(["1"] * 2_000_000) + "]}")
    one_line_error(path, "no 'traceEvents' array in the first 1 MiB")


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"meta": {"traceEvents": [1, 2]}, "x": 1}', "nested inside another key"),
        ('[{"traceEvents": [], "schemaVersion": 1}]', "array holding a trace object"),
        ("", "empty file"),
    ],
)
def test_misleading_documents_get_the_right_message(tmp_path, text, match):
    path = tmp_path / "t.json"
    path.write_text(text)
    one_line_error(path, match)


def test_nested_key_before_the_real_one_still_loads(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"meta": {"traceEvents": []}, "traceEvents": launch(0, 2, 1, 5, 3)}))
    assert len(load_trace(path).kernels) == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_utf16_trace_says_so(tmp_path, encoding):
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": [kernel(0, 1, 1)]}).encode(encoding))
    one_line_error(path, "UTF-16/UTF-32")


def test_utf8_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"traceEvents": [kernel(0, 1, 1)]}).encode())
    assert len(load_trace(path).kernels) == 1


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_keys = st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"])
_arg_keys = st.sampled_from(["device", "stream", "correlation", "External id", "bytes"])
_events = st.lists(
    st.one_of(
        st.dictionaries(_keys, _values, max_size=9),
        st.fixed_dictionaries(
            {
                "ph": st.sampled_from(["X", "i", 7]),
                "cat": st.sampled_from(
                    ["kernel", "cpu_op", "gpu_memcpy", "cuda_runtime", "user_annotation", "Kernel", None, 3]
                ),
                "name": _values,
                "ts": st.one_of(st.floats(0, 1e10), _scalars),
                "dur": st.one_of(st.floats(0, 1e6), _scalars),
                "args": st.one_of(st.dictionaries(_arg_keys, _values, max_size=5), _values),
            }
        ),
        _values,
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=_events)
def test_fuzzed_events_load_and_analyze_or_raise_usage_error(tmp_path, events):
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps({"traceEvents": events}, allow_nan=True))
    try:
        tl = load_trace(path)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    assert all(isinstance(n, str) for n in tl.names)
    analyze_timeline(tl)
