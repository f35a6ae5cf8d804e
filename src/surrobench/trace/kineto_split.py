"""One large plain Kineto trace read by several processes: the events array cut at event boundaries into pieces of
about :data:`PIECE_BYTES`, taken from one queue (a pipe, a byte per piece) by this process and ``workers - 1``
workers, each into columns merged back in file order (cost: docs/benchmarks/trace-analysis.md). A piece that does
not parse (a cut inside a string) makes the whole file be read in one process; gzip and pipes are never split."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.execution.host_facts import usable_cpus
from surrobench.trace.kineto_events import EventConverter
from surrobench.trace.kineto_json import EVENT_BOUNDARY, locate_events, read_event_range
from surrobench.trace.model import TimelineBuilder

SPLIT_MIN_BYTES = 64 << 20
"""Files smaller than this are read in one process (a worker's start, ~0.2 s, would not pay off)."""
PIECE_BYTES = 16 << 20
"""Bytes of events per piece (a piece of the tiled trace parses in ~0.05 CPU s)."""
MAX_PIECES = 255
"""At most this many pieces (one queue byte each); 255 keep a 4 GB trace at 16 MiB pieces."""

_PROBE_BYTES = 1 << 20


def read_split(file: Path, conv, workers: int) -> dict | None:
    """Read ``file`` into ``conv`` with ``workers`` processes; the metadata, or None when not split (``conv`` untouched)."""
    split = _STARTED.pop(_key(file, workers), None) or _start_split(file, workers)
    if split is None:
        return None
    try:
        parts = split.collect()
    finally:
        split.close()
    if parts is None:
        return None
    trailer = {}
    for _piece, pending, names, counts, anomalies, saw_cuda, trailer in sorted(parts, key=lambda p: p[0]):
        remap = conv.builder.intern_names(list(names))
        for _table, cols in pending:
            cols["name_id"] = remap[cols["name_id"]]
        conv.pending.extend(pending)
        conv.counts.update(counts)
        conv.anomalies.update(anomalies)
        conv.saw_cuda = conv.saw_cuda or saw_cuda
    return {**split.header, **trailer}


def prestart(file: Path) -> None:
    """Start reading ``file`` in :func:`usable_cpus` workers now for a later :func:`read_split`."""
    workers = usable_cpus()
    try:
        key = _key(file, workers)
        split = None if key in _STARTED else _start_split(file, workers)
    except (OSError, UsageError):  # the read itself reports it
        return
    if split is not None:
        _STARTED[key] = split


def discard_prestarted() -> None:
    """Stop the workers of every :func:`prestart` no read took (the command failed before reading)."""
    while _STARTED:
        _STARTED.popitem()[1].close()


def _key(file: Path, workers: int) -> tuple:
    st = os.stat(file)
    return os.path.realpath(file), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, workers


@dataclass
class _Split:
    """A split read under way: the byte-range pieces, the queue of untaken ones, the workers."""

    file: Path
    header: dict
    bare: bool
    ranges: list
    queue: int
    children: list[subprocess.Popen]

    def collect(self) -> list | None:
        """Every piece, ours then the workers'; None when one fails (the caller reads in one process)."""
        try:
            parts = _parse_pieces(self.file, self.ranges, self.bare, self.queue)
            for child in self.children:
                parts += _result(child)
        except UsageError:
            return None  # a cut inside a string, or a real error: the one-process read tells which
        if sorted(p[0] for p in parts) != list(range(len(self.ranges))):
            return None  # a piece nobody read (a worker that died after claiming it)
        return parts

    def close(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait()
        self.children = []
        if self.queue >= 0:
            os.close(self.queue)
            self.queue = -1


_STARTED: dict[tuple, _Split] = {}


def _start_split(file: Path, workers: int) -> _Split | None:
    """``file``'s pieces queued with ``workers - 1`` workers; None when too small or not splittable."""
    size = file.stat().st_size
    if workers < 2 or size < SPLIT_MIN_BYTES:
        return None
    located = locate_events(file)
    if located is None:
        return None
    header, start, bare = located
    pieces = min(MAX_PIECES, max(workers, -(-(size - start) // PIECE_BYTES)))
    cuts = _cut_points(file, start, size, pieces)
    if not cuts:
        return None
    ranges = list(zip([start] + [c[1] for c in cuts], [c[0] for c in cuts] + [None]))
    queue, feed = os.pipe()
    os.write(feed, bytes(range(len(ranges))))  # <= 255 bytes: below any pipe's buffer, never blocks
    os.close(feed)
    split = _Split(file, header, bare, ranges, queue, [])
    env = dict(os.environ)  # each worker takes pieces: ``python -m`` this module, never a re-import of ``__main__``
    package_root = str(Path(__file__).resolve().parents[2])  # the folder holding the surrobench package
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    spans = ",".join(f"{lo}:{'' if hi is None else hi}" for lo, hi in ranges)
    argv = [sys.executable, "-m", __name__, str(file), str(int(bare)), str(queue), spans]
    try:
        for _ in range(workers - 1):
            split.children.append(
                subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, pass_fds=(queue,))
            )
    except OSError:  # no interpreter to start (an embedded Python): one process
        split.close()
        return None
    return split


def _parse_pieces(file: Path, ranges: list, bare: bool, queue: int) -> list:
    """Pieces claimed one queue byte at a time until empty, each ``(piece, *_parse_range(...))``."""
    parts = []
    while claimed := os.read(queue, 1):
        piece = claimed[0]
        parts.append((piece, *_parse_range(file, *ranges[piece], bare)))
    return parts


def _cut_points(file: Path, start: int, size: int, pieces: int) -> list[tuple[int, int]]:
    """(last event end, next event start) near each of ``pieces - 1`` equal shares of the bytes."""
    cuts: list[tuple[int, int]] = []
    with open(file, "rb") as f:
        for k in range(1, pieces):
            at = start + (size - start) * k // pieces
            if cuts and at <= cuts[-1][1]:
                continue
            f.seek(at)
            m = EVENT_BOUNDARY.search(f.read(_PROBE_BYTES))
            if m:
                cuts.append((at + m.start() + 1, at + m.end() - 1))
    return cuts


def _result(child: subprocess.Popen) -> list:
    out, _ = child.communicate()
    if child.returncode != 0:
        raise UsageError("a range worker failed")
    status, value = pickle.loads(out)
    if status != "ok":
        raise UsageError(value)
    return value


def _parse_range(file: Path, lo: int, hi: int | None, bare: bool) -> tuple:
    """The columns of one byte range, its name table, counts, anomalies and trailing metadata."""
    builder = TimelineBuilder()
    conv = EventConverter(builder, file)
    trailer = read_event_range(file, lo, hi, bare, conv.on_events)
    return conv.pending, builder.names(), conv.counts, conv.anomalies, conv.saw_cuda, trailer


if __name__ == "__main__":
    _file, _bare, _queue, _spans = sys.argv[1:5]
    _ranges = [(int(lo), int(hi) if hi else None) for lo, hi in (span.split(":") for span in _spans.split(","))]
    try:
        _value = ("ok", _parse_pieces(Path(_file), _ranges, _bare == "1", int(_queue)))
    except UsageError as _exc:
        _value = ("error", str(_exc))
    sys.stdout.buffer.write(pickle.dumps(_value, protocol=pickle.HIGHEST_PROTOCOL))
