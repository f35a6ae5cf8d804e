"""A trace is read right or the reader says what it dropped: one mutation of a fixture trace per way a trace
can be misread (far-off timestamps, malformed kernels, odd durations, step names), each either read right or
counted by kind in ``meta.anomalies`` and shown in the warnings of analyze and diagnose."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest
from kineto_synth import memcpy
from test_nsys_loader import make_db

from surrobench.analysis.timeline import analyze_timeline
from surrobench.api.diagnose import diagnose
from surrobench.errors import UsageError
from surrobench.trace import load_trace

FIXTURE = Path(__file__).parent.parent / "fixtures" / "traces" / "h200_tiny_mlp_b1.json.gz"
DAY_US = 86_400e6


def tiny_mlp() -> dict:
    """The tiny MLP trace (48 kernels, 52 runtime calls, 3 profiled steps) as a dict to mutate."""
    with gzip.open(FIXTURE) as f:
        return json.load(f)


def write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    return path


def kernels(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]


def test_the_fixture_reads_clean():
    report = analyze_timeline(load_trace(FIXTURE))
    assert report.warnings == () and not report.repaired and report.anomalies.launches_without_kernel == 0


@pytest.mark.parametrize("moved", [1, 12])  # 1: under 1% of the 438 events, 12: over
def test_far_off_events_are_dropped_and_warned_about(tmp_path, moved):
    base = analyze_timeline(load_trace(FIXTURE))
    doc = tiny_mlp()
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"][:moved]
    for e in ops:
        e["ts"] -= 60 * DAY_US
    tl = load_trace(write(tmp_path, doc))
    assert tl.meta.anomalies == {"time_outlier_events": moved} and tl.meta.dropped == {"time_outlier_events": moved}
    report = analyze_timeline(tl)
    assert report.status == "ok" and report.repaired and len(report.warnings) == 1
    assert report.devices[0].window_ms == pytest.approx(base.devices[0].window_ms, rel=0.05)
    assert report.devices[0].busy_share == pytest.approx(base.devices[0].busy_share, rel=0.05)


def test_kernels_with_a_malformed_phase_are_counted_and_their_launches_warned(tmp_path):
    doc = tiny_mlp()
    for e in kernels(doc):
        e["ph"] = "x"
    copy = memcpy(0, 2, 999_999)  # a copy remains, beside the first kernel: the trace still shows GPU activity
    doc["traceEvents"].append({**copy, "ts": kernels(doc)[0]["ts"]})
    tl = load_trace(write(tmp_path, doc))
    assert len(tl.kernels) == 0 and tl.meta.anomalies == {"events_not_complete": 48}
    report = analyze_timeline(tl)
    assert report.anomalies.launches_without_kernel == 48 and report.repaired
    assert any("48 launches, 0 kernels" in w for w in report.warnings)


@pytest.mark.parametrize("cat, kind", [(5, {"events_without_category": 24}), ("kernel_x", {})])
def test_every_second_kernel_with_a_malformed_category_is_warned(tmp_path, cat, kind):
    doc = tiny_mlp()
    for e in kernels(doc)[::2]:
        e["cat"] = cat
    tl = load_trace(write(tmp_path, doc))
    assert len(tl.kernels) == 24 and tl.meta.anomalies == kind
    report = analyze_timeline(tl)
    assert report.anomalies.launches_without_kernel == 24 and report.repaired


def test_a_duration_written_as_text_is_read_as_us_and_counted(tmp_path):
    doc = tiny_mlp()
    first = kernels(doc)[0]
    want_ns = round(first["dur"] * 1e3)
    first["dur"] = str(first["dur"])
    tl = load_trace(write(tmp_path, doc))
    assert tl.meta.anomalies == {"times_as_text": 1} and tl.meta.repaired == {"times_as_text": 1}
    assert want_ns in tl.kernels.dur_ns.tolist()
    assert analyze_timeline(tl).repaired


@pytest.mark.parametrize("value", [True, "250us"])
def test_a_duration_that_is_a_bool_or_other_text_is_refused(tmp_path, value):
    doc = tiny_mlp()
    kernels(doc)[0]["dur"] = value
    with pytest.raises(UsageError, match="not a number of microseconds"):
        load_trace(write(tmp_path, doc))


def test_step_names_that_do_not_parse_are_warned(tmp_path):
    doc = tiny_mlp()
    for e in doc["traceEvents"]:
        if str(e.get("name")).startswith("ProfilerStep#"):
            e["name"] = "ProfilerStep#x"
    tl = load_trace(write(tmp_path, doc))
    assert len(tl.steps) == 0 and tl.meta.anomalies == {"unparsed_step_names": 3}
    assert analyze_timeline(tl).steps == () and analyze_timeline(tl).repaired


def test_nsys_ranges_ending_before_they_start_are_counted(tmp_path):
    path = make_db(tmp_path / "r.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO NVTX_EVENTS VALUES (50000, 40000, 59, NULL, NULL, NULL, 'back', 7, 7, NULL, 0, 3)")
    tl = load_trace(path)
    assert tl.meta.anomalies == {"ranges_ending_before_start": 1}


def test_diagnose_of_a_trace_carries_the_warnings(tmp_path):
    doc = tiny_mlp()
    for e in kernels(doc)[::2]:
        e["ph"] = "x"
    result = diagnose(trace=write(tmp_path, doc))
    assert len(result.warnings) == 2  # the dropped kernels, and their launches without a kernel
    assert result.to_json()["warnings"] == list(result.warnings)
