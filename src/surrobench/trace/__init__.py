"""Trace loading: Kineto JSON and Nsight Systems exports into one columnar :class:`Timeline`."""

from __future__ import annotations

from pathlib import Path

from surrobench.errors import UsageError
from surrobench.trace.model import Timeline

_SQLITE_MAGIC = b"SQLite format 3\x00"
NSYS_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
"""Suffixes of Nsight Systems reports (``.nsys-rep``; ``.qdrep`` from older nsys versions)."""


def load_trace(path: Path | str) -> Timeline:
    """Load a Kineto trace (file or per-rank folder), an nsys SQLite export or an nsys report.

    The format is chosen by content (SQLite magic bytes) and suffix (``.nsys-rep``, ``.qdrep``);
    anything else is read as Kineto JSON.

    Raises:
        UsageError: the path is missing or its content is not a trace this tool reads.
    """
    from surrobench.trace import kineto, nsys_sqlite

    path = Path(path)
    if path.is_file() and path.name.endswith(NSYS_REPORT_SUFFIXES):
        return nsys_sqlite.load_nsys_report(path)
    if path.is_file():
        try:
            with open(path, "rb") as f:
                magic = f.read(len(_SQLITE_MAGIC))
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if magic == _SQLITE_MAGIC:
            return nsys_sqlite.load_nsys_sqlite(path)
    return kineto.load_kineto(path)


__all__ = ["NSYS_REPORT_SUFFIXES", "Timeline", "load_trace"]
