"""nsys SQLite loader on a small database laid out as the documented export schema, and bad inputs."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import exec_config

from surrobench.analysis.timeline import analyze_timeline
from surrobench.collect.nsys import NsysOptions, nsys_command, run_nsys
from surrobench.errors import UsageError
from surrobench.trace import load_trace
from surrobench.trace.model import CopyKind, HostMemory

PID = 4242 << 24  # serialized GlobalId: the process id sits above the low 24 bits
TID = PID | 7
US = 1_000

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER, blockX INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, eventId INTEGER NOT NULL PRIMARY KEY);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT);
"""


def make_db(path):
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany(
        "INSERT INTO StringIds VALUES (?, ?)",
        [
            (1, "gemm_kernel"),
            (2, "cudaLaunchKernel_v7000"),
            (3, "cudaStreamSynchronize_v3020"),
            (4, "cudaMemcpyAsync_v3020"),
            (5, "forward"),
        ],
    )
    kernels = [(0, 10 * US, 1), (40 * US, 50 * US, 3)]  # a 30 us gap after a sync
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, 1, 1, 1, 128)",
        [(s, e, c, PID) for s, e, c in kernels],
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, 7, 4, ?, 1048576, 1, 1, 3)", (80 * US, 90 * US, PID)
    )  # H2D from pageable memory
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
        [
            (-5 * US, -2 * US, TID, 1, 2),
            (-1 * US, 12 * US, TID, 2, 3),
            (30 * US, 35 * US, TID, 3, 2),
            (60 * US, 70 * US, TID, 4, 4),
        ],
    )
    db.execute(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, NULL, NULL, NULL, ?, ?, 5, 0, 1)",
        (-10 * US, 100 * US, TID, TID),
    )
    db.execute(
        "INSERT INTO NVTX_EVENTS VALUES (?, NULL, 34, NULL, NULL, NULL, 'a mark', ?, ?, NULL, 0, 2)", (0, TID, TID)
    )
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H200')")
    db.commit()
    db.close()
    return path


def test_nsys_export_loads_into_the_timeline(tmp_path):
    tl = load_trace(make_db(tmp_path / "r.sqlite"))
    assert tl.meta.source == "nsys" and tl.meta.device_names == {0: "NVIDIA H200"}
    assert len(tl.kernels) == 2 and len(tl.api_calls) == 4
    assert tl.name(tl.api_calls.name_id[1]) == "cudaStreamSynchronize"  # version suffix dropped
    assert tl.memcpy.kind.tolist() == [CopyKind.H2D] and tl.memcpy.host_memory.tolist() == [HostMemory.PAGEABLE]
    assert [tl.name(i) for i in tl.ranges.name_id] == ["forward"]  # the mark is not a range


def test_nsys_gaps_have_causes(tmp_path):
    r = analyze_timeline(load_trace(make_db(tmp_path / "r.sqlite")))
    gaps = sorted(r.gaps.longest, key=lambda g: g.start_ms)
    assert [(round(g.start_ms * 1e3), round(g.dur_us), g.cause) for g in gaps] == [
        (20, 30, "host_sync"),
        (60, 30, "h2d_copy"),
    ]  # times from the first event, at -10 us
    assert gaps[0].sync_call == "cudaStreamSynchronize" and gaps[1].pageable


def test_absent_tables_are_tolerated(tmp_path):
    path = tmp_path / "k.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.split("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY")[0])
    db.execute("INSERT INTO StringIds VALUES (1, 'k')")
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 5, 0, 1, 7, 1, 0, 1, 1, 1, 1)")
    db.commit()
    db.close()
    r = analyze_timeline(load_trace(path))
    assert r.status == "ok" and r.launches.linked == 0 and r.anomalies.ops_without_launch == 1


def test_sqlite_that_is_not_nsys_and_report_without_nsys(tmp_path, monkeypatch):
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(UsageError, match="without nsys tables"):
        load_trace(other)
    monkeypatch.setenv("PATH", str(tmp_path))
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\0")
    with pytest.raises(UsageError, match="nsys export --type sqlite"):
        load_trace(rep)


def test_nsys_command_follows_the_source_text(tmp_path, monkeypatch):
    options = NsysOptions(trace_dir=tmp_path)
    base, result_path, cmd = nsys_command(exec_config(), "run", options)
    assert cmd[:3] == ["nsys", "profile", "--trace=cuda,nvtx,osrt,cudnn,cublas"] and f"--output={base}" in cmd
    assert "--cuda-memory-usage=true" not in cmd and "--capture-range=cudaProfilerApi" not in cmd
    assert cmd[cmd.index("--result") + 1] == str(result_path) and cmd[cmd.index("--profiler") + 1] == "none"
    _, _, cmd = nsys_command(exec_config(device="cuda"), "run", NsysOptions(trace_dir=tmp_path, cuda_memory_usage=True))
    assert "--cuda-memory-usage=true" in cmd and "--capture-range=cudaProfilerApi" in cmd
    monkeypatch.setenv("PATH", str(tmp_path))
    run = run_nsys(base, cmd)
    assert run.report is None and "nsys profile --trace=cuda" in run.message


def _db_without_gpu_pids(path, pids):
    """Kernels and copies in tables without ``globalPid`` (older exports); one launch per process in ``pids``."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.replace(" globalPid INTEGER,", ""))
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "gemm_kernel"), (2, "cudaLaunchKernel_v7000")])
    for i, pid in enumerate(pids):
        corr = 10 + i
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 2, 0, NULL)",
            (i * 100 * US, (i * 100 + 2) * US, (pid << 24) | 7, corr),
        )
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId,"
            " demangledName, shortName) VALUES (?, ?, ?, 1, 7, ?, 1, 1)",
            ((i * 100 + 5) * US, (i * 100 + 10) * US, i, corr),
        )
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("pids", [(4242,), (4242, 4343)])
def test_gpu_tables_without_global_pid_take_the_rank_of_their_launch(tmp_path, pids):
    tl = load_trace(_db_without_gpu_pids(tmp_path / "old.sqlite", pids))
    assert tl.meta.ranks == tuple(range(len(pids)))
    assert tl.kernels.rank.tolist() == tl.api_calls.rank.tolist() == list(range(len(pids)))
    r = analyze_timeline(tl)
    assert r.launches.linked == len(pids) and r.anomalies.ops_without_launch == 0


@pytest.mark.parametrize("suffix", [".nsys-rep", ".qdrep"])
def test_every_report_suffix_is_exported_by_nsys(tmp_path, monkeypatch, suffix):
    from surrobench.collect import nsys
    from surrobench.records.schemas import NSYS_REPORT_SUFFIXES

    assert nsys.REPORT_SUFFIXES is NSYS_REPORT_SUFFIXES and suffix in NSYS_REPORT_SUFFIXES
    monkeypatch.setenv("PATH", str(tmp_path))
    rep = tmp_path / f"run{suffix}"
    rep.write_bytes(b"\0")
    with pytest.raises(UsageError, match="nsys is not on PATH"):
        load_trace(rep)


@pytest.mark.parametrize(
    "column, value",
    [
        ("start", "'soon'"),
        ("start", "x'00ff'"),
        ("end", "'x'"),
        ("streamId", str(2**63 - 1) + "0"),
        ("deviceId", "1e30"),
        ("correlationId", "'7'"),
        ("correlationId", "NULL"),
        ("demangledName", "99"),
    ],
)
def test_odd_values_in_numeric_columns_are_one_line_errors_or_loaded(tmp_path, column, value):
    path = make_db(tmp_path / "odd.sqlite")
    db = sqlite3.connect(path)
    db.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {column} = {value} WHERE correlationId = 3")
    db.commit()
    db.close()
    try:
        tl = load_trace(path)
    except UsageError as exc:
        assert "\n" not in str(exc) and "odd.sqlite" in str(exc)
    else:
        assert all(isinstance(n, str) for n in tl.names)
        analyze_timeline(tl)


def test_names_that_are_not_text_become_text(tmp_path):
    path = make_db(tmp_path / "names.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE S2 AS SELECT * FROM StringIds")
    db.execute("DROP TABLE StringIds")
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value)")
    db.execute("INSERT INTO StringIds VALUES (1, 42), (2, x'6361'), (3, NULL), (4, 'cudaMemcpyAsync'), (5, '[/]')")
    db.commit()
    db.close()
    tl = load_trace(path)
    assert {"42", "ca", "[/]"} <= set(tl.names) and all(isinstance(n, str) for n in tl.names)


def test_a_text_file_named_sqlite_is_not_called_invalid_json(tmp_path):
    path = tmp_path / "report.sqlite"
    path.write_text("hello, not a database\n")
    with pytest.raises(UsageError, match="not an SQLite file"):
        load_trace(path)
