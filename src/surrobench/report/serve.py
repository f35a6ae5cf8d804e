"""The latency-throughput curve of a serve record (matplotlib); tables: :mod:`surrobench.report.serve_tables`."""

from __future__ import annotations

from matplotlib.figure import Figure

from surrobench.records.serve import ServeRecord
from surrobench.report.plots import plain_log, plain_text


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
        lo = [p.p99_ms - (p.percentile(0.99).ci95_ms[0] or p.p99_ms) for p in pts]
        hi = [(p.percentile(0.99).ci95_ms[1] or p.p99_ms) - p.p99_ms for p in pts]
        label = result.policy.label() if result.policy else "endpoint"
        line = ax.errorbar(x, p99, yerr=[lo, hi], marker="o", capsize=3, label=f"P99, {label}")[0]
        ax.plot(x, [p.percentile(0.5).value_ms for p in pts], ls=":", color=line.get_color(), label=f"P50, {label}")
    if record.target_p99_ms is not None:
        ax.axhline(record.target_p99_ms, color="tab:red", ls="--", label=f"target {record.target_p99_ms:g} ms")
    ax.set_xlabel("achieved rate (requests/s)")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    plain_log(ax.yaxis)  # major and minor ticks: a range under a decade labels its minor ticks
    ax.set_title("latency vs throughput (open loop)" if record.arrival != "closed" else "latency vs throughput")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))  # beside the curves, never over them
    return fig
