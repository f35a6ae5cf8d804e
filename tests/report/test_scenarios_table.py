"""The scenarios table on a narrow terminal: no scenario name, finding kind or verdict is cut (``sync-in-fo…``)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from surrobench.api.scenarios import SCENARIOS, Outcome
from surrobench.report.scenarios import scenarios_table


@pytest.mark.parametrize("width", (80, 120))
def test_no_name_kind_or_verdict_is_cut_at_80_columns(width):
    scenarios = list(SCENARIOS.values()) if isinstance(SCENARIOS, dict) else list(SCENARIOS)
    note = "needs a CUDA GPU: the healthy verdict is a GEMM near the tensor-core peak " * 2
    outcomes = [Outcome(s, s.expected, True, (), note) for s in scenarios]
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(scenarios_table(outcomes, "cpu", width=width))
    text = out.getvalue()
    assert "…" not in text and all(len(line) <= width for line in text.splitlines())
    assert all(s.name in text and s.expected in text for s in scenarios)
