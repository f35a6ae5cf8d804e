"""Kineto (torch.profiler) Chrome traces into a :class:`~surrobench.trace.model.Timeline`.

Accepts a ``.json`` or ``.json.gz`` file, or a folder of per-rank files (``distributedInfo.rank``; a
single file without it is rank 0). Event categories are matched case-insensitively and under the
names PyTorch has used since 1.8 (``kernel``/``Kernel``, ``gpu_memcpy``/``Memcpy``, ``cuda_runtime``/
``Runtime``, ``cpu_op``/``Operator`` ...). Only complete events (``"ph": "X"``) are loaded; flows,
instants, metadata, ``gpu_user_annotation`` (a GPU-side copy of the CPU ranges) and ``python_function``
are counted in ``meta.event_counts`` and dropped.

Events become table rows in :mod:`surrobench.trace.kineto_events` (times, categories, copies).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from surrobench.errors import UsageError
from surrobench.trace.builder import TimelineBuilder
from surrobench.trace.kineto_events import EventConverter
from surrobench.trace.kineto_json import read_chrome_trace
from surrobench.trace.kineto_split import read_split, usable_cores
from surrobench.trace.model import Timeline, TraceMeta
from surrobench.trace.source import file_kind

_TRACE_SUFFIXES = (".json", ".json.gz")
_INT32_END = 1 << 31


def load_kineto(path: Path) -> Timeline:
    """Load one Kineto trace file, or a folder holding one trace file per rank.

    Raises:
        UsageError: missing path, empty folder, unreadable or invalid file (see
            :func:`~surrobench.trace.kineto_json.read_chrome_trace`), duplicate or missing ranks in a folder.
    """
    path = Path(path)
    files = trace_files(path)
    return load_kineto_files(files, many=len(files) > 1, where=path)


def load_kineto_files(files: list[Path], many: bool, where: Path | None = None, workers: int | None = None) -> Timeline:
    """Load Kineto trace ``files`` into one timeline. ``many``: the files are ranks of one run, so each
    must carry ``distributedInfo.rank`` (a lone file without it is rank 0). ``workers``: processes that
    parse one large plain file's byte ranges at once (:mod:`~surrobench.trace.kineto_split`; ``None``:
    one per usable core, ``1``: this process only).

    Raises:
        UsageError: as :func:`load_kineto`; ``where`` names the folder in the duplicate-rank message.
    """
    builder = TimelineBuilder()
    ranks, devices, counts, anomalies, cuda_run = [], {}, Counter(), Counter(), False
    for file in files:
        conv = EventConverter(builder, file)
        meta = read_split(file, conv, usable_cores() if workers is None else workers)
        if meta is None:
            conv = EventConverter(builder, file)
            meta = read_chrome_trace(file, conv.on_events)
        rank = _rank(meta, file, many=many)
        if rank in ranks:
            raise UsageError(
                f"{file}: rank {rank} appears twice in {where or files[0].parent}; keep one trace per rank"
            )
        ranks.append(rank)
        conv.flush(rank)
        devices.update(_device_names(meta))
        counts.update(conv.counts)
        anomalies.update(conv.anomalies)
        cuda_run = cuda_run or bool(meta.get("deviceProperties")) or conv.saw_cuda
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
    """``[path]`` for a file or pipe; the ``.json``/``.json.gz`` files of a folder, sorted by name.

    Raises:
        UsageError: the path does not exist or is a device or socket, or the folder holds no trace file.
    """
    path = Path(path)
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


def _device_names(meta: dict) -> dict[int, str]:
    props = meta.get("deviceProperties")
    if not isinstance(props, list):
        return {}
    return {
        p["id"]: str(p.get("name", ""))
        for p in props
        if isinstance(p, dict) and isinstance(p.get("id"), int) and 0 <= p["id"] < _INT32_END
    }
