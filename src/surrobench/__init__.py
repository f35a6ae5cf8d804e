"""surrobench: benchmark, profile and diagnose the inference of physics surrogate models (``docs/api.md``)::

    import surrobench
    run = surrobench.benchmark("fno2d", shapes=32, batches=[1, 2], device="cpu", warmup=2, iters=5)
    run.results[0].latency_ms.median

The names below are imported on first use: no torch until a verb runs.
"""

from __future__ import annotations

import importlib

from surrobench.version import __version__

#: Public name -> the module that defines it.
_EXPORTS = {
    "benchmark": "surrobench.api.benchmark",
    "sweep_request": "surrobench.api.benchmark",
    "models": "surrobench.api.benchmark",
    "profile": "surrobench.api.profile",
    "Profile": "surrobench.records.run",
    "measure": "surrobench.api.run",
    "perf": "surrobench.api.run",
    "serve": "surrobench.api.serve",
    "load_trace": "surrobench.api.analyze",
    "analyze": "surrobench.api.analyze",
    "analyze_trace": "surrobench.api.analyze",
    "diagnose": "surrobench.api.diagnose",
    "Diagnosis": "surrobench.api.diagnose",
    "compare": "surrobench.api.compare",
    "load_run": "surrobench.api.compare",
    "history": "surrobench.api.compare",
    "import_run": "surrobench.api.compare",
    "load": "surrobench.api.compare",
    "build_report": "surrobench.api.report",
    "Report": "surrobench.api.report",
    "optimize": "surrobench.api.optimize",
    "calibrate": "surrobench.api.calibrate",
    "versus": "surrobench.api.versus",
    "load_versus": "surrobench.records.versus",
    "compare_versus": "surrobench.records.versus",
    "VersusRecord": "surrobench.records.versus",
    "run_scenarios": "surrobench.api.scenarios",
    "SuiteReport": "surrobench.api.scenarios",
    "ConfigKey": "surrobench.records.config",
    "ConfigResult": "surrobench.records.run",
    "RunRecord": "surrobench.records.run",
    "LatencyStats": "surrobench.records.stats",
    "OpTable": "surrobench.records.ops",
    "Ceilings": "surrobench.records.ceilings",
    "SystemView": "surrobench.records.system",
    "Finding": "surrobench.records.findings",
    "Evidence": "surrobench.records.findings",
    "Timeline": "surrobench.trace.model",
    "TimelineReport": "surrobench.analysis.timeline",
    "RunComparison": "surrobench.results.compare",
    "UsageError": "surrobench.errors",
    "Interrupted": "surrobench.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'surrobench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
