"""The nsys phase of ``surrobench profile --profile nsys`` and ``run --profile nsys``: each timed config's
profiling child under Nsight Systems (:mod:`surrobench.collect.nsys`), its report loaded
(:func:`surrobench.trace.load_trace`) and analyzed (:func:`surrobench.analysis.timeline.analyze_timeline`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from surrobench.analysis.timeline import TimelineReport, analyze_timeline
from surrobench.collect.nsys import NsysOptions, nsys_command, run_nsys
from surrobench.collect.nsys import require_nsys as require_nsys  # profile --profile nsys checks it first
from surrobench.errors import UsageError
from surrobench.execution.config import ExecConfig
from surrobench.records.run import ChildReport, ConfigResult
from surrobench.results.store import ResultStore
from surrobench.trace import load_trace


@dataclass(frozen=True)
class NsysReport(ChildReport):
    """One config under nsys: the report file and its timeline analysis, or why there is none."""

    report: Path | None = None
    timeline: TimelineReport | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """Config key, status, report path, warnings and the timeline report (``surrobench/timeline-v1``)."""
        return {
            **super().to_json(),
            "report": str(self.report) if self.report else None,
            "warnings": list(self.warnings),
            "timeline": self.timeline.to_dict() if self.timeline else None,
        }


def nsys_config(
    cfg: ExecConfig, result: ConfigResult, config_id: int, store: ResultStore, options: NsysOptions, run_id: str
) -> NsysReport:
    """Profile one timed config's child under nsys and analyze the report (``profile_one`` for
    :func:`surrobench.api.profile.profile_phase`; ``store`` is unused)."""
    base, result_path, cmd = nsys_command(cfg, run_id, options)
    done = run_nsys(base, cmd)
    child = json.loads(result_path.read_text()) if result_path.is_file() else {}
    warnings = tuple(child.get("warnings", ()))
    if child.get("status") not in (None, "ok"):
        return NsysReport(result, config_id, child["status"], child.get("error"), done.report, None, warnings)
    if done.report is None:
        return NsysReport(result, config_id, "error", done.message, None, None, warnings)
    try:
        timeline = analyze_timeline(load_trace(done.report))
    except UsageError as exc:
        return NsysReport(result, config_id, "error", str(exc), done.report, None, warnings)
    return NsysReport(result, config_id, "ok", None, done.report, timeline, warnings)
