"""A markdown table of Nsight Compute counters as surrobench reads them, from an ncu raw-page CSV.

    python benchmarks/counters_table.py tests/fixtures/ncu/planted_raw.csv elementwise,add,...

Each launch (in ncu's order, named by the optional comma-separated list) with its duration under ncu, DRAM
bytes and throughput, the busiest pipe, occupancy, grid, FLOPs, arithmetic intensity, the roofline point and
surrobench's speed-of-light verdict (:mod:`surrobench.analysis.counters`), against the H200 ceilings that
``surrobench calibrate`` measured on 2026-12-01 (copy 4102 GB/s; fp32 51.0, tf32 407.6, fp16 754.3, bf16 784.3
TFLOP/s; ../shared GPU notes, docs/benchmarks/h200-counters.md).
"""

import sys
from pathlib import Path

from surrobench.analysis.counters import measure
from surrobench.collect.ncu_parse import parse_raw_csv
from surrobench.records.ceilings import Ceilings

H200 = Ceilings("NVIDIA H200", 4102.0, {"fp32": 51.0, "tf32": 407.6, "fp16": 754.3, "bf16": 784.3})


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def main(path: str, names: str = "") -> None:
    launches = parse_raw_csv(Path(path).read_text())
    labels = names.split(",") if names else [k.function for k in launches]
    head = ["case", "kernel", "ncu us", "DRAM GB", "DRAM", "tensor", "FMA", "occupancy", "grid", "TFLOP",
            "FLOP/B", "TFLOP/s (roof)", "verdict", "passes"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, k in zip(labels, launches):
        m = measure(k, H200)
        flops = sum(v for v in (k.fp32_flops, k.fp64_flops, k.fp16_flops) if v) + sum(k.tensor_ops.values())
        dram = sum(v for v in (k.dram_read_bytes, k.dram_write_bytes) if v)
        verdict = m.bound + (f" ({m.limiter})" if m.limiter else "") + (f", {m.cause}" if m.cause else "")
        roof = f"{_num(m.achieved_tflops, '.1f')} ({_num(m.roof_tflops, '.0f')})"
        cells = [label, f"`{k.function[:40]}`", f"{k.duration_ns / 1e3:.0f}", f"{dram / 1e9:.2f}", _pct(k.dram_of_peak),
                 _pct(k.tensor_pipe_active), _pct(k.fma_pipe_active), _pct(k.achieved_occupancy), str(k.grid_size),
                 f"{flops / 1e12:.3f}", _num(m.arithmetic_intensity, ".1f"), roof, verdict, str(k.passes)]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
