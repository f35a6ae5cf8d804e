"""At any terminal width the tables print every number and id whole: wrap text, drop minor columns, stack."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from synthetic import config, latency_samples, run

from surrobench.records.findings import Evidence, Finding
from surrobench.report.comparison import comparison_tables
from surrobench.report.findings import findings_brief
from surrobench.report.fit import Col, fit_table
from surrobench.report.models import models_table
from surrobench.report.run import results_table
from surrobench.report.versus_tables import versus_tables
from surrobench.records.versus import load_versus
from surrobench.results.compare import compare_runs
from surrobench.api.benchmark import models as zoo_models


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


def _cut_words(table, width: int, longest: int = 20) -> set[str]:
    """The words (up to ``longest`` cells, so each fits any column the fitter gives text at 40+ cells) of the shown
    cells, headers too unless stacked, that the rendering at ``width`` does not hold whole: cut or folded mid-word."""
    shown = set(re.split(r"[\s\u2500-\u257f]+", _render(table, width)))
    cells = [c.header for c in table.columns if table.show_header] + [x for c in table.columns for x in c.cells]
    return {w for cell in cells for w in Text.from_markup(cell).plain.split() if len(w) <= longest} - shown


@pytest.mark.parametrize("width", (40, 50, 60, 80, 90, 100, 120, 160))
def test_no_cell_line_ends_inside_a_word_that_fits(width):
    """The models, versus and compare's secondary tables (unmatched configs, environment, notes) are fitted too:
    rich, left to itself, cut ``precision`` to ``precis…`` at 56 columns and ``Physics-informed`` at 90."""
    base = run("20261201-000000-aaaa", [config(latency_samples(1.0, 0.01, n=5), size=s) for s in (16, 32)])
    new = run(
        "20261201-000000-bbbb",
        [config(latency_samples(1.3, 0.01, n=5), size=16), config([2.0] * 5, size=16, precision="bf16")],
        env={"config.minor_faults_per_call": "0.0, 2.6", "load_avg_1m": 1.21},
    )
    tables = comparison_tables(compare_runs(base, new), width=width)
    assert {t.title for t in tables} >= {"notes", "configs in one run only", "environment differences"}
    versus = load_versus(Path(__file__).parents[1] / "fixtures" / "documents" / "versus-v1.json")
    for table in [*tables, models_table(zoo_models(), width=width), *versus_tables(versus, width=width)]:
        assert not _cut_words(table, width), table.title
