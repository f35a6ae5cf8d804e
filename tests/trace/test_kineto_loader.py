"""Kineto loader: fixture contents, slicing independence, format variants and every bad input."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import numpy as np
import pytest
from kineto_synth import BASE_US, kernel, launch, runtime, write

from surrobench.errors import UsageError
from surrobench.trace import kineto_json, kineto_split, load_trace
from surrobench.trace.kineto_json import DictSlice
from surrobench.trace.kineto import load_kineto_files
from surrobench.trace.model import CopyKind, HostMemory

FNO = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "fno2d_128_b1_fp32_h200.json.gz"


def columns(tl):
    """Every column, names resolved (interning order depends on slicing, the names do not)."""
    names = np.array(tl.names, dtype=object)
    return {
        t: {k: names[v] if k == "name_id" else v for k, v in vars(getattr(tl, t)).items()}
        for t in ("kernels", "memcpy", "api_calls", "cpu_ops", "ranges", "steps")
    }


def same(a, b):
    return all(np.array_equal(a[t][k], b[t][k]) for t in a for k in a[t])


def test_fixture_contents():
    tl = load_trace(FNO)
    assert (len(tl.kernels), len(tl.memcpy), len(tl.steps), len(tl.cpu_ops)) == (237, 12, 3, 1506)
    assert tl.steps.start_ns[0] == 0 and list(tl.steps.step) == [7, 8, 9]
    assert tl.steps.dur_ns[0] == 5_664_420  # "dur": 5664.420 us
    assert (np.diff(tl.kernels.start_ns) >= 0).all()
    assert set(tl.memcpy.kind.tolist()) == {CopyKind.D2D} and set(tl.memcpy.host_memory.tolist()) == {HostMemory.NONE}
    assert tl.meta.device_names == {0: "NVIDIA H200"} and tl.meta.ranks == (0,)
    assert tl.meta.event_counts["ac2g"] == 523


def test_small_slices_and_stdlib_parser_give_the_same_timeline(monkeypatch, tmp_path):
    reference = columns(load_trace(FNO))
    plain = tmp_path / "fno.json"
    plain.write_bytes(gzip.decompress(FNO.read_bytes()))
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 4096)
    assert same(columns(load_trace(plain)), reference)
    for loads in (json.loads, pytest.importorskip("orjson").loads):  # the dict path of each decoder
        monkeypatch.setattr(kineto_json, "decode_slice", lambda data, loads=loads: DictSlice(loads(data)))
        assert same(columns(load_trace(plain)), reference)


def test_boundary_inside_a_string_falls_back_to_exact_parse(monkeypatch, tmp_path):
    tricky = kernel(0, 1, 1, name="odd }, { name")
    events = [tricky] + [kernel(10 * i, 1, i) for i in range(2, 50)]
    path = write(tmp_path / "t.json", events)
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 64)
    tl = load_trace(path)
    assert len(tl.kernels) == 49 and tl.name(tl.kernels.name_id[0]) == "odd }, { name"


def test_nanosecond_timestamps_survive_large_microsecond_values(tmp_path):
    events = [runtime("cudaLaunchKernel", 0.001, 1, 1), runtime("cudaLaunchKernel", 0.002, 1, 2)]
    tl = load_trace(write(tmp_path / "t.json", events))
    assert BASE_US > 2**32
    assert list(tl.api_calls.start_ns) == [0, 1]


def test_bare_array_metadata_after_events_and_old_category_names(tmp_path):
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([kernel(0, 1, 1)]))
    assert len(load_trace(bare).kernels) == 1
    old = {**kernel(0, 1, 1), "cat": "Kernel"}
    late = tmp_path / "late.json"
    late.write_text(json.dumps({"traceEvents": [old], "distributedInfo": {"rank": 3}}))
    tl = load_trace(late)
    assert len(tl.kernels) == 1 and tl.meta.ranks == (3,) and tl.kernels.rank.tolist() == [3]


def test_folder_of_ranks(tmp_path):
    for rank in (0, 1):
        write(tmp_path / f"rank{rank}.json.gz", launch(0, 1, 1, 5, 2), gz=True, distributedInfo={"rank": rank})
    tl = load_trace(tmp_path)
    assert tl.meta.ranks == (0, 1) and sorted(tl.kernels.rank.tolist()) == [0, 1]


def test_folder_without_ranks_is_refused(tmp_path):
    for i in (0, 1):
        write(tmp_path / f"t{i}.json", [kernel(0, 1, 1)])
    with pytest.raises(UsageError, match="distributedInfo"):
        load_trace(tmp_path)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b'{"foo": [1, 2]}', "without a 'traceEvents' array"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X" "ts": 2}]}', "invalid JSON at byte 60"),
        (b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": ', "truncated"),
        (b'{"schemaVersion": 1, "traceEvents": [] oops}', "invalid JSON"),
        (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": "soon", "dur": 2}]}', "not a number"),
        (b"\xff\xff not text", "invalid JSON"),
    ],
)
def test_bad_inputs_are_usage_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=message):
        load_trace(path)


def test_truncated_gzip_and_missing_path(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(FNO.read_bytes()[:20_000])
    with pytest.raises(UsageError, match="gzip"):
        load_trace(path)
    with pytest.raises(UsageError, match="no such file"):
        load_trace(tmp_path / "missing.json")


@pytest.mark.parametrize("workers, piece_bytes", [(2, None), (3, None), (2, 1 << 16)])
def test_byte_ranges_in_worker_processes_give_the_same_timeline(monkeypatch, tmp_path, workers, piece_bytes):
    """One piece per process, or (64 KiB pieces) ~17 pieces taken from the queue by two processes in
    whatever order they come: the same columns as one process."""
    reference = load_trace(FNO)
    plain = tmp_path / "fno.json"
    plain.write_bytes(gzip.decompress(FNO.read_bytes()))
    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(kineto_split, "PIECE_BYTES", piece_bytes or kineto_split.PIECE_BYTES)
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 1 << 16)
    read, real = [], kineto_split._parse_range

    def slow_here(*args):  # this process's pieces take 0.5 s more: the workers (started in ~0.2 s) get pieces too
        read.append(args[1:3])
        time.sleep(0.5)
        return real(*args)

    monkeypatch.setattr(kineto_split, "_parse_range", slow_here)
    split = load_kineto_files([plain], many=False, workers=workers)
    assert same(columns(split), columns(reference))
    assert split.meta.event_counts == reference.meta.event_counts
    assert split.meta.device_names == reference.meta.device_names
    if piece_bytes:
        assert 1 <= len(read) < plain.stat().st_size // piece_bytes - 4  # most of the ~17 pieces: the worker's


def test_a_cut_inside_a_string_falls_back_to_one_process(monkeypatch, tmp_path):
    odd = "x" * 3000 + "}, {" + "y" * 3000  # the only boundary near the middle is inside this name
    events = [kernel(10 * i, 1, i, name=odd if i == 50 else "k") for i in range(100)]
    path = write(tmp_path / "t.json", events)
    size = path.stat().st_size
    monkeypatch.setattr(kineto_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(
        kineto_split,
        "_cut_points",
        lambda f, start, sz, w: [(i + 1, i + 3) for i in [path.read_bytes().index(b"}, {", size // 3)]],
    )
    tl = load_kineto_files([path], many=False, workers=2)
    assert len(tl.kernels) == 100 and odd in tl.names


def test_without_msgspec_and_orjson_the_stdlib_path_reads_the_same(tmp_path):
    """The pure-Python fallback (what a machine without the binary wheels runs), in a child process."""
    import subprocess
    import sys

    for name in ("msgspec", "orjson"):
        (tmp_path / f"{name}.py").write_text("raise ImportError('hidden')\n")
    code = (
        "import sys, json; from surrobench.trace import load_trace, kineto_json; "
        "assert 'msgspec' not in sys.modules or sys.modules['msgspec'] is None; tl = load_trace(sys.argv[1]); "
        "print(json.dumps([len(tl.kernels), len(tl.cpu_ops), len(tl.names), kineto_json._loads.__module__]))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    done = subprocess.run(
        [sys.executable, "-c", code, str(FNO)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": f"{tmp_path}:{src}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    reference = load_trace(FNO)
    assert json.loads(done.stdout) == [len(reference.kernels), len(reference.cpu_ops), len(reference.names), "json"]
