"""The system-level view of one workload (Linux ``perf`` and a Python sampler), as the diagnosis reads it
(:mod:`surrobench.analysis.detect_gpu`; docs/sources.md, tools §1 and §4: what the CPU is busy with)."""

from __future__ import annotations

from dataclasses import dataclass, field

from surrobench.records import schemas


@dataclass(frozen=True)
class HostHotspot(schemas.Plain):
    """A host function (a symbol, or ``file:line function``) and the fractions of the host samples of the measured
    steps with it on the stack (``share``), at its top (``self_share``) and inside an nn.Module call
    (``model_share``, None without stacks); ``source`` the sampler (``"perf"``, ``"py-spy"``)."""

    function: str
    share: float
    self_share: float | None = None
    source: str = "perf"
    model_share: float | None = None


@dataclass(frozen=True)
class SystemView(schemas.Plain):
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

    @classmethod
    def from_json(cls, data: dict) -> SystemView:
        """The view of a :meth:`to_json` object; keys that are not SystemView's (the extra ones of
        ``surrobench perf --json``'s ``system``: miss rates, flame graph, notes) are ignored.

        Raises:
            TypeError: ``data`` is not an object.
            ValueError: a hot spot is not an object with ``function`` and ``share``.
        """
        if not isinstance(data, dict):
            raise TypeError(f"expected a JSON object, got {type(data).__name__}")
        for h in data.get("hotspots") or ():
            if not isinstance(h, dict) or "function" not in h or "share" not in h:
                raise ValueError(f"hotspot {h!r}: expected an object with 'function' and 'share'")
        return super().from_json({k: v for k, v in data.items() if v is not None})  # null: the default
