"""A versus record drawn: the Pareto plot and the HTML page with the tables."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from surrobench.records.run import created_now
from surrobench.records.versus import MATCHED, VersusRecord
from surrobench.report.plots import plain_log, plain_text
from surrobench.report.versus_tables import LEVEL_COLUMNS, SURROGATE_COLUMNS, level_rows, rollout_rows, summary_line
from surrobench.report.versus_tables import surrogate_rows


@plain_text()
def pareto_figure(record: VersusRecord) -> Figure | None:
    """Time against error, log-log: ladder levels, the front, surrogate settings and matched speedups."""
    levels = [lv for lv in record.levels if np.isfinite(lv.accuracy.error) and lv.accuracy.error > 0]
    if not levels and not record.surrogates:
        return None
    fig = Figure(figsize=(7, 4.8))
    ax = fig.add_subplot()
    errors, times = [lv.accuracy.error for lv in levels], [lv.timing.median_ms for lv in levels]
    ax.scatter(errors, times, color="tab:gray", label="solver level")
    for lv, x, y in zip(levels, errors, times):
        ax.annotate(lv.name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    front = sorted((lv for lv in levels if lv.on_front), key=lambda lv: lv.accuracy.error)
    if front:
        xs, ys = [lv.accuracy.error for lv in front], [lv.timing.median_ms for lv in front]
        ax.plot(xs, ys, color="tab:gray", label="solver front")
    for s in record.surrogates:
        point = ax.scatter([s.accuracy.error], [s.timing.median_ms], marker="*", s=140, zorder=3, label=s.label)
        if s.match.status == MATCHED:
            ends, color = [s.timing.median_ms, s.match.solver_ms], point.get_facecolor()[0]
            ax.plot([s.accuracy.error] * 2, ends, ls=":", color=color)
            at = (s.accuracy.error, np.sqrt(s.timing.median_ms * s.match.solver_ms))
            ax.annotate(f"{s.match.speedup:.3g}x", at, fontsize=8, xytext=(4, 0), textcoords="offset points")
    title = f"{record.problem}: solver front vs surrogate ({record.device})"
    ax.set(xscale="log", yscale="log", xlabel="relative L2 error", ylabel="time per case (ms)", title=title)
    plain_log(ax.xaxis, ax.yaxis)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def versus_page(record: VersusRecord) -> str:
    """One self-contained HTML page: the Pareto plot and the tables."""
    from surrobench.report.html import _CSS, _figure, _table, escape

    created = created_now()
    parts = [
        _figure(pareto_figure(record), "solver error-time front and the surrogate"),
        f"<p>{escape(summary_line(record))}</p>",
        "<h2>Solver ladder</h2>",
        _table(LEVEL_COLUMNS, level_rows(record), left=("level",)),
        "<h2>Surrogate</h2>",
        _table(SURROGATE_COLUMNS, surrogate_rows(record), left=("surrogate",)),
    ]
    if record.steps > 1:
        columns = ("step", *(s.label for s in record.surrogates))
        parts += ["<h2>Rollout</h2>", _table(columns, rollout_rows(record), left=("step",))]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>surrobench versus: {escape(record.problem)}</title><style>{_CSS}</style></head><body>"
        f"<h1>surrobench versus: {escape(record.problem)}</h1>"
        f'<p class="muted">{escape(record.device)}, {record.cases} cases, reference: {escape(record.reference)}; '
        f"measured {escape(record.created)}, page generated {created}</p>\n" + "\n".join(parts) + "\n</body></html>\n"
    )
