"""The system-level view of one workload (Linux ``perf`` and a Python sampler), as the diagnosis reads it.

Filled by ``collect/perf.py``; read by ``analysis/diagnose.py``. Source of the questions: the intro text's
section 1 and 4 ("what is the CPU busy with" before the GPU timeline and the operator table).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HostHotspot:
    """A host function and its share of the host samples taken during the measured steps.

    Attributes:
        function: symbol or ``file:line function`` for Python frames.
        share: fraction of samples (0..1) in which the function is on the stack (inclusive) or at the top
            (``self_share``), as the sampler reports.
        self_share: fraction of samples with the function at the top of the stack, None when unknown.
        source: ``"perf"`` or ``"py-spy"`` (or another sampler's name).
    """

    function: str
    share: float
    self_share: float | None = None
    source: str = "perf"


@dataclass(frozen=True)
class SystemView:
    """Counters and hot spots of the host side of the workload.

    Attributes:
        task_clock_ms: CPU time of the process over the measured window, ms.
        wall_ms: wall time of the same window, ms.
        cpu_utilization: CPUs used on average over the window (task_clock / wall), e.g. 0.95 = one core
            95% busy; None when not measured.
        ipc: instructions per cycle, None when hardware counters are unavailable.
        counters: every counter read, by perf event name (``cycles``, ``context-switches``, ...); values
            are counts, or None when unavailable.
        unavailable: event name -> reason (``"not supported (virtualized)"``, ``"perf_event_paranoid=3"``).
        hotspots: host functions, largest inclusive share first.
    """

    task_clock_ms: float | None = None
    wall_ms: float | None = None
    cpu_utilization: float | None = None
    ipc: float | None = None
    counters: dict[str, float | None] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    hotspots: tuple[HostHotspot, ...] = ()
