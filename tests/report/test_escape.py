"""Names are data, never markup: rich markup (``[/]``), HTML and lone surrogates print literally."""

from __future__ import annotations

import io
from dataclasses import replace

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from synthetic import config, latency_samples

from surrobench.records.findings import Evidence, Finding
from surrobench.report.escape import plain, rich_escape
from surrobench.report.findings import findings_explained
from surrobench.report.run import results_table


def _render(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(renderable)
    return out.getvalue()


# printable text, lone surrogates included (control characters are rich's own business)
# a backslash before a [ that opens no tag printed as [ (a helper's hypothesis run found it)
@example("\\[")
@example("a\\[1, 2]")
@example("\\\\[b]")
@example("\\[bold]x")
@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Zl", "Zp"))))
@settings(max_examples=500)
def test_any_text_prints_literally_through_rich_escape(text):
    # rich.markup.escape doubles a trailing backslash so that markup appended after it stays markup
    assume(not text.rstrip().endswith("\\"))
    out = _render(rich_escape(text))
    assert out.encode("utf-8")  # no UnicodeEncodeError, whatever the code points
    assert "".join(out.split()) == "".join(plain(text).split())


def test_results_table_prints_markup_and_surrogates_in_names():
    bad = replace(config(latency_samples(1.0, 0.01, n=20)), model="[/]x[bold]\ud800")
    failed = replace(config([], status="error"), model="[/]", error="[red]boom[/]")
    out = _render(results_table([bad, failed], title=rich_escape("run [/] on cpu")))
    assert "[/]x[bold]\\ud800" in out and "[red]boom[/]" in out and "run [/] on cpu" in out


def test_findings_table_prints_markup_in_op_names():
    finding = Finding(
        "memory_bound", "high", "[/]op is slow", (Evidence("profiler", "[/] 50%"),), "fuse [b]", 1.0, config="[/]model"
    )
    out = _render(findings_explained([finding]))
    assert "[/]op is slow" in out and "[/] 50%" in out and "fuse [b]" in out and "[/]model" in out
