"""Tiny Kineto traces whose timelines are known by construction (times in µs, like Kineto writes)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

BASE_US = 5_000_000_000.0  # large, like real Kineto timestamps


def op_table_from_trace(path):
    """The op table of the trace at ``path`` (:func:`surrobench.analysis.ops.op_table_from_timeline`)."""
    from surrobench.analysis.ops import op_table_from_timeline
    from surrobench.trace import load_trace

    return op_table_from_timeline(load_trace(path))


def kernel(ts, dur, corr, stream=7, name="k", device=0):
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": {"device": device, "stream": stream, "correlation": corr, "External id": corr},
    }


def memcpy(ts, dur, corr, direction="HtoD", src="Pageable", dst="Device", nbytes=4096, stream=7):
    return {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": f"Memcpy {direction} ({src} -> {dst})",
        "pid": 0,
        "tid": stream,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": {"device": 0, "stream": stream, "correlation": corr, "bytes": nbytes},
    }


def runtime(name, ts, dur, corr, ext=-1, tid=1):
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": {"correlation": corr, "External id": ext},
    }


def cpu_op(name, ts, dur, ext, tid=1):
    return {
        "ph": "X",
        "cat": "cpu_op",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": {"External id": ext, "Input Dims": [[1, 3], []]},
    }


def annotation(name, ts, dur, tid=1):
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "pid": 1,
        "tid": tid,
        "ts": BASE_US + ts,
        "dur": dur,
        "args": {},
    }


def launch(ts, dur, corr, kts, kdur, stream=7, name="k"):
    """A cudaLaunchKernel call and the kernel it launched."""
    return [runtime("cudaLaunchKernel", ts, dur, corr), kernel(kts, kdur, corr, stream=stream, name=name)]


def write(path: Path, events: list, gz: bool = False, **meta) -> Path:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU"}], **meta, "traceEvents": events}
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
COMM_STREAM = 20


def op_launch(op, ts, corr, kts, kdur, *, name="k", stream=7, op_dur=20):
    """A CPU op issuing one kernel: the op, its cudaLaunchKernel (External id = ``corr``), the kernel."""
    return [
        cpu_op(op, ts, op_dur, corr),
        runtime("cudaLaunchKernel", ts + 2, 5, corr, ext=corr),
        kernel(kts, kdur, corr, stream=stream, name=name),
    ]


def allreduce_steps(
    rank: int,
    arrivals: dict[int, float],
    *,
    steps: int = 3,
    compute_us: float = 30_000.0,
    extra_us: float = 0.0,
    transfer_us: float = 1_000.0,
    collective: bool = True,
) -> list:
    """One rank's events for ``steps`` profiled steps of: a 30 ms convolution, optionally ``extra_us`` of
    matmul, then an NCCL all-reduce on its own stream; the next step starts 100 µs after it ends.

    ``arrivals[r]``: when rank ``r`` reaches the all-reduce within a step (µs from the step start); every
    rank's NCCL kernel ends ``transfer_us`` after the last arrival, as a real all-reduce does.
    ``collective=False`` leaves the all-reduce out (independent replicas).
    """
    events, corr = [], 1
    end = max(arrivals.values()) + transfer_us
    step_us = end + 100
    for k in range(steps):
        t0 = k * step_us
        events.append(annotation(f"ProfilerStep#{k}", t0, step_us - 50))
        events += op_launch("aten::conv2d", t0 + 10, corr, t0 + 40, compute_us, name="conv_kernel")
        corr += 1
        if extra_us:
            events += op_launch("aten::mm", t0 + 50, corr, t0 + 40 + compute_us, extra_us, name="gemm_kernel")
            corr += 1
        if not collective:
            continue
        events += [
            cpu_op("record_param_comms", t0 + 100, 30, corr),
            runtime("cudaLaunchKernel", t0 + 105, 5, corr, ext=corr),
            kernel(t0 + arrivals[rank], end - arrivals[rank], corr, stream=COMM_STREAM, name=NCCL_ALLREDUCE),
        ]
        corr += 1
    return events


def write_ranks(folder: Path, events_of_rank: dict[int, list]) -> Path:
    """One ``rank{r}.json`` per rank with ``distributedInfo``, as torch.profiler writes under torch.distributed."""
    folder.mkdir(parents=True, exist_ok=True)
    for rank, events in events_of_rank.items():
        write(folder / f"rank{rank}.json", events, distributedInfo={"rank": rank, "world_size": len(events_of_rank)})
    return folder
