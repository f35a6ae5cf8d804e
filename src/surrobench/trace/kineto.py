"""Kineto (torch.profiler) Chrome traces into a :class:`~surrobench.trace.model.Timeline`.

Accepts a ``.json`` or ``.json.gz`` file, or a folder of per-rank files (``distributedInfo.rank``; a
single file without it is rank 0). Event categories are matched case-insensitively and under the
names PyTorch has used since 1.8 (``kernel``/``Kernel``, ``gpu_memcpy``/``Memcpy``, ``cuda_runtime``/
``Runtime``, ``cpu_op``/``Operator`` ...). Only complete events (``"ph": "X"``) are loaded; flows,
instants, metadata, ``gpu_user_annotation`` (a GPU-side copy of the CPU ranges) and ``python_function``
are counted in ``meta.event_counts`` and dropped.

Times: Kineto writes ``ts``/``dur`` in microseconds with three decimals (the Chrome trace format's unit,
whatever ``displayTimeUnit`` says). Integer and fractional microseconds are converted separately so
timestamps around 5e12 µs keep nanosecond resolution (float64 spacing there is ~1 ns).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from surrobench.errors import UsageError
from surrobench.trace.builder import TimelineBuilder
from surrobench.trace.kineto_json import read_chrome_trace
from surrobench.trace.model import MISSING, CopyKind, HostMemory, Timeline, TraceMeta

_TABLE_OF_CATEGORY = {
    "kernel": "kernels", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
    "memset": "memset", "cuda_runtime": "api_calls", "runtime": "api_calls", "cuda_driver": "api_calls",
    "driver": "api_calls", "cpu_op": "cpu_ops", "operator": "cpu_ops", "user_annotation": "ranges",
}
_TRACE_SUFFIXES = (".json", ".json.gz")
# "Memcpy HtoD (Pageable -> Device)": direction, then source and destination memory kinds.
_MEMCPY_NAME = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)
_COPY_KIND = {"htod": CopyKind.H2D, "dtoh": CopyKind.D2H, "dtod": CopyKind.D2D, "htoh": CopyKind.H2H,
              "ptop": CopyKind.P2P}
_HOST_MEMORY = {"pageable": HostMemory.PAGEABLE, "pinned": HostMemory.PINNED}


def load_kineto(path: Path) -> Timeline:
    """Load one Kineto trace file, or a folder holding one trace file per rank.

    Raises:
        UsageError: missing path, empty folder, unreadable or invalid file (see
            :func:`~surrobench.trace.kineto_json.read_chrome_trace`), duplicate or missing ranks in a folder.
    """
    path = Path(path)
    files = trace_files(path)
    return load_kineto_files(files, many=len(files) > 1, where=path)


def load_kineto_files(files: list[Path], many: bool, where: Path | None = None) -> Timeline:
    """Load Kineto trace ``files`` into one timeline. ``many``: the files are ranks of one run, so each
    must carry ``distributedInfo.rank`` (a lone file without it is rank 0).

    Raises:
        UsageError: as :func:`load_kineto`; ``where`` names the folder in the duplicate-rank message.
    """
    builder = TimelineBuilder()
    ranks, devices, counts, cuda_run = [], {}, {}, False
    for file in files:
        conv = _Converter(builder, file)
        meta = read_chrome_trace(file, conv.on_events)
        rank = _rank(meta, file, many=many)
        if rank in ranks:
            raise UsageError(f"{file}: rank {rank} appears twice in {where or files[0].parent}; "
                             "keep one trace per rank")
        ranks.append(rank)
        conv.flush(rank)
        devices.update(_device_names(meta))
        for cat, n in conv.counts.items():
            counts[cat] = counts.get(cat, 0) + n
        cuda_run = cuda_run or bool(meta.get("deviceProperties")) or conv.saw_cuda
    meta = TraceMeta(source="kineto", paths=tuple(str(f) for f in files), ranks=tuple(sorted(ranks)),
                     device_names=devices, event_counts=counts, cuda_run=cuda_run)
    return builder.build(meta)


def trace_files(path: Path) -> list[Path]:
    """``[path]`` for a file; the ``.json``/``.json.gz`` files of a folder, sorted by name.

    Raises:
        UsageError: the path does not exist, or the folder holds no trace file.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_TRACE_SUFFIXES))
        if not files:
            raise UsageError(f"{path}: folder holds no .json or .json.gz trace files")
        return files
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    return [path]


def _rank(meta: dict, file: Path, many: bool) -> int:
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    if isinstance(rank, int):
        return rank
    if many:
        raise UsageError(f"{file}: no distributedInfo.rank; a folder must hold one trace per rank")
    return 0


def _device_names(meta: dict) -> dict[int, str]:
    props = meta.get("deviceProperties")
    if not isinstance(props, list):
        return {}
    return {p["id"]: str(p.get("name", "")) for p in props if isinstance(p, dict) and isinstance(p.get("id"), int)}


class _Converter:
    """Turns slices of event dicts into column chunks; the rank is known only after the file ends,
    so chunks wait in ``pending`` (small: columns, not objects) until :meth:`flush`."""

    def __init__(self, builder: TimelineBuilder, file: Path) -> None:
        self.builder, self.file = builder, file
        self.counts: dict[str, int] = {}
        self.pending: list[tuple[str, dict]] = []
        self.saw_cuda = False

    def on_events(self, events: list) -> None:
        groups: dict = {}
        for e in events:
            cat = e.get("cat") if type(e) is dict else None
            groups.setdefault(cat if type(cat) is str else str(cat), []).append(e)
        for cat, evs in groups.items():
            self.counts[cat] = self.counts.get(cat, 0) + len(evs)
            table = _TABLE_OF_CATEGORY.get(cat.lower())
            if table is None:
                continue
            evs = [e for e in evs if e.get("ph") == "X"]
            if evs:
                self.saw_cuda = self.saw_cuda or table in ("kernels", "memcpy", "memset", "api_calls")
                self.pending.append((table, getattr(self, "_" + table)(evs)))

    def flush(self, rank: int) -> None:
        for table, cols in self.pending:
            n = len(cols["start_ns"])
            self.builder.add(table, rank=np.full(n, rank, dtype=np.int32), **cols)
        self.pending = []

    def _base(self, evs: list) -> dict:
        start, ok = _times_ns([e.get("ts") for e in evs])
        dur, dur_ok = _times_ns([e.get("dur", 0) for e in evs])
        if not (ok.all() and dur_ok.all()):
            bad = evs[int(np.argmin(ok & dur_ok))]
            raise UsageError(f"{self.file}: event without a numeric 'ts'/'dur' (first: {bad!r:.200})")
        return {"start_ns": start, "dur_ns": dur, "name_id": self._names(evs)}

    def _names(self, evs: list) -> np.ndarray:
        names = [e.get("name", "") for e in evs]
        try:
            return self.builder.intern(names)
        except TypeError:  # an unhashable name: keep its text
            return self.builder.intern(n if isinstance(n, str) else str(n) for n in names)

    def _gpu(self, evs: list) -> tuple[dict, list]:
        cols = self._base(evs)
        args = _args(evs)
        cols["device"] = _ints([a.get("device", e.get("pid")) for a, e in zip(args, evs)])
        cols["stream"] = _ints([a.get("stream", e.get("tid")) for a, e in zip(args, evs)])
        cols["correlation"] = _ints([a.get("correlation", MISSING) for a in args])
        return cols, args

    def _kernels(self, evs: list) -> dict:
        return self._gpu(evs)[0]

    def _memcpy(self, evs: list) -> dict:
        cols, args = self._gpu(evs)
        cols["bytes"] = _ints([a.get("bytes", 0) for a in args])
        kind_of, mem_of = {}, {}
        for name_id, e in zip(cols["name_id"].tolist(), evs):
            if name_id not in kind_of:
                kind_of[name_id], mem_of[name_id] = _parse_memcpy_name(str(e.get("name", "")))
        cols["kind"] = np.array([kind_of[i] for i in cols["name_id"].tolist()], dtype=np.int8)
        cols["host_memory"] = np.array([mem_of[i] for i in cols["name_id"].tolist()], dtype=np.int8)
        return cols

    def _memset(self, evs: list) -> dict:
        cols, args = self._gpu(evs)
        cols["bytes"] = _ints([a.get("bytes", 0) for a in args])
        return cols

    def _host(self, evs: list) -> tuple[dict, list]:
        cols = self._base(evs)
        cols["tid"] = _ints([e.get("tid") for e in evs])
        return cols, _args(evs)

    def _api_calls(self, evs: list) -> dict:
        cols, args = self._host(evs)
        cols["correlation"] = _ints([a.get("correlation", MISSING) for a in args])
        cols["external_id"] = _ints([a.get("External id", MISSING) for a in args])
        return cols

    def _cpu_ops(self, evs: list) -> dict:
        cols, args = self._host(evs)
        cols["external_id"] = _ints([a.get("External id", MISSING) for a in args])
        return cols

    def _ranges(self, evs: list) -> dict:
        return self._host(evs)[0]


def _args(evs: list) -> list[dict]:
    return [a if type(a) is dict else {} for a in (e.get("args") for e in evs)]


def _times_ns(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(ns int64, ok bool) from microsecond floats; whole and fractional µs converted apart (module doc)."""
    try:
        us = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        us = np.array([v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan for v in values],
                      dtype=np.float64)
    ok = np.isfinite(us)
    us = np.where(ok, us, 0.0)
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000).astype(np.int64), ok


def _ints(values: list) -> np.ndarray:
    """int64 column; a value that is not an integer (string tid, None) becomes :data:`MISSING`."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([_int_or_missing(v) for v in values], dtype=np.int64)


def _int_or_missing(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return MISSING


def _parse_memcpy_name(name: str) -> tuple[int, int]:
    """(CopyKind, HostMemory) from a Kineto memcpy name such as ``Memcpy DtoH (Device -> Pinned)``."""
    m = _MEMCPY_NAME.search(name)
    if not m:
        return CopyKind.UNKNOWN, HostMemory.UNKNOWN
    kind = _COPY_KIND.get(m.group(1).lower(), CopyKind.UNKNOWN)
    host_side = {CopyKind.H2D: m.group(2), CopyKind.D2H: m.group(3)}.get(kind)
    if kind in (CopyKind.D2D, CopyKind.P2P):
        return kind, HostMemory.NONE
    return kind, _HOST_MEMORY.get((host_side or "").lower(), HostMemory.UNKNOWN)
