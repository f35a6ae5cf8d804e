"""Many rank traces at once: :func:`map_rank_traces` loads each rank's trace in a worker (forkserver pool or a
Dask cluster), calls a function on its :class:`~surrobench.trace.model.Timeline` there and returns only the result
(worker memory: docs/benchmarks/trace-analysis.md). Scripts need an ``if __name__ == "__main__":`` guard
(forkserver imports ``__main__``). Local workers are capped by ``RLIMIT_DATA`` (setrlimit(2)); on Dask its
``--memory-limit`` applies and trace paths must be readable on its workers."""

from __future__ import annotations

import multiprocessing
import os
import resource
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path
from typing import TypeVar

from surrobench.errors import UsageError
from surrobench.trace.kineto import load_kineto_files, trace_files
from surrobench.execution.host_facts import usable_cpus
from surrobench.trace.model import Timeline

R = TypeVar("R")

WORKER_MEMORY_BYTES = 2 << 30
"""Default cap on one local worker's private data (bytes). A streamed load needs about half the trace's JSON size
plus ~150 MB (docs/benchmarks/trace-analysis.md); 2 GiB leaves room for the caller's function."""

DASK_CONNECT_TIMEOUT_S = 10
"""Seconds to wait for the Dask scheduler before giving up with a usage error."""


def rank_trace_files(paths: Path | str | Sequence[Path | str]) -> list[Path]:
    """Trace files behind ``paths`` (folder, file or list). Raises UsageError: missing, empty, twice."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise UsageError("no rank trace given")
    files = [f for item in items for f in trace_files(Path(item))]
    seen: set[Path] = set()
    for f in files:
        key = f.resolve()
        if key in seen:
            raise UsageError(f"{f}: given twice; list each rank's trace once")
        seen.add(key)
    return files


def map_rank_traces(
    paths: Path | str | Sequence[Path | str],
    fn: Callable[[Timeline], R],
    *,
    workers: int | None = None,
    dask_scheduler: str | None = None,
    worker_memory_bytes: int = WORKER_MEMORY_BYTES,
) -> list[R]:
    """``[fn(timeline of rank r)]`` by rank, each in a worker: ``paths`` (:func:`rank_trace_files`), picklable ``fn``
    returning something small, ``workers`` (None: per core and memory; 1: inline), ``dask_scheduler`` address,
    ``worker_memory_bytes`` cap. Raises UsageError: bad path or trace, a rank twice, a worker killed, Dask missing."""
    files = rank_trace_files(paths)
    many = len(files) > 1
    if workers is not None and workers < 1:
        raise UsageError(f"workers must be at least 1, got {workers}")
    job = partial(_one_rank, fn=fn, many=many)
    if dask_scheduler:
        pairs = _on_dask(dask_scheduler, job, files)
    else:
        n = default_workers(len(files), worker_memory_bytes) if workers is None else min(workers, len(files))
        # a worker re-imports the caller's main script by its path: one read from stdin (`python -`) has none
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        n = 1 if main is not None and not os.path.isfile(main) else n
        pairs = [job(f) for f in files] if n == 1 else _on_pool(n, job, files, worker_memory_bytes)
    file_of: dict[int, Path] = {}
    for (rank, _), file in zip(pairs, files):
        if rank in file_of:
            raise UsageError(f"{file}: rank {rank} also in {file_of[rank]}; keep one trace per rank")
        file_of[rank] = file
    return [result for _, result in sorted(pairs, key=lambda p: p[0])]


def default_workers(n_files: int, worker_memory_bytes: int = WORKER_MEMORY_BYTES) -> int:
    """Worker count for ``n_files`` traces: usable cores, capped by the files and by available memory."""
    import psutil

    cores = usable_cpus()
    by_memory = psutil.virtual_memory().available // max(1, worker_memory_bytes)
    return max(1, min(n_files, cores, by_memory))


def _one_rank(file: Path, fn: Callable[[Timeline], R], many: bool) -> tuple[int, R]:
    """(rank, fn(timeline)) for one trace file; runs in the worker."""
    try:
        timeline = load_kineto_files([Path(file)], many=many, workers=1)
    except MemoryError:
        raise UsageError(
            f"{file}: loading this rank's trace ran out of the worker's memory cap; "
            "give the workers more memory or analyze fewer ranks at once"
        ) from None
    return timeline.meta.ranks[0], fn(timeline)


def _limit_memory(limit_bytes: int) -> None:
    """Pool initializer: cap this worker's private data segment (``RLIMIT_DATA``)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit_bytes = min(limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, hard))


def _on_pool(n: int, job: Callable, files: list[Path], limit_bytes: int) -> list:
    methods = multiprocessing.get_all_start_methods()
    # forkserver: workers fork from a clean server, not from a caller that may hold threads (torch, BLAS).
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    try:
        with ProcessPoolExecutor(n, mp_context=context, initializer=_limit_memory, initargs=(limit_bytes,)) as pool:
            return list(pool.map(job, files))
    except BrokenProcessPool:
        text = (
            f"a worker process died while reading {len(files)} rank traces: out of memory, or a script calling this "
            "without an `if __name__ == '__main__':` guard (each worker re-imports it, docs/api.md); retry with fewer "
            "{workers} (1 reads them in this process)"
        )
        raise UsageError.naming(text, ("workers",)) from None


def _on_dask(address: str, job: Callable, files: list[Path]) -> list:
    try:
        from distributed import Client
    except ImportError:
        detail = "needs the 'distributed' package: pip install 'surrobench[dask]'"
        raise UsageError.bad("dask_scheduler", detail) from None
    try:
        client = Client(address, timeout=DASK_CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        return client.gather(client.map(job, [str(f) for f in files], pure=False))
    finally:
        client.close()
