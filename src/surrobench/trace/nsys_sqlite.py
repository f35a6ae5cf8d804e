"""Nsight Systems SQLite exports (NVIDIA "SQLite Schema Reference") into a :class:`Timeline`."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np

from surrobench.errors import UsageError
from surrobench.trace.model import MISSING, CopyKind, HostMemory, Timeline, TimelineBuilder, TraceMeta, name_text

# CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 9 HtoH, 10 PtoP (CUPTI Activity API reference).
_COPY_KIND = {1: CopyKind.H2D, 2: CopyKind.D2H, 8: CopyKind.D2D, 9: CopyKind.H2H, 10: CopyKind.P2P}
# CUpti_ActivityMemoryKind: 1 pageable, 2 pinned.
_HOST_MEMORY = {1: HostMemory.PAGEABLE, 2: HostMemory.PINNED}
# ENUM_NSYS_EVENT_TYPE: NvtxPushPopRange and NvtxStartEndRange (the rows that are ranges, not marks).
_NVTX_RANGE_TYPES = (59, 60)
_VERSION_SUFFIX = re.compile(r"_v\d+$")  # nsys names API calls "cudaLaunchKernel_v7000"
_NSYS_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
_NSYS_TABLES += ("CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "TARGET_INFO_GPU", "TARGET_INFO_SESSION_START_TIME")


def load_nsys_report(report: Path) -> Timeline:
    """Export an ``.nsys-rep``/``.qdrep`` with ``nsys`` and load it. Raises UsageError: no ``nsys`` (with the command), export failed."""
    out = report.with_suffix(".sqlite")  # nsys export's sqlite file
    cmd = ["nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(report)]
    if shutil.which("nsys") is None:
        raise UsageError(
            f"{report}: nsys is not on PATH; export it where nsys is installed with "
            f"`{' '.join(cmd)}` and analyze the .sqlite file"
        )
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        raise UsageError(f"{report}: `{' '.join(cmd)}` failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return load_nsys_sqlite(out)


def load_nsys_sqlite(path: Path) -> Timeline:
    """Load an nsys SQLite export. Raises UsageError: not SQLite, or without an export's tables."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{path}: not a readable SQLite file ({exc})") from None
    if "StringIds" not in tables or not tables & set(_NSYS_TABLES):
        db.close()
        raise UsageError(
            f"{path}: SQLite file without nsys tables (StringIds, CUPTI_ACTIVITY_KIND_*); "
            "export a report with `nsys export --type sqlite`"
        )
    try:
        return _load(db, tables, path)
    except sqlite3.DatabaseError as exc:
        raise UsageError(f"{path}: unreadable nsys export ({exc})") from None
    except (ValueError, TypeError, OverflowError) as exc:  # TEXT, BLOB, NULL or > int64 where an integer belongs
        raise UsageError(
            f"{path}: nsys export with a value that is not a 64-bit integer where one is "
            f"expected ({str(exc)[:120]}); re-export the report"
        ) from None
    finally:
        db.close()


def _load(db: sqlite3.Connection, tables: set[str], path: Path) -> Timeline:
    strings = {i: name_text(v) for i, v in db.execute("SELECT id, value FROM StringIds")}
    builder, counts = TimelineBuilder(), {}
    gpu_cols = "start, end - start, {name}, deviceId, streamId, {corr}, {pid}"
    gpu = {
        "kernels": ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName", ""),
        "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind", ", bytes, copyKind, {src}, {dst}"),
        "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", "-1", ", bytes"),
    }
    pid_of, fetched = {}, {}
    for table, (sql_table, name_col, extra) in gpu.items():
        if sql_table not in tables:
            continue
        cols = _columns(db, sql_table)
        sql = (gpu_cols + extra).format(
            name=name_col,
            corr=_or(cols, "correlationId"),
            pid=_or(cols, "globalPid"),
            src=_or(cols, "srcKind"),
            dst=_or(cols, "dstKind"),
        )
        rows = db.execute(f"SELECT {sql} FROM {sql_table}").fetchall()
        counts[sql_table] = len(rows)
        for row in rows:  # processes numbered in order of appearance, GPU tables first
            if row[6] not in (None, MISSING):
                _rank(pid_of, row[6])
        fetched[table] = rows
    rank_of_corr = _add_api_calls(db, tables, strings, builder, counts, pid_of)
    anomalies = _add_nvtx(db, tables, strings, builder, counts, pid_of)
    for table, rows in fetched.items():
        if rows:
            builder.add(table, **_gpu_columns(table, rows, strings, builder, pid_of, rank_of_corr))
    ranks = tuple(sorted(set(pid_of.values()))) or (0,)
    gpus = db.execute("SELECT id, name FROM TARGET_INFO_GPU") if "TARGET_INFO_GPU" in tables else ()
    meta = TraceMeta(
        source="nsys",
        paths=(str(path),),
        ranks=ranks,
        device_names={int(i): str(n) for i, n in gpus if i is not None},
        event_counts=counts,
        cuda_run=bool(counts.get("CUPTI_ACTIVITY_KIND_RUNTIME")),
        anomalies=anomalies,
    )
    return builder.build(meta)


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _or(cols: set[str], col: str, default: str = str(MISSING)) -> str:
    return col if col in cols else default


def _rank(pid_of: dict, global_id: int | None) -> int:
    """Rank of a process: processes numbered in order of appearance (one process per rank)."""
    pid = (global_id or 0) >> 24 & 0xFFFFFF  # serialized GlobalId: pid in bits 24..47 (nsys SQLite examples)
    return pid_of.setdefault(pid, len(pid_of))


def _pidless_rank(pid_of: dict, rank_of_corr: dict, corr: int | None) -> int:
    """Rank of a GPU row without ``globalPid``: the only process, else the one with its correlation id."""
    ranks = set(pid_of.values())
    if len(ranks) <= 1:
        return ranks.pop() if ranks else _rank(pid_of, None)
    return rank_of_corr.get(corr) or 0


def _gpu_columns(
    table: str, rows: list, strings: dict, builder: TimelineBuilder, pid_of: dict, rank_of_corr: dict
) -> dict:
    cols = list(zip(*rows))
    names = {
        "kernels": [strings.get(i, "") for i in cols[2]],
        "memcpy": [f"Memcpy {CopyKind(_COPY_KIND.get(k, 0)).name}" for k in cols[2]],
        "memset": ["Memset"] * len(rows),
    }[table]
    out = {
        "start_ns": cols[0],
        "dur_ns": cols[1],
        "name_id": builder.intern_names(names),
        "device": cols[3],
        "stream": cols[4],
        "correlation": [MISSING if c is None else c for c in cols[5]],
        "rank": [
            _pidless_rank(pid_of, rank_of_corr, c) if g in (None, MISSING) else _rank(pid_of, g)
            for g, c in zip(cols[6], cols[5])
        ],
    }
    if table in ("memcpy", "memset"):
        out["bytes"] = cols[7]
    if table == "memcpy":
        kind = [_COPY_KIND.get(k, CopyKind.UNKNOWN) for k in cols[8]]
        host_side = [s if k == CopyKind.H2D else d for k, s, d in zip(kind, cols[9], cols[10])]
        out["kind"] = kind
        out["host_memory"] = [
            HostMemory.NONE if k in (CopyKind.D2D, CopyKind.P2P) else _HOST_MEMORY.get(h, HostMemory.UNKNOWN)
            for k, h in zip(kind, host_side)
        ]
    return out


def _add_api_calls(db, tables, strings, builder, counts, pid_of) -> dict:
    """Add the runtime API calls; returns ``{correlationId: rank}`` for ids only one process used."""
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:
        return {}
    rows = db.execute(
        "SELECT start, end - start, nameId, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    ).fetchall()
    counts["CUPTI_ACTIVITY_KIND_RUNTIME"] = len(rows)
    if not rows:
        return {}
    start, dur, name, tid, corr = zip(*rows)
    rank = [_rank(pid_of, t) for t in tid]
    builder.add(
        "api_calls",
        start_ns=start,
        dur_ns=dur,
        name_id=builder.intern_names([_VERSION_SUFFIX.sub("", strings.get(i, "")) for i in name]),
        tid=[t or 0 for t in tid],
        correlation=[MISSING if c is None else c for c in corr],
        external_id=np.full(len(rows), MISSING),
        rank=rank,
    )
    rank_of_corr: dict = {}
    for c, r in zip(corr, rank):
        if c is not None:
            rank_of_corr[c] = r if rank_of_corr.get(c, r) == r else None
    return rank_of_corr


def _add_nvtx(db, tables, strings, builder, counts, pid_of) -> dict[str, int]:
    """NVTX ranges into ``builder``; returns the anomalies (ranges ending before they start). Marks skipped."""
    if "NVTX_EVENTS" not in tables:
        return {}
    cols = _columns(db, "NVTX_EVENTS")
    type_filter = f"AND eventType IN {_NVTX_RANGE_TYPES}" if "eventType" in cols else ""
    (backwards,) = db.execute(
        f"SELECT count(*) FROM NVTX_EVENTS WHERE end IS NOT NULL AND end < start {type_filter}"
    ).fetchone()
    anomalies = {"ranges_ending_before_start": backwards} if backwards else {}
    rows = db.execute(
        f"SELECT start, end - start, {_or(cols, 'text', 'NULL')}, {_or(cols, 'textId', 'NULL')}, "
        f"{_or(cols, 'globalTid', '0')} FROM NVTX_EVENTS WHERE end IS NOT NULL "
        f"AND end >= start {type_filter}"
    ).fetchall()
    counts["NVTX_EVENTS"] = len(rows)
    if not rows:
        return anomalies
    start, dur, text, text_id, tid = zip(*rows)
    names = [name_text(t) if t is not None else strings.get(i, "") for t, i in zip(text, text_id)]
    builder.add(
        "ranges",
        start_ns=start,
        dur_ns=dur,
        name_id=builder.intern_names(names),
        tid=[t or 0 for t in tid],
        rank=[_rank(pid_of, t) for t in tid],
    )
    return anomalies
