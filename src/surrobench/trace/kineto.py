"""Kineto Chrome traces (``.json``/``.json.gz``, or a rank folder by ``distributedInfo.rank``) into a
:class:`~surrobench.trace.model.Timeline`. Categories matched case-insensitively under every name since PyTorch
1.8; only ``"ph": "X"`` events load, others are counted in ``meta.event_counts``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.trace.kineto_events import EventConverter
from surrobench.trace.kineto_json import read_chrome_trace
from surrobench.execution.host_facts import usable_cpus
from surrobench.trace.kineto_split import read_split
from surrobench.trace.model import Timeline, TimelineBuilder, TraceMeta
from surrobench.trace.source import file_kind

_TRACE_SUFFIXES = (".json", ".json.gz")
_INT32_END = 1 << 31


def load_kineto_files(files: list[Path], many: bool, workers: int | None = None) -> Timeline:
    """Load ``files`` into one timeline (``many``: ranks of one run). Raises UsageError: bad file or ranks."""
    builder = TimelineBuilder()
    ranks, devices, counts, anomalies, cuda_run = [], {}, Counter(), Counter(), False
    for file in files:
        conv = EventConverter(builder, file)
        meta = read_split(file, conv, usable_cpus() if workers is None else workers)
        if meta is None:
            meta = read_chrome_trace(file, conv.on_events)
        rank = _rank(meta, file, many=many)
        if rank in ranks:
            raise UsageError(f"{file}: rank {rank} appears twice in {file.parent}; keep one trace per rank")
        ranks.append(rank)
        conv.flush(rank)
        props = meta.get("deviceProperties")
        for p in props if isinstance(props, list) else ():  # each device's name by its id
            if isinstance(p, dict) and isinstance(p.get("id"), int) and 0 <= p["id"] < _INT32_END:
                devices[p["id"]] = str(p.get("name", ""))
        counts.update(conv.counts)
        anomalies.update(conv.anomalies)
        cuda_run = cuda_run or bool(props) or conv.saw_cuda
    meta = TraceMeta(
        source="kineto",
        paths=tuple(str(f) for f in files),
        ranks=tuple(sorted(ranks)),
        device_names=devices,
        event_counts=dict(counts),
        cuda_run=cuda_run,
        anomalies=dict(anomalies),
    )
    return builder.build(meta)


def trace_files(path: Path) -> list[Path]:
    """``[path]`` for a file or pipe, a folder's sorted ``.json``/``.json.gz``. Raises UsageError: missing, device, socket, empty."""
    if file_kind(path) == "dir":
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_TRACE_SUFFIXES))
        if not files:
            raise UsageError(f"{path}: folder holds no .json or .json.gz trace files")
        return files
    return [path]


def _rank(meta: dict, file: Path, many: bool) -> int:
    info = meta.get("distributedInfo")
    rank = info.get("rank") if isinstance(info, dict) else None
    if isinstance(rank, int) and not isinstance(rank, bool):
        if not 0 <= rank < _INT32_END:
            raise UsageError(f"{file}: distributedInfo.rank {str(rank)[:40]} is out of range (0 to 2^31-1)")
        return rank
    if many:
        raise UsageError(f"{file}: no distributedInfo.rank; a folder must hold one trace per rank")
    return 0
