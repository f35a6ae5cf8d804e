"""Readers for what Nsight Compute (``ncu``) writes: the raw page CSV, and why it measured nothing.

Pure functions over text, tested on output captured on an H200 (ncu 2025.3.1, ``tests/fixtures/ncu/``). The
format of ``ncu --csv --page raw --print-units base`` (Nsight Compute CLI docs, "Console Output"):

- ncu's own messages (``==PROF==``, ``==WARNING==``, ``==ERROR==``) may precede the table in the same file;
- a header row (``"ID","Process ID",...,"Kernel Name",...,<metric>,...``), then a units row (``byte``, ``ns``,
  ``%``; blank ID), then one row per profiled launch in launch order;
- numbers carry thousands separators (``"499,776"``); a metric requested with a roll-up (``.sum``) also comes
  with its ``.avg``/``.max``/``.min`` siblings, which are not read here.

A metric this ncu or GPU does not offer is absent from the header: its field is None, never a guess.
"""

from __future__ import annotations

import csv
import io
import re

from surrobench.records.counters import TENSOR_SOURCES, CounterProblem, KernelCounters
from surrobench.records.stats import number_or_none

#: Field of :class:`KernelCounters` -> ncu metric, read as a number; ``_PCT`` ones are divided by 100.
_METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "grid_size": "launch__grid_size",
    "block_size": "launch__block_size",
    "waves_per_sm": "launch__waves_per_multiprocessor",
    "registers_per_thread": "launch__registers_per_thread",
    "sm_count": "launch__sm_count",
    "gmma_inst": "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "hmma_inst": "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "passes": "profiler__replayer_passes",
}
_PCT = {
    "dram_of_peak": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_of_peak": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_of_peak": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_of_peak": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_of_peak": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy": "sm__maximum_warps_per_active_cycle_pct",
    "tensor_pipe_active": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "fma_pipe_active": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "fp64_pipe_active": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
}
_INTEGERS = {"grid_size", "block_size", "registers_per_thread", "sm_count", "passes"}
#: FLOPs per SASS instruction class: ``(field, {op: weight})``, a fused multiply-add counting two.
_SASS_FLOPS = {
    "fp32_flops": {"ffma": 2, "fadd": 1, "fmul": 1},
    "fp64_flops": {"dfma": 2, "dadd": 1, "dmul": 1},
    "fp16_flops": {"hfma": 2, "hadd": 1, "hmul": 1},
}
_SASS = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"
_TENSOR = "sm__ops_path_tensor_src_{}.sum"
#: What every raw page carries unasked (tests/fixtures/ncu): launch statistics, replay passes, theoretical occupancy.
_UNASKED = ("launch__", "profiler__", "sm__maximum_warps")
#: The metrics asked for: each one read but those a raw page carries unasked; each was offered by ncu 2025.3.1 on the
#: H200 (``ncu --query-metrics``, tests/fixtures/ncu).
METRICS = (
    *(name for name in (*_METRICS.values(), *_PCT.values()) if not name.startswith(_UNASKED)),
    *(_SASS.format(op) for weights in _SASS_FLOPS.values() for op in weights),
    *(_TENSOR.format(src) for src in TENSOR_SOURCES),
)
_LIMITERS = ("registers", "shared_mem", "warps", "blocks", "barriers")
_MESSAGE = re.compile(r"^==(PROF|WARNING|ERROR)==")


def parse_raw_csv(text: str) -> tuple[KernelCounters, ...]:
    """The launches of an ``ncu --csv --page raw --print-units base`` output, in launch order.

    Raises:
        ValueError: no header row with ``ID`` and ``Kernel Name`` columns, or a launch without a number
            where ``gpu__time_duration.sum`` should be.
    """
    lines = [line for line in text.splitlines() if line.strip() and not _MESSAGE.match(line)]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    start = next((i for i, row in enumerate(rows) if row[:1] == ["ID"] and "Kernel Name" in row), None)
    if start is None:
        raise ValueError("not an ncu raw-page CSV: no header row with 'ID' and 'Kernel Name'")
    header = rows[start]
    col = {name: i for i, name in enumerate(header)}
    launches = [row for row in rows[start + 1 :] if len(row) == len(header) and row[0].strip()]
    return tuple(_launch(row, col) for row in launches)


def _launch(row: list[str], col: dict[str, int]) -> KernelCounters:
    def metric(name: str) -> float | None:
        return number_or_none(row[col[name]].replace(",", "")) if name in col else None

    values: dict = {}
    for field_name, name in _METRICS.items():
        v = metric(name)
        values[field_name] = int(v) if v is not None and field_name in _INTEGERS else v
    if values["duration_ns"] is None:
        raise ValueError(f"ncu launch {row[col['ID']]}: no gpu__time_duration.sum")
    for field_name, name in _PCT.items():
        v = metric(name)
        values[field_name] = v / 100 if v is not None else None
    for field_name, weights in _SASS_FLOPS.items():
        counts = [metric(_SASS.format(op)) for op in weights]
        values[field_name] = (
            None if all(c is None for c in counts) else sum(w * (c or 0) for w, c in zip(weights.values(), counts))
        )
    shared = [metric(f"launch__shared_mem_per_block_{kind}") for kind in ("static", "dynamic")]
    values["shared_mem_per_block_bytes"] = None if all(s is None for s in shared) else int(sum(s or 0 for s in shared))
    limits = {k: v for k in _LIMITERS if (v := metric(f"launch__occupancy_limit_{k}")) is not None}
    values["occupancy_limiter"] = min(limits, key=limits.get) if limits else None
    tensor = {src: metric(_TENSOR.format(src)) for src in TENSOR_SOURCES}
    values["tensor_ops"] = {k: v for k, v in tensor.items() if v}
    return KernelCounters(launch=int(metric("ID") or 0), name=row[col["Kernel Name"]], **values)


#: ncu's messages that mean no counters can be read, as ncu 2025.3 prints them, most specific first.
_PROBLEM_PATTERNS = (
    ("permission", re.compile(r"ERR_NVGPUCTRPERM")),
    (
        "unsupported",
        re.compile(r"not supported on (?:this|the) (?:device|GPU)|--list-chips|not supported .*virtual|vGPU", re.I),
    ),
    ("no_kernels", re.compile(r"No kernels were profiled", re.I)),
)
_FIXES = {
    "permission": (
        "GPU performance counters refused (ERR_NVGPUCTRPERM): run as root, or load the nvidia driver with "
        "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
    ),
    "unsupported": (
        "this GPU, driver or virtualization exposes no performance counters to ncu (a vGPU or a profile-less "
        "MIG slice): run --counters on bare metal or a full GPU"
    ),
    "no_kernels": (
        "ncu profiled no kernel in the surrobench_step range: the step launched none of the selected kernels "
        "(a CUDA-graph or compiled step renames them); run profile without --counters to see its kernels"
    ),
}


def ncu_problem(output: str) -> CounterProblem | None:
    """What ncu's console output says went wrong, as a one-line problem with its fix; None when it names
    none of the known problems (:data:`surrobench.records.counters.PROBLEMS`)."""
    for kind, pattern in _PROBLEM_PATTERNS:
        if pattern.search(output):
            return CounterProblem(kind, _FIXES[kind])
    return None


def error_line(output: str) -> str:
    """The last ``==ERROR==`` line of ncu's output (or its last line), for a ``failed`` problem."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return (errors or lines or ["no output"])[-1][:300]
