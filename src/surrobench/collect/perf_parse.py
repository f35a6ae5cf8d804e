"""Readers for what Linux ``perf`` and py-spy write (fixtures: ``tests/fixtures/perf/``), and why a counter is missing.

- ``perf stat -x,`` (perf 6.1, perf-stat.txt "CSV FORMAT"): ``value,unit,event,run-time-ns,percent-running,...``;
  ``<not supported>``/``<not counted>``; percent-running < 100: multiplexed and scaled.
- ``perf report --stdio --no-children -F overhead,dso,sym -g none``: ``  44.67%  libgomp.so.1  [.] sym``.
- py-spy's inferno flame graph SVG: ``<title>NAME (N samples, P%)</title>`` and ``fg:x``/``fg:w`` in samples."""

from __future__ import annotations

import bisect
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from surrobench.execution.host_facts import proc_value
from surrobench.records import intervals
from surrobench.records.stats import ratio
from surrobench.records.system import HostHotspot

PERF_EVENTS = ("cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses")
PERF_EVENTS += ("task-clock", "context-switches", "cpu-migrations", "page-faults")
HARDWARE_EVENTS = frozenset(PERF_EVENTS[:6])
"""Events counted by the CPU's PMU; the rest are kernel software events, available in any VM."""

NOT_SUPPORTED, NOT_COUNTED, COUNTED = "not supported", "not counted", "counted"
_PERMISSION_MARKERS = ("perf_event_paranoid", "Permission denied", "Access to performance monitoring")
_REPORT_LINE = re.compile(
    r"^\s*(?P<first>\d+(?:\.\d+)?)%\s+(?:(?P<second>\d+(?:\.\d+)?)%\s+)?(?:(?P<dso>\S+)\s+)?"
    r"\[(?P<mode>[.kgHu])\]\s+(?P<sym>.+?)\s*$"
)
_UNRESOLVED = re.compile(r"^(0x)?[0-9a-f]+$")
_TITLE = re.compile(r"^(?P<name>.*) \((?P<n>[\d,]+) samples?, [\d.]+%\)$")
_FG = "{http://github.com/jonhoo/inferno}"
_SVG = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class CounterReading:
    """One ``perf stat -x,`` line: ``event``, ``value`` (None unless counted), ``status``, ``running_share``."""

    event: str
    value: float | None
    status: str
    running_share: float | None


@dataclass(frozen=True)
class PerfAccess:
    """What limits perf on this host: ``perf_event_paranoid``, a hypervisor."""

    paranoid: int | None
    virtualized: bool


@dataclass(frozen=True)
class CounterSummary:
    """One window's counters, ``unavailable`` reasons, ``multiplexed`` shares, IPC and miss rates."""

    counters: dict[str, float | None]
    unavailable: dict[str, str]
    multiplexed: dict[str, float] = field(default_factory=dict)
    ipc: float | None = None
    cache_miss_rate: float | None = None
    branch_miss_rate: float | None = None


def parse_stat_csv(text: str) -> list[CounterReading]:
    """The counter lines of ``perf stat -x,`` output; comments, blank and message lines are skipped."""
    readings = []
    for line in text.splitlines():
        parts = line.split(",")
        if line.startswith("#") or len(parts) < 5:
            continue
        raw, event, pct = parts[0].strip(), parts[2].strip(), parts[4].strip()
        if "/" in event:  # hybrid PMUs: cpu_core/cycles/
            event = event.strip("/").split("/")[-1]
        event = event.split(":")[0]
        running = float(pct) / 100 if pct else None
        if raw.startswith("<"):
            status = NOT_SUPPORTED if "supported" in raw else NOT_COUNTED
            readings.append(CounterReading(event, None, status, running))
        else:
            readings.append(CounterReading(event, float(raw), COUNTED, running))
    return readings


def perf_access(proc: Path = Path("/proc")) -> PerfAccess:
    """``perf_event_paranoid`` and the ``hypervisor`` CPU flag (Intel SDM CPUID.1:ECX[31]) under ``proc``."""
    try:
        paranoid = int((proc / "sys/kernel/perf_event_paranoid").read_text().strip())
    except (OSError, ValueError):
        paranoid = None
    virtualized = "hypervisor" in (proc_value("flags", proc / "cpuinfo") or "").split()
    return PerfAccess(paranoid, virtualized)


def permission_reason(stderr: str, access: PerfAccess) -> str | None:
    """Why perf refused to count at all, from its stderr, or None when it did not refuse."""
    if not any(marker in stderr for marker in _PERMISSION_MARKERS):
        return None
    return (
        f"perf_event_paranoid={access.paranoid} forbids perf events for this user: run as root or with "
        "CAP_PERFMON, or lower it (sysctl kernel.perf_event_paranoid=1)"
    )


def unavailable_reason(reading: CounterReading, access: PerfAccess) -> str:
    """Why ``reading`` has no value, from its status, the event kind and the host."""
    if reading.status == NOT_COUNTED:
        return "not counted: enabled but never scheduled in the window (multiplexed out, or never enabled)"
    if reading.event not in HARDWARE_EVENTS:
        return "not supported by this kernel"
    if access.virtualized:
        return "not supported: virtual machine whose hypervisor exposes no hardware counters (PMU)"
    return "not supported by this CPU's PMU or its kernel driver"


def summarize_counters(readings: list[CounterReading], access: PerfAccess) -> CounterSummary:
    """One ``perf stat`` run summarized; events printed once per PMU (hybrid CPUs) are added up."""
    counters: dict[str, float | None] = {}
    unavailable: dict[str, str] = {}
    multiplexed: dict[str, float] = {}
    for r in readings:
        if r.status != COUNTED:
            counters.setdefault(r.event, None)
            unavailable.setdefault(r.event, unavailable_reason(r, access))
            continue
        counters[r.event] = (counters.get(r.event) or 0.0) + r.value
        unavailable.pop(r.event, None)
        if r.running_share is not None and r.running_share < 1:
            multiplexed[r.event] = r.running_share
    c = counters.get
    return CounterSummary(
        counters,
        unavailable,
        multiplexed,
        ipc=ratio(c("instructions"), c("cycles")),
        cache_miss_rate=ratio(c("cache-misses"), c("cache-references")),
        branch_miss_rate=ratio(c("branch-misses"), c("branches")),
    )


def parse_perf_report(text: str) -> tuple[HostHotspot, ...]:
    """Hot spots from ``perf report --stdio`` in report order; bare addresses named ``libgomp.so.1 0x1de62``, kernel ``[kernel]``."""
    spots = []
    for line in text.splitlines():
        m = _REPORT_LINE.match(line)
        if m is None or line.lstrip().startswith("#"):
            continue
        sym, dso = m["sym"], m["dso"] or ""
        if _UNRESOLVED.match(sym):
            sym = f"{dso} 0x{int(sym, 16):x}".strip()
        elif m["mode"] == "k":
            sym += " [kernel]"
        first = float(m["first"]) / 100
        self_share = float(m["second"]) / 100 if m["second"] else first
        spots.append(HostHotspot(sym, first, self_share, "perf"))
    return tuple(spots)


def _union_width(spans: list[tuple[int, int]]) -> int:
    """Samples covered by the union of ``[x, x + w)`` sample ranges."""
    lo, hi = np.array(spans, dtype=np.int64).reshape(-1, 2).T
    return intervals.total(*intervals.merge(lo, hi))


def parse_flamegraph_svg(text: str) -> tuple[tuple[HostHotspot, ...], int]:
    """Inclusive and self shares from an inferno SVG, and the sample count. Raises ValueError: not one."""
    frames = []  # (name, y, x, w)
    for g in ET.fromstring(text).iter(f"{_SVG}g"):
        title, rect = g.find(f"{_SVG}title"), g.find(f"{_SVG}rect")
        m = _TITLE.match(title.text or "") if title is not None else None
        if m is None or rect is None or f"{_FG}x" not in rect.attrib:
            continue
        frames.append((m["name"], float(rect.get("y")), int(rect.get(f"{_FG}x")), int(rect.get(f"{_FG}w"))))
    root = next((f for f in frames if f[0] == "all"), None)
    if root is None or root[3] == 0:
        raise ValueError("no inferno flame graph frames (expected an 'all' frame with fg:x/fg:w attributes)")
    total = root[3]
    rows = sorted({abs(f[1] - root[1]) for f in frames})
    depths = [rows.index(abs(f[1] - root[1])) for f in frames]  # each frame's row counted from the root's
    by_depth: dict[int, list[tuple[int, int]]] = {}
    for (_, _, x, w), depth in zip(frames, depths):
        by_depth.setdefault(depth, []).append((x, w))
    for row in by_depth.values():
        row.sort()
    spans: dict[str, list[tuple[int, int]]] = {}
    selfs: dict[str, int] = {}
    in_model: dict[str, list[tuple[int, int]]] = {}
    for (name, _, x, w), depth, held in zip(frames, depths, _inside_module_call(frames, depths)):
        if name == "all":
            continue
        children = by_depth.get(depth + 1, [])
        lo, hi = bisect.bisect_left(children, (x, -1)), bisect.bisect_left(children, (x + w, -1))
        selfs[name] = selfs.get(name, 0) + w - sum(cw for _, cw in children[lo:hi])
        spans.setdefault(name, []).append((x, x + w))
        if held:
            in_model.setdefault(name, []).append((x, x + w))
    model = {name: _union_width(iv) / total for name, iv in in_model.items()}
    spots = [
        HostHotspot(name, _union_width(iv) / total, selfs[name] / total, "py-spy", model.get(name, 0.0))
        for name, iv in spans.items()
    ]
    return tuple(sorted(spots, key=lambda s: (-s.share, -s.self_share))), total


#: A Python frame calling an nn.Module (``Module._call_impl``): frames above it run inside the forward.
_MODULE_CALL = re.compile(r"^Module\._(?:wrapped_)?call_impl \(")


def _inside_module_call(frames: list[tuple[str, float, int, int]], depths: list[int]) -> list[bool]:
    """Per frame ``(name, y, fg:x, fg:w)``, whether an nn.Module call (:data:`_MODULE_CALL`) is among its callers."""
    order = sorted(range(len(frames)), key=lambda i: depths[i])
    rows: dict[int, list[tuple[int, int, bool]]] = {}  # depth -> sorted (x, end, calls into a module or inside one)
    inside = [False] * len(frames)
    for i in order:
        name, _, x, w = frames[i]
        parents = rows.get(depths[i] - 1, [])
        j = bisect.bisect_right(parents, (x, float("inf"), True)) - 1
        inside[i] = j >= 0 and parents[j][0] <= x < parents[j][1] and parents[j][2]
        bisect.insort(rows.setdefault(depths[i], []), (x, x + w, inside[i] or bool(_MODULE_CALL.match(name))))
    return inside
