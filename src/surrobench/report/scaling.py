"""The scaling table of a multi-rank run (``surrobench run --nproc N``), for the terminal and markdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from surrobench.records.run import ConfigResult, ScalingRow, grouped, placement
from surrobench.report.cells import fmt, format_rate
from surrobench.report.escape import md_table, rich_escape
from surrobench.report.fit import plain_table

if TYPE_CHECKING:  # matplotlib (a second to import) only where a plot is drawn: `show` prints tables only
    from matplotlib.figure import Figure

#: Configs drawn side by side in the per-rank figure; more panels are unreadable at report width.
MAX_RANK_PANELS = 4

SCALING_COLUMNS = ("config", "N", "1-dev ms", "step ms", "rank medians ms", "skew", "samples/s 1 → N")
SCALING_COLUMNS += ("speedup (95% CI)", "efficiency", "comm ms/rank", "wait ms/rank")


def _list(values: tuple[float, ...] | None) -> str:
    return "-" if not values else " / ".join(f"{v:.3g}" for v in values)


def scaling_cells(row: ScalingRow) -> list[str]:
    """The cells of one row, in :data:`SCALING_COLUMNS` order (plain text; ``-`` where unknown)."""
    speedup = "-"
    if row.speedup is not None:
        speedup = f"{row.speedup:.2f}x"
        if row.speedup_ci95 is not None:
            speedup += f" ({row.speedup_ci95[0]:.2f}–{row.speedup_ci95[1]:.2f})"
    return [
        row.label,
        str(row.world_size),
        fmt(row.solo_median_ms),
        fmt(row.step_median_ms),
        _list(row.rank_median_ms),
        "-" if row.rank_skew is None else f"{row.rank_skew:.1%}",
        f"{format_rate(row.solo_samples_per_s)} → {format_rate(row.samples_per_s)}",
        speedup,
        "-" if row.efficiency is None else f"{row.efficiency:.2f}",
        _list(row.comm_ms),
        _list(row.comm_wait_ms),
    ]


def scaling_table(rows: list[ScalingRow], title: str | None = None, width: int | None = None) -> Table:
    """One row per config: one-device reference vs N ranks (step = slowest rank per iteration), fitted to ``width``."""
    cells = [[rich_escape(c[0]), *c[1:]] for c in map(scaling_cells, rows)]
    return plain_table(SCALING_COLUMNS, cells, title=title, right=SCALING_COLUMNS[1:], width=width)


def _rank_label(r: ConfigResult) -> str:
    label = placement(r).label()
    comm = r.extra.get("comm")
    return f"{label}\ncomm {comm['comm_ms']['median']:.3g} ms" if comm else label


def rank_latencies(results: Sequence[ConfigResult]) -> Figure | None:
    """Per multi-rank config, boxes of per-iteration ms per reference, rank and step; None without ranks."""
    roles = ("reference", "rank", "step")
    drawn = [r for r in results if r.samples_ms and placement(r) is not None and placement(r).role in roles]
    groups = grouped(drawn, lambda r: placement(r).config)
    panels = [rs for _, rs in sorted(groups.items()) if any(placement(r).role == "rank" for r in rs)]
    panels = panels[:MAX_RANK_PANELS]
    if not panels:
        return None
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(panels), 1.2 + 0.5 * max(len(rs) for rs in panels)), layout="constrained")
    for ax, rs in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        ax.boxplot(
            [r.samples_ms for r in rs],
            orientation="horizontal",
            tick_labels=[_rank_label(r) for r in rs],
            flierprops={"markersize": 2},
        )
        ax.invert_yaxis()
        step = next(r for r in rs if placement(r).role in ("step", "rank"))
        ax.set(xlabel="latency ms per iteration", title=step.label())
        ax.title.set_fontsize("small")
    return fig


def scaling_markdown(rows: list[ScalingRow]) -> str:
    """The scaling table as GitHub-flavoured markdown (cells escaped by :func:`md_table`)."""
    return md_table(SCALING_COLUMNS, (scaling_cells(row) for row in rows))
