"""One large Kineto trace read by several processes at once, each parsing its own byte range.

A plain JSON file has random access: the events array is cut into ``workers`` ranges at event
boundaries (the first ``}``, ``{`` after each equal share of the bytes), this process parses the first
range and worker processes the others, each into table columns; the columns and each worker's name
table come back and are merged in file order. On the 401 MB tiled trace of docs/benchmarks/
trace-analysis.md two processes each spend ~1.2 CPU s instead of one spending ~2.3 (2-core machine).

A cut inside a string (``}, {`` in a name) leaves a range that does not parse; then the whole file is
read again in one process, which reports real syntax errors with their offset. Gzip files and pipes have
no random access and are read in one process.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.trace.builder import TimelineBuilder
from surrobench.trace.kineto_events import EventConverter
from surrobench.trace.kineto_json import locate_events, read_event_range

SPLIT_MIN_BYTES = 64 << 20
"""Files smaller than this are read in one process (a worker's start, ~0.2 s, would not pay off)."""

_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_PROBE_BYTES = 1 << 20


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def read_split(file: Path, conv, workers: int) -> dict | None:
    """Read ``file``'s events into ``conv`` (a fresh converter) using ``workers`` processes; returns the
    trace's metadata, or ``None`` when the file is not worth or not able to be split (the caller then
    reads it in one process with a fresh converter).

    ``conv`` is a :class:`~surrobench.trace.kineto_events.EventConverter`; each worker runs its own and sends back
    its ``pending`` columns, name table, ``counts``, ``anomalies`` and ``saw_cuda``.
    """
    if workers < 2 or file.stat().st_size < SPLIT_MIN_BYTES:
        return None
    located = locate_events(file)
    if located is None:
        return None
    header, start, bare = located
    cuts = _cut_points(file, start, file.stat().st_size, workers)
    if not cuts:
        return None
    ranges = list(zip([start] + [c[1] for c in cuts], [c[0] for c in cuts] + [None]))
    children: list[subprocess.Popen] = []
    try:
        for lo, hi in ranges[1:]:
            children.append(_start_worker(file, lo, hi, bare))
    except OSError:  # no interpreter to start (an embedded Python): one process
        for child in children:
            child.kill()
            child.wait()
        return None
    try:
        read_event_range(file, ranges[0][0], ranges[0][1], bare, conv.on_events)
        parts = [_result(child) for child in children]
    except UsageError:
        return None  # a cut inside a string, or a real error: the one-process read tells which
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    trailer = {}
    for pending, names, counts, anomalies, saw_cuda, trailer in parts:
        remap = conv.builder.intern_names(list(names))
        for _table, cols in pending:
            cols["name_id"] = remap[cols["name_id"]]
        conv.pending.extend(pending)
        conv.counts.update(counts)
        conv.anomalies.update(anomalies)
        conv.saw_cuda = conv.saw_cuda or saw_cuda
    return {**header, **trailer}


def _cut_points(file: Path, start: int, size: int, workers: int) -> list[tuple[int, int]]:
    """(end of the last event before the cut, start of the first after it) near each of ``workers - 1``
    equal shares of the events' bytes; fewer when a share has no boundary within its probe."""
    cuts: list[tuple[int, int]] = []
    with open(file, "rb") as f:
        for k in range(1, workers):
            at = start + (size - start) * k // workers
            if cuts and at <= cuts[-1][1]:
                continue
            f.seek(at)
            m = _BOUNDARY.search(f.read(_PROBE_BYTES))
            if m:
                cuts.append((at + m.start() + 1, at + m.end() - 1))
    return cuts


def _start_worker(file: Path, lo: int, hi: int | None, bare: bool) -> subprocess.Popen:
    """A worker process for one range: ``python -m`` this module, never a re-import of the caller's
    ``__main__`` (which multiprocessing's spawn and forkserver do, and fork with threads is unsafe)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding the surrobench package
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-m", __name__, str(file), str(lo), "" if hi is None else str(hi), str(int(bare))]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)


def _result(child: subprocess.Popen) -> tuple:
    out, _ = child.communicate()
    if child.returncode != 0:
        raise UsageError("a range worker failed")
    status, value = pickle.loads(out)
    if status != "ok":
        raise UsageError(value)
    return value


def _parse_range(file: Path, lo: int, hi: int | None, bare: bool) -> tuple:
    """Worker: the columns of one byte range, its name table, counts, anomalies and trailing metadata."""
    builder = TimelineBuilder()
    conv = EventConverter(builder, file)
    trailer = read_event_range(file, lo, hi, bare, conv.on_events)
    return conv.pending, builder.names(), conv.counts, conv.anomalies, conv.saw_cuda, trailer


if __name__ == "__main__":
    _file, _lo, _hi, _bare = sys.argv[1:5]
    try:
        _value = ("ok", _parse_range(Path(_file), int(_lo), int(_hi) if _hi else None, _bare == "1"))
    except UsageError as _exc:
        _value = ("error", str(_exc))
    sys.stdout.buffer.write(pickle.dumps(_value, protocol=pickle.HIGHEST_PROTOCOL))
