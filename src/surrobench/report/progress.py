"""The progress of a long library call (timing, then profiling): a bar on a terminal, a line per config
when the output is piped or captured (a CI log, ``| tee``, a batch job's file), where a bar draws nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from surrobench.report.escape import rich_escape

# api.profile imports torch: imported when a bar is made, not with the CLI (docs/benchmarks/startup.md)
if TYPE_CHECKING:
    from surrobench.api.profile import Hooks


@contextmanager
def progress_hooks(console: Console) -> Iterator[Hooks]:
    """A transient progress bar on ``console`` (the CLI's stderr) for a long library call: the
    :class:`~surrobench.api.profile.Hooks` that advance it (configs timed, then configs profiled). When
    ``console`` is not a terminal, each timed round of a config and each profiled config also prints one line:
    ``timed 2/8: fno2d 64 b1 fp32 eager: ok, median 1.234 ms``."""
    from surrobench.api.profile import Hooks

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with progress:
        timing = progress.add_task("benchmarking", total=None)
        profiling: list = []

        def on_result(result) -> None:
            progress.update(
                timing, advance=1, description=rich_escape(f"{result.model} {result.shape_label} b{result.batch}")
            )
            median = f", median {result.latency_ms.median:.3f} ms" if result.latency_ms else ""
            _line(console, f"timed {_count(progress, timing)}: {result.label()}: {result.status}{median}")

        def on_profile_start(n: int) -> None:
            profiling.append(progress.add_task("profiling", total=n))

        def on_report(report) -> None:
            progress.update(profiling[-1], advance=1, description=rich_escape(f"profiled {report.label()}"))
            _line(console, f"profiled {_count(progress, profiling[-1])}: {report.label()}: {report.status}")

        yield Hooks(
            on_start=lambda total: progress.update(timing, total=total),
            on_result=on_result,
            on_profile_start=on_profile_start,
            on_report=on_report,
        )


def _line(console: Console, text: str) -> None:
    """``text`` as one line on ``console`` when it is not a terminal (there the bar says it)."""
    if not console.is_terminal:
        console.print(rich_escape(text), soft_wrap=True)


def _count(progress: Progress, task_id) -> str:
    """``2/8``: the task's steps done of its total (``?`` before the total is known)."""
    task = progress.tasks[task_id]
    total = "?" if task.total is None else f"{task.total:.0f}"
    return f"{task.completed:.0f}/{total}"
