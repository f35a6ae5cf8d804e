"""Progress of a long library call: a bar on a terminal, a line per config or load point when piped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from surrobench.report.escape import rich_escape

# api.profile imports torch: imported when a bar is made, not with the CLI (docs/benchmarks/startup.md)
if TYPE_CHECKING:
    from surrobench.api.profile import Hooks
    from surrobench.records.serve import LoadPoint, ServePolicy


def _columns() -> tuple:
    return TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()


@contextmanager
def progress_hooks(console: Console) -> Iterator[Hooks]:
    """A transient bar on ``console`` driven by :class:`~surrobench.api.profile.Hooks`; lines when piped."""
    from surrobench.api.profile import Hooks

    progress = Progress(*_columns(), TimeElapsedColumn(), console=console, transient=True)
    with _live(progress, console):
        timing = progress.add_task("benchmarking", total=None)
        profiling: list = []

        def on_result(result) -> None:
            described = rich_escape(f"{result.model} {result.shape_label} b{result.batch}")
            progress.update(timing, advance=1, description=described)
            median = f", median {result.latency_ms.median:.3f} ms" if result.latency_ms else ""
            _line(console, f"timed {_count(progress, timing)}: {result.label()}: {result.status}{median}")

        def on_profile_start(n: int) -> None:
            profiling.append(progress.add_task("profiling", total=n))

        def on_report(report) -> None:
            progress.update(profiling[-1], advance=1, description=rich_escape(f"profiled {report.label()}"))
            _line(console, f"profiled {_count(progress, profiling[-1])}: {report.label()}: {report.status}")

        yield Hooks(lambda total: progress.update(timing, total=total), on_result, on_profile_start, on_report)


@contextmanager
def serve_progress(
    console: Console,
) -> Iterator[tuple[Callable[[int | None], None], Callable[[ServePolicy | None, LoadPoint], None]]]:
    """A transient bar over a serve run's load points: yields ``(on_start(total or None), on_point(policy, point))`` for
    :func:`surrobench.api.serve.serve`; off a terminal, one ``served 1/3: ...`` line per point. Redrawn only between
    loads (no drawing thread during a load)."""
    progress = Progress(*_columns(), console=console, transient=True, auto_refresh=False)
    with _live(progress, console):
        task = progress.add_task("serving", total=None)

        def on_point(policy, point) -> None:
            from surrobench.analysis.serve_load import MAX_BACKLOG_GROWTH  # a serve run's only: not at import
            from surrobench.report.serve_tables import latency_cell

            where, load = policy.label() if policy is not None else "endpoint", point.load()
            progress.update(task, advance=1, description=rich_escape(f"served {load}"), refresh=True)
            verdict = {None: "", True: ", passed", False: ", failed"}[point.passed]
            if point.passed is False and (point.backlog_growth or 0.0) > MAX_BACKLOG_GROWTH:  # a P99 in time, not kept
                verdict += f" (the queue grew {point.backlog_growth:.2g} s a second)"
            p99 = latency_cell(point.percentile(0.99))
            rates = f"offered {point.offered_rps:.1f}, achieved {point.achieved_rps:.1f} rps, P99 {p99} ms"
            _line(console, f"served {_count(progress, task)}: {where}: {load}: {rates}{verdict}")

        yield (lambda total: progress.update(task, total=total, refresh=True)), on_point


def _live(progress: Progress, console: Console):
    """``progress`` drawn on a terminal; off one, not started (a stopped bar leaves an empty line on a pipe)."""
    return progress if console.is_terminal else nullcontext()


def _line(console: Console, text: str) -> None:
    """``text`` as one line on ``console`` when it is not a terminal (there the bar says it)."""
    if not console.is_terminal:
        console.print(rich_escape(text), soft_wrap=True)


def _count(progress: Progress, task_id) -> str:
    """``2/8``: the task's steps done of its total (``2`` while the total is unknown: a search's)."""
    task = progress.tasks[task_id]
    return f"{task.completed:.0f}" + ("" if task.total is None else f"/{task.total:.0f}")
