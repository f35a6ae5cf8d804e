"""Renderers of a multi-rank run: the scaling table (terminal and markdown) and the per-rank figure."""

from __future__ import annotations

import numpy as np
from synthetic import config, multi_rank_rows

from surrobench.report.run import results_markdown
from surrobench.report.scaling import SCALING_COLUMNS, rank_latencies, scaling_cells, scaling_markdown
from surrobench.records.run import scaling_rows
from surrobench.results.scaling import comm_breakdown


def _rows():
    comm = comm_breakdown([np.array([5.0, 6.0, 5.0]), np.array([1.0, 1.0, 2.0])])
    return multi_rank_rows([2.0, 2.0, 2.0], [[3.0, 3.0, 3.0], [2.0, 4.0, 2.5]], samples_per_step=1, comm=comm)


def test_scaling_cells_give_speedup_with_its_interval_and_the_time_in_collectives():
    (row,) = scaling_rows(_rows())
    cells = dict(zip(SCALING_COLUMNS, scaling_cells(row)))
    assert cells["N"] == "2" and cells["1-dev ms"] == "2.000" and cells["step ms"] == "3.000"
    assert cells["speedup (95% CI)"].startswith("0.67x (") and cells["efficiency"] == "0.33"
    assert cells["rank medians ms"] == "3 / 2.5" and cells["skew"] == "20.0%"
    assert cells["comm ms/rank"] == "5 / 1" and cells["wait ms/rank"] == "4 / 0"


def test_markdown_has_the_rank_column_and_the_scaling_table():
    rows = _rows()
    text = results_markdown(rows)
    assert text.splitlines()[0].startswith("| ranks | model")
    firsts = [line.split(" | ")[0] for line in text.splitlines()[2:]]
    assert firsts == ["| ref 1", "| rank 0/2", "| rank 1/2", "| step 2"]
    assert scaling_markdown(scaling_rows(rows)).count("\n") == 3
    assert not results_markdown([config([1.0])]).startswith("| ranks")  # an ordinary run has no rank column


def test_rank_figure_has_one_box_per_row_of_a_multi_rank_config():
    (ax,) = rank_latencies(_rows()).axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["ref 1", "rank 0/2\ncomm 5 ms", "rank 1/2\ncomm 1 ms", "step 2"]
    assert rank_latencies([config([1.0, 2.0])]) is None


def test_html_report_of_a_multi_rank_run_has_the_scaling_table_and_rank_figure():
    from synthetic import run

    from surrobench.api.report import Report
    from surrobench.report.html import report_page

    page = report_page(Report(runs=(run("multi", _rows()),)))
    assert "Scaling: one device" in page and 'alt="per-rank latency distributions"' in page
    assert '<th class="l">ranks</th>' in page
    plain = report_page(Report(runs=(run("one", [config([1.0, 2.0])]),)))
    assert "Scaling" not in plain and ">ranks<" not in plain
