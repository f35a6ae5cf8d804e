"""A run in a notebook: flat records, a DataFrame only when pandas is there, a small HTML table, and
``diagnose(run=<RunRecord>)`` of a run held in memory (issue 23, "In a notebook")."""

from __future__ import annotations

import sys

import pytest
from synthetic import config, latency_samples, run

from surrobench.api.diagnose import diagnose
from surrobench.records.run import HTML_ROWS, RECORD_KEYS


def _run():
    ok = config(latency_samples(2.0, 0.01, n=30), batch=4, top_op={"name": "aten::mm", "share": 0.4})
    failed = config([], status="oom", batch=64)
    return run("20261201-000000-aaaa", [ok, failed])


def test_records_are_flat_and_carry_each_result():
    record = _run()
    rows = record.to_records()
    assert [list(r) for r in rows] == [list(RECORD_KEYS)] * 2
    ok, failed = rows
    assert ok["median_ms"] == record.results[0].latency_ms.median and ok["n_samples"] == 30
    assert ok["top_op"] == "aten::mm" and ok["top_op_share"] == 0.4 and ok["batch"] == 4
    assert failed["status"] == "oom" and failed["median_ms"] is None and failed["error"] == "CUDA out of memory"
    assert all(not isinstance(v, (dict, list, tuple)) for r in rows for v in r.values())  # flat


def test_to_pandas_without_pandas_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed: import raises ImportError
    with pytest.raises(ImportError, match="needs pandas"):
        _run().to_pandas()


def test_to_pandas_with_pandas():
    pandas = pytest.importorskip("pandas")
    frame = _run().to_pandas()
    assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == list(RECORD_KEYS) and len(frame) == 2


def test_html_is_a_small_escaped_table():
    record = _run()
    bad = config(latency_samples(1.0, 0.01), model="<script>x</script>")
    text = run("r", [*record.results, bad])._repr_html_()
    assert text.startswith("<table>") and text.count("<tr>") == 1 + 3  # header and one row per result
    assert "<script>" not in text and "&lt;script&gt;" in text and "oom: CUDA out of memory" in text
    many = run("r", [record.results[0]] * (HTML_ROWS + 5))._repr_html_()
    assert many.count("<tr>") == 1 + HTML_ROWS and "5 more not shown" in many


def test_diagnose_a_run_in_memory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no surrobench.db here: the record itself is diagnosed
    record = _run()
    diagnosis = diagnose(run=record)
    assert diagnosis.run is record and diagnosis.context["run_id"] == record.run_id
    assert "memory_pressure" in {f.kind for f in diagnosis.findings}  # the OOM config is run-level evidence
    assert any("no op table" in w for w in diagnosis.warnings)
    assert not list(tmp_path.glob("*.db"))
