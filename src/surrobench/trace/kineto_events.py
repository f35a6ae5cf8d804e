"""Kineto events into timeline table chunks; µs converted in integer and fractional parts (ns exact)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from surrobench.errors import UsageError
from surrobench.records.stats import number_or_none
from surrobench.trace.model import MISSING, CopyKind, HostMemory, TimelineBuilder, name_text

_TABLE_OF_CATEGORY = dict(kernel="kernels", gpu_memcpy="memcpy", memcpy="memcpy", gpu_memset="memset", memset="memset")
_TABLE_OF_CATEGORY |= dict(cuda_runtime="api_calls", runtime="api_calls", cuda_driver="api_calls", driver="api_calls")
_TABLE_OF_CATEGORY |= dict(cpu_op="cpu_ops", operator="cpu_ops", user_annotation="ranges")
_CODES = {t: i + 1 for i, t in enumerate(dict.fromkeys(_TABLE_OF_CATEGORY.values()))}  # 0: a category not loaded
_TABLE_CODE = {cat: _CODES[t] for cat, t in _TABLE_OF_CATEGORY.items()}
_INVALID = -(1 << 63)  # marks a value that is present but cannot be held; reported, then MISSING
_NUMBER_TYPES = frozenset({int, float})
_MAX_ABS_US = float(1 << 62) / 1000
"""Largest |ts| or |dur| in µs: as int64 ns, two such values still subtract without overflow."""
# "Memcpy HtoD (Pageable -> Device)": direction, then source and destination memory kinds.
_MEMCPY_NAME = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?", re.IGNORECASE)
_COPY_KIND = dict(htod=CopyKind.H2D, dtoh=CopyKind.D2H, dtod=CopyKind.D2D, htoh=CopyKind.H2H, ptop=CopyKind.P2P)
_HOST_MEMORY = {"pageable": HostMemory.PAGEABLE, "pinned": HostMemory.PINNED}


class EventConverter:
    """Column slices to table chunks, ``pending`` until :meth:`flush`; bad values in ``anomalies``."""

    def __init__(self, builder: TimelineBuilder, file: Path) -> None:
        self.builder, self.file = builder, file
        self.counts: Counter = Counter()
        self.anomalies: Counter = Counter()
        self.pending: list[tuple[str, dict]] = []
        self.saw_cuda = False

    def on_events(self, events) -> None:
        """Take one slice (:class:`~surrobench.trace.kineto_json.DictSlice` or the msgspec equivalent)."""
        kinds = events.kinds  # (ph, cat) of each event: two passes over the slice (keys, index), a few distinct
        try:
            distinct = list(set(kinds))
        except TypeError:  # an unhashable ph or category (a list): ph as complete or not, categories as text
            cats = [c for _, c in kinds]
            try:
                set(cats)
            except TypeError:
                cats = [name_text(c) for c in cats]
            kinds = list(zip(["X" if ph == "X" else None for ph, _ in kinds], cats))
            distinct = list(set(kinds))
        index_of = {k: i for i, k in enumerate(distinct)}
        index = np.array(list(map(index_of.__getitem__, kinds)), dtype=np.int32)
        for (ph, c), n in zip(distinct, np.bincount(index, minlength=len(distinct)).tolist()):
            self.counts[name_text(c) if c is not None else "None"] += n
            loaded = _TABLE_CODE.get(name_text(c).lower(), 0)
            if loaded and ph != "X":
                self.anomalies["events_not_complete"] += n
            elif ph == "X" and c.__class__ is not str:
                self.anomalies["events_without_category"] += n
        code_of_index = np.array(
            [_TABLE_CODE.get(name_text(c).lower(), 0) if ph == "X" else 0 for ph, c in distinct], dtype=np.int8
        )
        if not code_of_index.any():
            return
        code = code_of_index[index]
        for table, k in _CODES.items():
            rows = np.flatnonzero(code == k).tolist()
            if rows:
                self.saw_cuda = self.saw_cuda or table in ("kernels", "memcpy", "memset", "api_calls")
                self.pending.append((table, getattr(self, "_" + table)(events.take(rows))))

    def flush(self, rank: int) -> None:
        for table, cols in self.pending:
            self.builder.add(table, rank=np.full(len(cols["start_ns"]), rank, dtype=np.int32), **cols)
        self.pending = []

    def _base(self, rows: Callable[[str], list]) -> dict:
        dur = rows("dur")
        missing = dur.count(None)
        if missing:
            self.anomalies["events_without_duration"] += missing
            dur = [0 if d is None else d for d in dur]
        start, ok = self._times_ns(rows("ts"))
        dur_ns, dur_ok = self._times_ns(dur)
        if not (ok.all() and dur_ok.all()):
            i = int(np.argmin(ok & dur_ok))
            bad = {"ts": rows("ts")[i], "dur": dur[i], "name": rows("name")[i]}
            raise UsageError(
                f"{self.file}: event whose 'ts'/'dur' is not a number of microseconds within "
                f"±{_MAX_ABS_US:.3g} (first: {bad!r:.200})"
            )
        return {"start_ns": start, "dur_ns": dur_ns, "name_id": self.builder.intern_names(rows("name"))}

    def _times_ns(self, values: list) -> tuple[np.ndarray, np.ndarray]:
        """:func:`_times_ns` reading numeric text (counted ``times_as_text``), bools not numbers."""
        kinds = set(map(type, values))
        if kinds <= _NUMBER_TYPES:
            return _times_ns(values)
        if str in kinds:
            parsed = [number_or_none(v) if v.__class__ is str else v for v in values]
            self.anomalies["times_as_text"] += sum(v.__class__ is str and p is not None for v, p in zip(values, parsed))
            values = parsed
        if bool in kinds:
            values = [None if v.__class__ is bool else v for v in values]
        return _times_ns(values)

    def _ints(self, values: list, bits: int = 64, default: list | None = None) -> np.ndarray:
        """int64 column; absent -> ``default`` (else :data:`MISSING`); non-integer or too wide -> MISSING, counted."""
        if default is not None:
            values = [d if v is None else v for v, d in zip(values, default)]
        try:
            out = np.array(values)  # int64 exactly when every value is an int that fits
        except (ValueError, OverflowError):  # ragged lists
            out = None
        fits = out is not None and out.dtype == np.int64 and out.ndim == 1
        if fits and (bits == 64 or not out.size or (out.min() > -(1 << (bits - 1)) and out.max() < 1 << (bits - 1))):
            return out
        out = np.array(
            [
                v if v.__class__ is int and -(1 << (bits - 1)) < v < 1 << (bits - 1) else _int_or_missing(v, bits)
                for v in values
            ],
            dtype=np.int64,
        )
        bad = int((out == _INVALID).sum())
        if bad:
            self.anomalies["values_out_of_range"] += bad
            out[out == _INVALID] = MISSING
        return out

    def _gpu(self, rows: Callable[[str], list]) -> dict:
        cols = self._base(rows)
        cols["device"] = self._ints(rows("device"), 32, default=rows("pid"))
        cols["stream"] = self._ints(rows("stream"), default=rows("tid"))
        cols["correlation"] = self._ints(rows("correlation"))
        return cols

    _kernels = _gpu

    def _memcpy(self, rows: Callable[[str], list]) -> dict:
        cols = self._memset(rows)
        kind_of, mem_of = {}, {}
        for name_id, name in zip(cols["name_id"].tolist(), rows("name")):
            if name_id not in kind_of:
                kind_of[name_id], mem_of[name_id] = _parse_memcpy_name(name_text(name))
        cols["kind"] = np.array([kind_of[i] for i in cols["name_id"].tolist()], dtype=np.int8)
        cols["host_memory"] = np.array([mem_of[i] for i in cols["name_id"].tolist()], dtype=np.int8)
        return cols

    def _memset(self, rows: Callable[[str], list]) -> dict:
        cols = self._gpu(rows)
        cols["bytes"] = np.maximum(self._ints(rows("bytes")), 0)
        return cols

    def _host(self, rows: Callable[[str], list]) -> dict:
        cols = self._base(rows)
        cols["tid"] = self._ints(rows("tid"))
        return cols

    def _cpu_ops(self, rows: Callable[[str], list]) -> dict:
        cols = self._host(rows)
        cols["external_id"] = self._ints(rows("external_id"))
        return cols

    def _api_calls(self, rows: Callable[[str], list]) -> dict:
        cols = self._cpu_ops(rows)
        cols["correlation"] = self._ints(rows("correlation"))
        return cols

    _ranges = _host


def _times_ns(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(ns int64, ok bool) from µs floats; not ok beyond ±:data:`_MAX_ABS_US` or not finite."""
    try:
        us = np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        us = np.array(
            [
                v if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300 else np.nan
                for v in values
            ],
            dtype=np.float64,
        )
    ok = np.isfinite(us) & (np.abs(us) <= _MAX_ABS_US)
    us = np.where(ok, us, 0.0)
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000).astype(np.int64), ok


def _int_or_missing(value, bits: int) -> int:
    if value is None:
        return MISSING
    if value.__class__ is float and value.is_integer():
        value = int(value)
    if value.__class__ is not int or not -(1 << (bits - 1)) < value < (1 << (bits - 1)):
        return _INVALID
    return value


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
