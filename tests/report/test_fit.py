"""At any terminal width the tables print every number and id whole: wrap text, drop minor columns, stack."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from synthetic import config, latency_samples, run

from surrobench.records.findings import Evidence, Finding
from surrobench.report.comparison import comparison_tables
from surrobench.report.findings import findings_brief
from surrobench.report.fit import Col, fit_table
from surrobench.report.run import results_table
from surrobench.results.compare import compare_runs


def _render(renderable, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[\w.:/-]+", text))


WIDTHS = (40, 60, 80, 120, 200)


@pytest.mark.parametrize("width", WIDTHS)
def test_results_table_never_cuts_a_number_or_shape(width):
    rs = [config(latency_samples(382.25, 0.01, n=20), size=1024, batch=16), config([], status="oom", size=2048)]
    out = _render(results_table(rs, title="run 20261201-021254-614e on cpu", width=width), width)
    assert "…" not in out and max(map(len, out.splitlines())) <= width
    tokens = _tokens(out)
    assert {"16x3x1024x1024", "1x3x2048x2048", "fno2d", "20261201-021254-614e"} <= tokens
    assert any(re.fullmatch(r"3\d\d\.\d{3}", t) for t in tokens)  # the ~382 ms median whole


@pytest.mark.parametrize("width", WIDTHS)
def test_comparison_and_findings_never_cut(width):
    base = run("20261201-000000-aaaa", [config(latency_samples(1.0, 0.01), size=s) for s in (64, 128)])
    new = run("20261201-000000-bbbb", [config(latency_samples(1.3, 0.01), size=s) for s in (64, 128)])
    out = _render(comparison_tables(compare_runs(base, new), width=width)[0], width)
    assert "…" not in out and "20261201-000000-bbbb" in out and "regressed" in _tokens(out)
    finding = Finding(
        "stream_serialization",
        "medium",
        "kernels of two streams never overlap",
        (Evidence("timeline", "overlap 0% of 12.5 ms"),),
        "use more streams",
        12.345,
        config="m",
    )
    out = _render(findings_brief([finding], width=width), width)
    assert {"stream_serialization", "medium", "12.345"} <= _tokens(out)


def test_minor_columns_drop_before_rows_stack():
    cols = [Col("id", keep=True), Col("minor", keep=True, minor=1), Col("text")]
    rows = [["a" * 14, "b" * 14, "some phrases here"]]
    wide = _render(fit_table(cols, rows, 120), 120)
    assert "b" * 14 in wide
    narrow = fit_table(cols, rows, 40)
    assert [c.header for c in narrow.columns] == ["id", "text"] and "minor" in narrow.caption  # named, not silent
    assert "a" * 14 in _render(narrow, 40) and "b" * 14 not in _render(narrow, 40)
    assert "phrases" in _render(fit_table(cols, rows, 28), 28)  # text wraps at spaces, down to its longest word
    stacked = _render(fit_table(cols, rows, 27), 27)
    assert "a" * 14 in stacked and "b" * 14 in stacked  # stacked: every field, one per line
