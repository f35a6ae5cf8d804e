"""``optimize --objective capacity`` as text: candidates, verified capacities, verdict, recipe."""

from __future__ import annotations

from surrobench.records.capacity import CapacityOptimization
from surrobench.report.serve_tables import rps


def _bracket(rps_pair: tuple[float, float | None] | None) -> str:
    if rps_pair is None:
        return "-"
    lo, hi = rps_pair
    return f"{rps(lo)} rps (first failing {rps(hi) if hi is not None else 'not reached'})"


def capacity_lines(record: CapacityOptimization) -> list[str]:
    """The record as lines: per candidate accuracy, predicted capacity and policy; then the verification."""
    w = record.workload
    lines = [
        f"capacity at P99 <= {record.target_p99_ms:g} ms: {w.get('model')} {w.get('shape_label')} on {w.get('device')}"
    ]
    for c in record.candidates:
        ok = {True: "accurate", False: "inaccurate", None: "failed"}[c.accurate]
        line = f"  {c.recipe}: {ok} ({c.accuracy})"
        if c.best_policy is not None:
            line += f"; predicted {rps(c.best_predicted_rps)} rps at {c.best_policy.label()}"
        if c.service_faster is not None:
            line += f"; service faster than baseline: {'yes' if c.service_faster else 'no'}"
        lines.append(line)
    if record.infeasible:
        return [*lines, record.infeasible, f"searched in {record.search_s:.1f} s"]
    lines.append(f"baseline measured under load: {_bracket(record.baseline_rps)} (serve run {record.baseline_run_id})")
    if record.top_run_id is not None:
        lines.append(
            f"{record.top} measured under load: {_bracket(record.top_rps)} (serve run {record.top_run_id}): "
            f"{record.verdict} than the baseline"
        )
    lines.append(f"recipe: {record.recipe}; searched in {record.search_s:.1f} s")
    return [*lines, *record.notes]
