"""The progress bar of a long library call (timing, then profiling) for the terminal."""

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
    :class:`~surrobench.api.profile.Hooks` that advance it (configs timed, then configs profiled)."""
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

        def on_profile_start(n: int) -> None:
            profiling.append(progress.add_task("profiling", total=n))

        def on_report(report) -> None:
            progress.update(profiling[-1], advance=1, description=rich_escape(f"profiled {report.label()}"))

        yield Hooks(
            on_start=lambda total: progress.update(timing, total=total),
            on_result=on_result,
            on_profile_start=on_profile_start,
            on_report=on_report,
        )
