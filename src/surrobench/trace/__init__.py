"""Trace loading: Kineto JSON and Nsight Systems exports into one columnar :class:`Timeline`."""

from __future__ import annotations

from pathlib import Path

from surrobench.errors import UsageError
from surrobench.records.schemas import NSYS_REPORT_SUFFIXES
from surrobench.trace.model import Timeline
from surrobench.trace.source import SQLITE_MAGIC, file_kind


def load_trace(path: Path | str) -> Timeline:
    """Load a Kineto trace (file, pipe or rank folder), an nsys SQLite export or report (by content and suffix).
    Raises UsageError: missing path, another file kind, or content this tool does not read."""
    from surrobench.trace import kineto, nsys_sqlite

    path = Path(path)
    kind = file_kind(path)
    if kind == "file" and path.name.endswith(NSYS_REPORT_SUFFIXES):
        return nsys_sqlite.load_nsys_report(path)
    if kind == "file":
        try:
            with open(path, "rb") as f:
                magic = f.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if magic == SQLITE_MAGIC:
            return nsys_sqlite.load_nsys_sqlite(path)
        if path.suffix.lower() in (".sqlite", ".db", ".sqlite3"):
            raise UsageError(
                f"{path}: not an SQLite file (it does not start with the SQLite header); "
                "export the report with `nsys export --type sqlite`"
            )
    files = kineto.trace_files(path)  # one file or pipe, or a folder's rank traces
    return kineto.load_kineto_files(files, many=len(files) > 1)


__all__ = ["Timeline", "load_trace"]
