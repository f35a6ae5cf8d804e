"""Progress: a line per config where a bar cannot be drawn (piped output), none beside a terminal's bar."""

from __future__ import annotations

import io

from rich.console import Console
from synthetic import config, latency_samples

from surrobench.report.progress import progress_hooks


def _printed(terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=200, emoji=False)
    results = [config(latency_samples(1.0, 0.01, n=20), batch=b) for b in (1, 2)]
    with progress_hooks(console) as hooks:
        hooks.on_start(2)
        for result in results:
            hooks.on_result(result)
    return out.getvalue()


def test_piped_progress_prints_one_line_per_timed_config():
    lines = [line for line in _printed(terminal=False).splitlines() if line.startswith("timed ")]
    assert [line.split(":")[0] for line in lines] == ["timed 1/2", "timed 2/2"]
    assert " b2 " in lines[1] and ": ok, median " in lines[1]


def test_a_terminal_gets_the_bar_alone():
    assert "timed 1/2" not in _printed(terminal=True)
