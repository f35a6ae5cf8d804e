"""``--counters``: one timed config's step (:func:`surrobench.execution.runner.config_step`) under Nsight Compute,
read against the kernels its torch.profiler child found (:mod:`surrobench.collect.ncu`,
:mod:`surrobench.analysis.counters`); a process of its own after the config's timing and profile, so its replay
overhead (~18 passes per kernel) never reaches a latency.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from surrobench.analysis.counters import measure_all
from surrobench.analysis.detect_counters import counter_findings
from surrobench.collect.ncu import run_ncu, select_kernels
from surrobench.execution.config import ExecConfig
from surrobench.records.ceilings import Ceilings
from surrobench.records.counters import PROBLEMS, ConfigCounters, CounterProblem, function_name
from surrobench.records.findings import Finding
from surrobench.records.kernels import KernelTable


def counters_config(
    cfg: ExecConfig, table: KernelTable | None, ceilings: Ceilings | None = None, *, dedup: bool = True
) -> ConfigCounters:
    """The counters of one step of ``cfg``, restricted to ``table``'s top kernels (:func:`select_kernels`; all
    kernels of the step when there is no table), their roofline points against ``ceilings`` (None: verdicts
    without roofs). ``dedup``: identical launches measured once and credited to each, where the table shows a
    name launched more than once a step (:func:`repeats`; False: every launch replayed). A config that cannot be
    measured returns its problem, never raises."""
    if cfg.device != "cuda":
        return ConfigCounters(
            problem=CounterProblem("not_cuda", f"counters: {cfg.device} config, {PROBLEMS['not_cuda']}")
        )
    selected, covered = select_kernels(table) if table is not None and table.kernels else ((), None)
    with tempfile.TemporaryDirectory(prefix="surrobench-ncu-") as tmp:
        config_path = Path(tmp) / "config.json"
        config_path.write_text(json.dumps(cfg.to_json()))
        done = run_ncu(config_path, Path(tmp), selected, dedup=dedup and repeats(table, selected))
    base = ConfigCounters(selected=selected, covered_share=covered, ncu_wall_s=done.wall_s, command=done.command)
    if done.problem is not None:
        return replace(base, problem=done.problem)
    passes = sum(k.passes or 0 for k in done.kernels) + done.enumerated_passes
    return replace(base, kernels=measure_all(done.kernels, table, ceilings), passes=passes)


def repeats(table: KernelTable | None, selected: tuple[str, ...]) -> bool:
    """Whether a step may launch a kernel of ``selected`` (function names) more than once in ``table`` (so
    measuring identical launches once saves passes); True without a table."""
    if table is None or not table.kernels:
        return True
    calls: dict[str, int] = {}
    for k in table.kernels:
        calls[function_name(k.name)] = calls.get(function_name(k.name), 0) + k.calls
    return any(calls.get(name, 0) > table.active_steps for name in selected or calls)


def remeasure(counters: ConfigCounters, table: KernelTable | None, ceilings: Ceilings | None) -> ConfigCounters:
    """The same launches read again against ``table`` and ``ceilings`` (diagnose has the ceilings profile lacks)."""
    return replace(counters, kernels=measure_all(tuple(k.counters for k in counters.kernels), table, ceilings))


def measured_by_config(evidence, ceilings: Ceilings | None) -> dict[str, list[Finding]]:
    """``{config label: measured findings}`` of each config's evidence (:class:`ConfigEvidence`) with counters."""
    return {
        ev.label: counter_findings(ev.label, ev.counters, ceilings)
        for ev in evidence
        if ev.counters is not None and ev.counters.problem is None
    }
