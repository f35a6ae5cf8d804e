"""The roofline figure of a run (Williams et al., CACM 52(4), 2009: ``min(peak, I * bandwidth)``): ncu-measured
launches (filled circles, :mod:`surrobench.analysis.counters`) and FLOP-estimated ops (hollow squares,
:mod:`surrobench.analysis.roofline`), from their JSON forms."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from surrobench.records.ceilings import Ceilings
from surrobench.report.escape import plain
from surrobench.report.plots import PlainLogFormatter, plain_text

#: Legend labels of the two series (their markers differ too: filled circle against hollow square).
MEASURED_LABEL = "measured (ncu)"
ESTIMATED_LABEL = "estimated from FLOP counts"
_MARKERS = {MEASURED_LABEL: "o", ESTIMATED_LABEL: "s"}


def measured_points(counters: dict) -> list[tuple[float, float]]:
    """``(FLOP/byte, TFLOP/s)`` of each launch of a config's counters (JSON) that has both (DRAM bytes, FLOPs)."""
    return [
        (k["arithmetic_intensity"], k["achieved_tflops"])
        for k in counters["kernels"]
        if k["arithmetic_intensity"] and k["achieved_tflops"]
    ]


def estimated_points(roofline: dict) -> list[tuple[float, float]]:
    """``(FLOP/byte, TFLOP/s)`` of each op of a config's estimated roofline (JSON) with known FLOPs."""
    return [(o["intensity"], o["achieved_tflops"]) for o in roofline["ops"] if o["intensity"] and o["achieved_tflops"]]


def _roofs(ax, ceilings: Ceilings, precisions: set[str], x: np.ndarray) -> None:
    """The memory roof and a compute roof per usable precision of ``precisions``."""
    peaks = {p: ceilings.peak_tflops(p) for p in sorted(precisions) if ceilings.unusable(p) is None}
    memory = x * ceilings.copy_gbps / 1e3
    top = np.minimum(memory, max(peaks.values())) if peaks else memory
    ax.plot(x, top, color="black", lw=1, label=f"memory copy {ceilings.copy_gbps:.0f} GB/s")
    for p, peak in peaks.items():
        ax.plot(x, np.minimum(peak, memory), ls="--", lw=1, label=f"{p} {peak:.3g} TFLOP/s")


def roofline_figure(
    measured: Mapping[str, dict], estimated: Mapping[str, dict], ceilings: Ceilings | None, title: str = ""
) -> Figure | None:
    """Measured and estimated points on one log-log panel under ``ceilings``' roofs; None without a rate."""
    series = [(MEASURED_LABEL, label, measured_points(c)) for label, c in measured.items()]
    series += [(ESTIMATED_LABEL, label, estimated_points(r)) for label, r in estimated.items()]
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
            style = dict(marker=_MARKERS[kind], facecolors=fill, edgecolors=colors[label], s=28)
            ax.scatter(ai, tflops, **style, label=plain(f"{kind}: {label}"))
        if ceilings is not None:
            every = [p for _, _, points in series for p in points]
            lo, hi = min(p[0] for p in every), max(p[0] for p in every)
            x = np.geomspace(lo / 4, hi * 4, 64)
            precisions = {k["precision"] for c in measured.values() for k in c["kernels"] if k["precision"]}
            _roofs(ax, ceilings, precisions | {r["precision"] for r in estimated.values()}, x)
        ax.set(xscale="log", yscale="log", xlabel="arithmetic intensity (FLOP/byte)", ylabel="TFLOP/s")
        ax.set_title(plain(title or "roofline"))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
        ax.legend(fontsize="x-small", loc="lower right")
    return fig
