"""Matplotlib figures for the HTML report (None without data): no pyplot, no mathtext, names plain.

The roofline figure of a run (Williams et al., CACM 52(4), 2009: ``min(peak, I * bandwidth)``) draws ncu-measured
launches (filled circles, :mod:`surrobench.analysis.counters`) and FLOP-estimated ops (hollow squares,
:mod:`surrobench.analysis.roofline`), from their JSON forms."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter, NullLocator

from surrobench.records.ceilings import Ceilings
from surrobench.records.run import ConfigResult, grouped
from surrobench.records.serve import ServeRecord
from surrobench.report.comparison import pair_label
from surrobench.report.escape import plain
from surrobench.results.compare import RunComparison

if TYPE_CHECKING:
    from surrobench.trace.model import Timeline

#: Configs drawn in the latency-distribution plot; more boxes than this are unreadable at report width.
MAX_BOX_CONFIGS = 24
#: Operators per config in the op-breakdown plot, and configs shown side by side.
TOP_OPS = 10
MAX_OP_PANELS = 4
_PANEL_W_IN, _PANEL_H_IN = 5.0, 3.6
_NS_PER_US = 1e3
_SPAN_COLORS = {"kernel": "tab:blue", "memcpy": "tab:orange", "memset": "tab:green", "api": "tab:gray"}
#: Characters per title line of one panel (5 in at the default 10 pt title font); longer titles wrap.
_TITLE_CHARS = 48
#: Characters per line of a y-axis config label (about 3 in at 10 pt); longer labels wrap.
_LABEL_CHARS = 44
#: Panels side by side; more go on further rows (four 5 in panels shrank to unreadable text in a 1,200 px page).
_PANELS_PER_ROW = 2
#: Marker per candidate in the speedup-vs-error plot, named in its legend.
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
#: Matplotlib settings every figure is built and saved under: text is never parsed as mathtext.
PLAIN_TEXT = {"text.parse_math": False}


class PlainLogFormatter(LogFormatter):
    """Log-axis tick labels as plain numbers (``0.1``, ``100``, ``1e+05``), not mathtext; the default's tick choice."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return f"{x:g}"


def plain_log(*axes) -> None:
    """:class:`PlainLogFormatter` on each given log axis (``ax.xaxis``, ``ax.yaxis``), major and minor ticks."""
    for axis in axes:
        axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
        axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


def plain_text():
    """Context manager and decorator applying :data:`PLAIN_TEXT` (saving needs it too)."""
    return rc_context(PLAIN_TEXT)


def _title(text: str, chars: int = _TITLE_CHARS) -> str:
    """A panel title wrapped to ``chars`` per line instead of clipped at the panel edge."""
    return textwrap.fill(plain(text), chars, break_long_words=True, break_on_hyphens=False)


def _row_figure(texts: Sequence[str]) -> tuple[Figure, object, list[str]]:
    """A figure of one row per ``texts`` entry, 10 in wide; its axes; the row labels wrapped to :data:`_LABEL_CHARS`."""
    labels = [_title(t, _LABEL_CHARS) for t in texts]
    lines = sum(w.count("\n") + 1 for w in labels)
    fig = Figure(figsize=(10, 1.0 + 0.2 * lines + 0.15 * len(texts)), layout="constrained")
    return fig, fig.subplots(), labels


def per_sample_shape(r: ConfigResult) -> str:
    """The executed input without its batch dim, ``3x64x64`` (whole when dim 0 is not the batch)."""
    shape = r.input_shape
    if len(shape) > 1 and shape[0] == r.batch:
        shape = shape[1:]
    return "x".join(map(str, shape)) or r.shape_label


def _ok(results: Sequence[ConfigResult]) -> list[ConfigResult]:
    return [r for r in results if r.status == "ok" and r.latency_ms is not None]


def _panels(n: int, height_in: float = _PANEL_H_IN) -> tuple[Figure, list]:
    """``n`` panels, :data:`_PANELS_PER_ROW` to a row; the axes of the panels in reading order."""
    cols = min(n, _PANELS_PER_ROW)
    rows = -(-n // cols)
    fig = Figure(figsize=(_PANEL_W_IN * cols, height_in * rows), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in axes[n:]:  # an odd count leaves the last row's second panel empty
        ax.set_axis_off()
    return fig, axes[:n]


def _set_x_ticks(ax, labels: Mapping[float, str]) -> None:
    """Ticks at the measured x values only, labelled as the tables label them."""
    xs = sorted(labels)
    ax.set_xticks(xs, [labels[x] for x in xs], rotation=30 if len(xs) > 4 else 0)
    ax.xaxis.set_minor_locator(NullLocator())


@plain_text()
def latency_vs_shape(results: Sequence[ConfigResult]) -> Figure | None:
    """Median latency (ms, P95 whisker) against points per sample, log-log, a panel per model."""
    groups = grouped([r for r in _ok(results) if r.points_per_sample() is not None], lambda r: r.model)
    if not any(len({r.shape_text() for r in rs}) > 1 for rs in groups.values()):
        return None
    fig, axes = _panels(len(groups))
    for ax, (model, rs) in zip(axes, groups.items()):
        series = grouped(rs, lambda r: (r.batch, r.precision, r.mode))
        for (batch, precision, mode), pts in sorted(series.items()):
            pts.sort(key=lambda r: r.points_per_sample())
            x = [r.points_per_sample() for r in pts]
            med = np.array([r.latency_ms.median for r in pts])
            p95 = np.array([r.latency_ms.p95 for r in pts])
            label = f"b{batch} {precision} {mode}"
            ax.errorbar(x, med, yerr=[np.zeros_like(med), p95 - med], marker="o", capsize=3, label=label)
        xlabel, ylabel = "points per sample (input shape per sample)", "latency ms (median, P95)"
        ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel=ylabel, title=_title(model))
        plain_log(ax.yaxis)
        _set_x_ticks(ax, {r.points_per_sample(): f"{r.points_per_sample():.0f}\n{per_sample_shape(r)}" for r in rs})
        ax.legend(fontsize="small")
    return fig


@plain_text()
def throughput_vs_batch(results: Sequence[ConfigResult]) -> Figure | None:
    """Samples/s against batch size, a panel per model; None when no config has two batch sizes."""
    groups = grouped([r for r in _ok(results) if r.samples_per_s], lambda r: r.model)
    if not any(len({r.batch for r in rs}) > 1 for rs in groups.values()):
        return None
    fig, axes = _panels(len(groups))
    for ax, (model, rs) in zip(axes, groups.items()):
        series = grouped(rs, lambda r: (per_sample_shape(r), r.precision, r.mode))
        for (shape, precision, mode), pts in sorted(series.items()):
            pts.sort(key=lambda r: r.batch)
            label = f"{shape} {precision} {mode}"
            ax.plot([r.batch for r in pts], [r.samples_per_s for r in pts], marker="o", label=label)
        ax.set(yscale="log", xlabel="batch", ylabel="samples/s", title=_title(model))
        ax.set_xscale("log", base=2)
        plain_log(ax.yaxis)
        _set_x_ticks(ax, {r.batch: str(r.batch) for r in rs})
        ax.legend(fontsize="small")
    return fig


@plain_text()
def latency_distributions(results: Sequence[ConfigResult]) -> Figure | None:
    """Box plot of per-iteration ms of up to :data:`MAX_BOX_CONFIGS` configs (whiskers 1.5 IQR)."""
    rs = [r for r in _ok(results) if r.samples_ms][:MAX_BOX_CONFIGS]
    if not rs:
        return None
    fig, ax, labels = _row_figure([r.label() for r in rs])
    ax.boxplot([r.samples_ms for r in rs], orientation="horizontal", tick_labels=labels, flierprops={"markersize": 2})
    ax.invert_yaxis()
    ax.set(xscale="log", xlabel="latency ms per iteration")
    plain_log(ax.xaxis)
    return fig


@plain_text()
def ratio_forest(cmp: RunComparison) -> Figure | None:
    """NEW/BASE median ratio with its 95% CI per config, ±threshold band shaded; None without ratios."""
    cs = [c for c in cmp.configs if c.median_ratio is not None]
    if not cs:
        return None
    fig, ax, labels = _row_figure([pair_label(c) for c in cs])
    y = np.arange(len(cs))
    ratio = np.array([c.median_ratio.ratio for c in cs])
    lo, hi = (np.array([c.median_ratio.ci95[i] for c in cs]) for i in (0, 1))
    colors = [{"regressed": "tab:red", "improved": "tab:green"}.get(c.verdict, "tab:gray") for c in cs]
    ax.axvspan(1 - cmp.threshold, 1 + cmp.threshold, color="0.9", label=f"±{cmp.threshold:.0%}")
    ax.errorbar(ratio, y, xerr=[ratio - lo, hi - ratio], fmt="none", ecolor="0.3", capsize=3)
    ax.scatter(ratio, y, c=colors, zorder=3)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set(xlabel="median latency NEW / BASE (95% CI)")
    ax.legend(loc="best", fontsize="small")
    return fig


_VERDICT_COLORS = {"accepted": "tab:green", "rejected_not_faster": "tab:olive", "rejected_slower": "tab:orange"}
_VERDICT_COLORS |= {"rejected_accuracy": "tab:red"}


@plain_text()
def speedup_vs_error(doc: dict) -> Figure | None:
    """Per optimized config, speedup (95% CI) against relative L2 error by verdict; ``doc`` any version."""
    panels = []
    for entry in doc["configs"][:MAX_OP_PANELS]:
        points = [c for c in entry["candidates"] if c.get("speedup") and c["rel_l2"] is not None]
        if points:
            panels.append((entry, points))
    if not panels:
        return None
    fig, axes = _panels(len(panels), height_in=_PANEL_H_IN + 1.2)  # room for the legend below
    floor = 1e-9  # an exact candidate (error 0) is drawn at the floor of the log axis
    for ax, (entry, points) in zip(axes, panels):
        for c, marker in zip(points, itertools.cycle(_MARKERS)):
            sp = c["speedup"]
            x = max(c["rel_l2"], floor)
            yerr = [[sp["median"] - sp["ci95"][0]], [sp["ci95"][1] - sp["median"]]]
            color, label = _VERDICT_COLORS.get(c["verdict"], "0.4"), f"{plain(c['name'])} ({c['verdict']})"
            ax.errorbar([x], [sp["median"]], yerr=yerr, fmt=marker, color=color, capsize=3, label=label)
        ax.axhline(1.0, color="0.5", lw=0.8)
        ax.axvline(doc["tolerance"], color="tab:red", lw=0.8, ls="--", label="tolerance")
        title = _title(f"{entry['model']} {'x'.join(map(str, entry['input_shape']))} {entry['device']}")
        labels = dict(xlabel="relative L2 error vs fp32 reference", ylabel="speedup (95% CI)")
        ax.set(xscale="log", yscale="log", title=title, **labels)
        plain_log(ax.xaxis, ax.yaxis)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), fontsize="x-small", ncols=2)  # below the axes
    return fig


@plain_text()
def op_breakdown(
    op_tables: Mapping[str, Mapping[str, float]],
    cpu_labels: frozenset[str] = frozenset(),
    overheads: Mapping[str, float] | None = None,
) -> Figure | None:
    """Top :data:`TOP_OPS` ops by self ms per step, a panel per config (``{label: {op: ms}}``), with its profiler
    overhead where known (``{label: fraction}``, :attr:`surrobench.api.report.Report.op_overheads`)."""
    tables = [(label, t) for label, t in op_tables.items() if t][:MAX_OP_PANELS]
    if not tables:
        return None
    fig, axes = _panels(len(tables), height_in=0.6 + 0.3 * TOP_OPS)
    for ax, (label, table) in zip(axes, tables):
        top = sorted(table.items(), key=lambda kv: -kv[1])[:TOP_OPS]
        total = sum(table.values())
        ax.barh([plain(name[:40]) for name, _ in top], [ms for _, ms in top], color="tab:blue")
        ax.invert_yaxis()
        what = "self CPU ms" if label in cpu_labels else "self device ms"
        overhead = f"; profiler overhead {overheads[label]:+.0%}" if label in (overheads or {}) else ""
        ax.set_xlabel(f"{what} per step (total {total:.3f} ms{overhead})")
        # the op names take half the panel: a title as wide as the panel would pass its right edge
        ax.set_title(_title(label, _TITLE_CHARS * 3 // 4), fontsize="small")
        ax.tick_params(axis="y", labelsize="small")
    return fig


@dataclass(frozen=True)
class Span:
    """One timeline-strip interval: ``lane``, ``kind`` (kernel, memcpy, memset, api), start and duration ns."""

    lane: str
    kind: str
    start_ns: int
    dur_ns: int


def spans_from_timeline(tl: "Timeline") -> list[Span]:
    """Kernels, copies, memsets per stream and CUDA API calls of the first profiled step."""
    steps = tl.steps
    lo = int(steps.start_ns[0]) if len(steps) else 0
    hi = int(steps.start_ns[1]) if len(steps) > 1 else None
    spans = []
    for kind, table in (("kernel", tl.kernels), ("memcpy", tl.memcpy), ("memset", tl.memset), ("api", tl.api_calls)):
        keep = (table.start_ns >= lo) & (table.start_ns < hi if hi is not None else True)
        lanes = table.stream[keep] if kind != "api" else np.full(int(keep.sum()), -1)
        for lane, start, dur in zip(lanes, table.start_ns[keep], table.dur_ns[keep]):
            name = "host: CUDA API" if kind == "api" else f"stream {int(lane)}"
            spans.append(Span(name, kind, int(start) - lo, max(int(dur), 0)))
    return spans


@plain_text()
def timeline_strip(spans: Sequence[Span], title: str = "") -> Figure | None:
    """Intervals per lane against time (µs from the window start), coloured by kind. None without spans."""
    if not spans:
        return None
    lanes = sorted({s.lane for s in spans}, key=lambda lane: (lane.startswith("host"), lane))
    fig = Figure(figsize=(12, 0.8 + 0.5 * len(lanes)), layout="constrained")
    ax = fig.subplots()
    labeled: set[str] = set()
    for i, lane in enumerate(lanes):
        for kind, color in _SPAN_COLORS.items():
            mine = [s for s in spans if s.lane == lane and s.kind == kind]
            bars = [(s.start_ns / _NS_PER_US, s.dur_ns / _NS_PER_US) for s in mine]
            if bars:
                ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=color, label=None if kind in labeled else kind)
                labeled.add(kind)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set(xlabel="µs from step start", title=textwrap.fill(plain(title), 2 * _TITLE_CHARS))
    ax.legend(loc="upper right", fontsize="small")
    return fig


@plain_text()
def latency_throughput(record: ServeRecord) -> Figure | None:
    """P99 (95% interval) and P50 against achieved rate, a line per policy; None without load points."""
    results = [r for r in record.policies if r.points]
    if not results:
        return None
    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.add_subplot()
    for result in results:
        pts = sorted(result.points, key=lambda p: p.offered_rps)
        x = [p.achieved_rps for p in pts]
        p99 = [p.p99_ms for p in pts]
        # a few requests' interval can lie above the interpolated P99 (its lower side the slowest of two)
        lo = [max(0.0, p.p99_ms - (p.percentile(0.99).ci95_ms[0] or p.p99_ms)) for p in pts]
        hi = [max(0.0, (p.percentile(0.99).ci95_ms[1] or p.p99_ms) - p.p99_ms) for p in pts]
        label = result.policy.label() if result.policy else "endpoint"
        line = ax.errorbar(x, p99, yerr=[lo, hi], marker="o", capsize=3, label=f"P99, {label}")[0]
        ax.plot(x, [p.percentile(0.5).value_ms for p in pts], ls=":", color=line.get_color(), label=f"P50, {label}")
    if record.target_p99_ms is not None:
        ax.axhline(record.target_p99_ms, color="tab:red", ls="--", label=f"target {record.target_p99_ms:g} ms")
    title = "latency vs throughput (open loop)" if record.arrival != "closed" else "latency vs throughput"
    ax.set(xlabel="achieved rate (requests/s)", ylabel="latency (ms)", yscale="log", title=title)
    plain_log(ax.yaxis)  # major and minor ticks: a range under a decade labels its minor ticks
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the curves, never over them
    return fig


#: Legend labels of the two series (their markers differ too: filled circle against hollow square).
MEASURED_LABEL = "measured (ncu)"
ESTIMATED_LABEL = "estimated from FLOP counts"
_SERIES_MARKERS = {MEASURED_LABEL: "o", ESTIMATED_LABEL: "s"}


def roofline_points(rows: list[dict], intensity: str) -> list[tuple[float, float]]:
    """``(FLOP/byte, TFLOP/s)`` of each row (JSON) that has both: a counters' kernel (``arithmetic_intensity``,
    from DRAM bytes) or an estimated roofline's op (``intensity``, from FLOP counts)."""
    return [(r[intensity], r["achieved_tflops"]) for r in rows if r[intensity] and r["achieved_tflops"]]


def roofline_figure(
    measured: Mapping[str, dict], estimated: Mapping[str, dict], ceilings: Ceilings | None, title: str = ""
) -> Figure | None:
    """Measured and estimated points on one log-log panel under ``ceilings``' roofs; None without a rate."""
    series = [
        (MEASURED_LABEL, label, roofline_points(c["kernels"], "arithmetic_intensity")) for label, c in measured.items()
    ]
    series += [(ESTIMATED_LABEL, label, roofline_points(r["ops"], "intensity")) for label, r in estimated.items()]
    series = [s for s in series if s[2]]
    if not series:
        return None
    colors = {label: f"C{i % 10}" for i, label in enumerate(dict.fromkeys(label for _, label, _ in series))}
    with plain_text():
        fig = Figure(figsize=(7.0, 4.5), layout="constrained")
        ax = fig.add_subplot()
        for kind, label, points in series:
            ai, tflops = zip(*points)
            fill = colors[label] if kind == MEASURED_LABEL else "none"
            style = dict(marker=_SERIES_MARKERS[kind], facecolors=fill, edgecolors=colors[label], s=28)
            ax.scatter(ai, tflops, **style, label=plain(f"{kind}: {label}"))
        if ceilings is not None:  # the memory roof and a compute roof per usable precision drawn
            every = [p for _, _, points in series for p in points]
            lo, hi = min(p[0] for p in every), max(p[0] for p in every)
            x = np.geomspace(lo / 4, hi * 4, 64)
            precisions = {k["precision"] for c in measured.values() for k in c["kernels"] if k["precision"]}
            precisions |= {r["precision"] for r in estimated.values()}
            peaks = {p: ceilings.peak_tflops(p) for p in sorted(precisions) if ceilings.unusable(p) is None}
            memory = x * ceilings.copy_gbps / 1e3
            top = np.minimum(memory, max(peaks.values())) if peaks else memory
            ax.plot(x, top, color="black", lw=1, label=f"memory copy {ceilings.copy_gbps:.0f} GB/s")
            for p, peak in peaks.items():
                ax.plot(x, np.minimum(peak, memory), ls="--", lw=1, label=f"{p} {peak:.3g} TFLOP/s")
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="TFLOP/s")
        ax.set_title(plain(title or "roofline"))
        plain_log(ax.xaxis, ax.yaxis)
        ax.legend(fontsize="x-small", loc="lower right")
    return fig
