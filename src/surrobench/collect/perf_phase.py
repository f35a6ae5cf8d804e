"""The system-level phase of ``surrobench perf`` and ``run --profile perf``: after a timed sweep, each
``ok`` config's measured steps under ``perf`` and py-spy (:func:`surrobench.collect.perf.system_pass`).

Samplers need time, not a step count: at py-spy's 100 Hz, ten 1 ms steps hold one sample. So the
window is ``window_s`` seconds of steps, as many as the timed median says fit (at least one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from surrobench.collect.perf import SystemPass, system_pass
from surrobench.collect.profile_phase import config_key_json, config_stem
from surrobench.collect.torch_profiler import DEFAULT_WAIT, ProfileSchedule
from surrobench.execution.config import ExecConfig
from surrobench.results.schema import ConfigResult
from surrobench.results.store import ResultStore

PERF_SCHEMA = "surrobench/perf-v1"
DEFAULT_WINDOW_S = 2.0
"""Seconds of measured steps: 200 py-spy samples and ~1000 perf samples, enough for a 5% share to show."""
MAX_WINDOW_STEPS = 100_000  # bounds the step count for sub-microsecond steps


@dataclass(frozen=True)
class PerfOptions:
    """How long to sample (s), where to put flame graphs (None: not kept), how many hot spots per sampler."""

    window_s: float = DEFAULT_WINDOW_S
    flamegraph_dir: Path | None = None
    top: int = 20


@dataclass(frozen=True)
class PerfReport:
    """One config's system pass, or why there is none (``status``/``error`` of the child)."""

    config: ConfigResult
    config_id: int
    status: str
    error: str | None
    system: SystemPass | None
    steps: int
    warnings: tuple[str, ...] = ()

    def label(self) -> str:
        return self.config.label()

    def to_json(self) -> dict:
        """Config key, status, steps, the system view (:meth:`SystemView.to_json`: shares and ratios as
        fractions, times in ms) with multiplexing, miss rates, flame graph path and notes beside its keys
        (``SystemView.from_json`` of ``system`` ignores those)."""
        out = {**config_key_json(self.config), "status": self.status, "error": self.error,
               "steps": self.steps, "warnings": list(self.warnings)}  # fmt: skip
        if self.system is None:
            return out
        s = self.system.summary
        out["system"] = {
            **self.system.view.to_json(), "cache_miss_rate": s.cache_miss_rate if s else None,
            "branch_miss_rate": s.branch_miss_rate if s else None, "multiplexed": s.multiplexed if s else {},
            "flamegraph": str(self.system.flamegraph) if self.system.flamegraph else None,
            "notes": list(self.system.notes),
        }  # fmt: skip
        return out


def window_schedule(median_ms: float | None, window_s: float) -> ProfileSchedule:
    """``DEFAULT_WAIT`` unmeasured steps, then enough steps of ``median_ms`` to fill ``window_s`` seconds."""
    steps = math.ceil(window_s * 1e3 / median_ms) if median_ms else 1
    return ProfileSchedule(wait=DEFAULT_WAIT, warmup=0, active=min(max(steps, 1), MAX_WINDOW_STEPS))


def perf_config(cfg: ExecConfig, result: ConfigResult, config_id: int, store: ResultStore,
                options: PerfOptions, run_id: str) -> PerfReport:  # fmt: skip
    """The system pass of one timed config (``profile_one`` for
    :func:`surrobench.collect.profile_phase.profile_run`). ``store`` is unused: the system view is
    reported, not stored."""
    plan = window_schedule(result.latency_ms.median if result.latency_ms else None, options.window_s)
    svg = options.flamegraph_dir / f"{config_stem(run_id, cfg)}.svg" if options.flamegraph_dir else None
    passed = system_pass(cfg, plan, svg, top=options.top)
    child = passed.child
    return PerfReport(result, config_id, child["status"], child.get("error"), passed, plan.active,
                      tuple(passed.notes))  # fmt: skip
