"""surrobench: benchmark, profile and diagnose the inference of physics surrogate models (``docs/api.md``)::

    import surrobench
    run = surrobench.benchmark("fno2d", shapes=32, batches=[1, 2], device="cpu", warmup=2, iters=5)
    run.results[0].latency_ms.median

The names below are imported on first use: no torch until a verb runs.
"""

from __future__ import annotations

import importlib

from surrobench.version import __version__

#: The modules of the public names, each name imported from its module on first use.
_BY_MODULE = {
    "api.benchmark": ("benchmark", "sweep_request", "models"),
    "api.profile": ("profile",),
    "records.run": ("Profile", "ConfigResult", "RunRecord"),
    "api.run": ("measure", "perf"),
    "api.serve": ("serve",),
    "api.analyze": ("load_trace", "analyze", "analyze_trace"),
    "api.diagnose": ("diagnose", "Diagnosis"),
    "api.compare": ("compare", "load_run", "history", "import_run", "load", "optimization_state"),
    "api.report": ("build_report", "Report"),
    "api.optimize": ("optimize",),
    "api.calibrate": ("calibrate",),
    "api.versus": ("versus",),
    "records.versus": ("load_versus", "compare_versus", "VersusRecord"),
    "api.scenarios": ("run_scenarios", "SuiteReport"),
    "records.config": ("ConfigKey",),
    "records.stats": ("LatencyStats",),
    "records.ops": ("OpTable",),
    "records.ceilings": ("Ceilings",),
    "records.system": ("SystemView",),
    "records.findings": ("Finding", "Evidence"),
    "trace.model": ("Timeline",),
    "analysis.timeline": ("TimelineReport",),
    "results.compare": ("RunComparison",),
    "errors": ("UsageError", "Interrupted"),
}
#: Public name -> the module that defines it.
_EXPORTS = {name: f"surrobench.{module}" for module, names in _BY_MODULE.items() for name in names}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'surrobench' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
