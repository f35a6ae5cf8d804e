"""Tiny Kineto traces whose timelines are known by construction (times in µs, like Kineto writes)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

BASE_US = 5_000_000_000.0  # large, like real Kineto timestamps


def kernel(ts, dur, corr, stream=7, name="k", device=0):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": device, "tid": stream, "ts": BASE_US + ts,
            "dur": dur, "args": {"device": device, "stream": stream, "correlation": corr, "External id": corr}}


def memcpy(ts, dur, corr, direction="HtoD", src="Pageable", dst="Device", nbytes=4096, stream=7):
    return {"ph": "X", "cat": "gpu_memcpy", "name": f"Memcpy {direction} ({src} -> {dst})", "pid": 0,
            "tid": stream, "ts": BASE_US + ts, "dur": dur,
            "args": {"device": 0, "stream": stream, "correlation": corr, "bytes": nbytes}}


def runtime(name, ts, dur, corr, ext=-1, tid=1):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": BASE_US + ts,
            "dur": dur, "args": {"correlation": corr, "External id": ext}}


def cpu_op(name, ts, dur, ext, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": BASE_US + ts, "dur": dur,
            "args": {"External id": ext, "Input Dims": [[1, 3], []]}}


def annotation(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": tid, "ts": BASE_US + ts,
            "dur": dur, "args": {}}


def launch(ts, dur, corr, kts, kdur, stream=7, name="k"):
    """A cudaLaunchKernel call and the kernel it launched."""
    return [runtime("cudaLaunchKernel", ts, dur, corr), kernel(kts, kdur, corr, stream=stream, name=name)]


def write(path: Path, events: list, gz: bool = False, **meta) -> Path:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}], **meta, "traceEvents": events}
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path
