"""The system-level phase of ``surrobench.perf`` and ``run --profile perf``: each timed ``ok`` config's
measured steps under ``perf`` and py-spy (:func:`surrobench.collect.perf.system_pass`), over a window of
steps sized by :func:`surrobench.collect.profile_phase.window_schedule`.
"""

from __future__ import annotations

from dataclasses import dataclass

from surrobench.analysis.evidence_checks import EvidenceCheck, check_step
from surrobench.collect.child import config_stem
from surrobench.collect.perf import SystemPass, system_pass
from surrobench.collect.profile_phase import PerfOptions, window_schedule
from surrobench.execution.config import ExecConfig
from surrobench.records.run import ChildReport, ConfigResult
from surrobench.results.store import ResultStore


@dataclass(frozen=True)
class PerfReport(ChildReport):
    """One config's system pass, or why there is none (``status``/``error`` of the child)."""

    system: SystemPass | None
    steps: int
    warnings: tuple[str, ...] = ()
    step_check: EvidenceCheck | None = None  # its window's step against the timed median (check_step)

    def notes(self, said: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """:attr:`warnings` less the step check's line when every problem of it is in ``said`` (the
        :data:`~surrobench.analysis.evidence_checks.PROBLEMS` another check of the config already states)."""
        if self.step_check is not None and self.step_check.problems and set(self.step_check.problems) <= said:
            return tuple(w for w in self.warnings if w != step_note(self.step_check))
        return self.warnings

    def to_json(self) -> dict:
        """Config key, status, steps, warnings, ``step_check`` (:meth:`EvidenceCheck.to_json`, ``unreliable``
        outside the profiler bound), ``system`` (:meth:`SystemView.to_json`: shares and ratios as fractions, ms)
        with multiplexing, miss rates, flame graph path and notes beside its keys."""
        out = {
            **super().to_json(),
            "steps": self.steps,
            "warnings": list(self.warnings),
            "step_check": self.step_check.to_json() if self.step_check else None,
        }
        if self.system is None:
            return out
        s = self.system.summary
        out["system"] = {
            **self.system.view.to_json(),
            "cache_miss_rate": s.cache_miss_rate if s else None,
            "branch_miss_rate": s.branch_miss_rate if s else None,
            "multiplexed": s.multiplexed if s else {},
            "flamegraph": str(self.system.flamegraph) if self.system.flamegraph else None,
            "notes": list(self.system.notes),
        }
        return out


def step_note(check: EvidenceCheck) -> str:
    """The warning of a system pass whose window's step disagrees with the timed one."""
    return f"unreliable: {check.reason()}"


def perf_config(
    cfg: ExecConfig, result: ConfigResult, config_id: int, store: ResultStore, options: PerfOptions, run_id: str
) -> PerfReport:
    """The system pass of one timed config (``profile_one`` of :func:`surrobench.api.profile.profile_phase`);
    ``store`` is unused: the system view is reported, not stored."""
    plan = window_schedule(result.latency_ms.median if result.latency_ms else None, options.window_s)
    svg = options.flamegraph_dir / f"{config_stem(run_id, cfg)}.svg" if options.flamegraph_dir else None
    passed = system_pass(cfg, plan, svg, top=options.top)
    child = passed.child
    wall = passed.view.wall_ms if child["status"] == "ok" and passed.view is not None else None
    timed = result.latency_ms.median if result.latency_ms else None
    check = check_step(result.label(), wall / plan.active if wall and plan.active else None, timed)
    unreliable = (step_note(check),) if check.problems else ()
    return PerfReport(
        result, config_id, child["status"], child.get("error"), passed, plan.active, (*passed.notes, *unreliable), check
    )
