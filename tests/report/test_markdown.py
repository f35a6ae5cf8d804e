"""The one markdown table writer (:func:`surrobench.report.escape.md_table`) and its users: free text with
pipes, backslashes or newlines stays inside its cell and its row."""

from __future__ import annotations

from dataclasses import replace

from synthetic import config, latency_samples

from surrobench.api.scenarios import SCENARIOS, Outcome
from surrobench.report.escape import md_escape, md_table
from surrobench.report.run import results_markdown
from surrobench.report.scenarios import scenarios_markdown


def _rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_md_table_escapes_pipes_backslashes_and_newlines():
    text = md_table(("a", "b"), [("x | y", "C:\\tmp\nnext line"), (1, None)])
    assert text == "| a | b |\n|---|---|\n| x \\| y | C:\\\\tmp<br>next line |\n| 1 | None |\n"
    assert md_escape("a\nb", newline=" ") == "a b"


def test_scenarios_markdown_keeps_a_multiline_note_in_its_row():
    """The scenarios table escaped only pipes: a newline in a note broke the table."""
    outcome = Outcome(SCENARIOS[0], "host_sync", False, ("a|b",), "run 1234\nchild failed: CUDA error")
    rows = _rows(scenarios_markdown([outcome], {}))
    assert len(rows) == 3  # header, rule, one row
    assert rows[2].endswith("| a\\|b | run 1234<br>child failed: CUDA error |") and "| FAIL |" in rows[2]


def test_results_markdown_keeps_a_multiline_error_in_its_row():
    failed = replace(config([], status="error", batch=2), error="RuntimeError: bad | shape\n  at layer 3")
    rows = _rows(results_markdown([config(latency_samples(1.0, 0.01, n=20)), failed]))
    assert len(rows) == 4 and rows[3].endswith("| error: RuntimeError: bad \\| shape<br>  at layer 3 |")


def test_md_escape_turns_html_into_text():
    """A model path holding an HTML tag must land in the .md as text, not as an element."""
    cell = md_escape('m/<img src=x onerror="alert(1)">&.py:build')
    assert "<" not in cell and ">" not in cell
    assert cell == 'm/&lt;img src=x onerror="alert(1)"&gt;&amp;.py:build'
    assert md_table(("a",), [("<b>x</b>",)]).splitlines()[2] == "| &lt;b&gt;x&lt;/b&gt; |"


def test_results_markdown_escapes_html_and_survives_a_lone_surrogate():
    row = _rows(results_markdown([replace(config([], status="error"), model="<script>\ud800", error="a&b")]))[2]
    assert row.startswith("| &lt;script&gt;\\\\ud800 |") and "a&amp;b" in row
    row.encode("utf-8")  # writable as UTF-8


def test_the_mode_cell_names_the_settings_a_config_ran_with():
    # a fresh-user trial: a --threads 1 run showed "eager" alone, its setting only in the progress line
    plain = config(latency_samples(1.0, 0.01))
    pinned = config(latency_samples(1.0, 0.01), extra={"threads": 1, "channels_last": True})
    rows = results_markdown([plain, pinned]).splitlines()[2:]
    assert "| eager |" in rows[0] and "| eager channels_last threads=1 |" in rows[1]
