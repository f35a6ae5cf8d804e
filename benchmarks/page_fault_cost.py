"""What one minor page fault costs on this host (the stake per fault of ``page_faults``,
surrobench.analysis.detect_host.PAGE_FAULT_US).

Maps fresh anonymous memory, touches one byte per 4 KiB page (each touch faults the page in: the kernel's
fault path and zeroing the page, as a buffer glibc mmaps afresh costs), and subtracts the same loop over pages
already present. Prints the cost per fault, µs, of each repeat.

    python benchmarks/page_fault_cost.py [--mib 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import mmap
import resource
import time

PAGE = 4096


def _touch(m: mmap.mmap, size: int, value: int) -> float:
    t0 = time.perf_counter()
    for off in range(0, size, PAGE):
        m[off] = value
    return time.perf_counter() - t0


def fault_cost_us(size: int) -> tuple[float, int]:
    """(µs per fault, faults) of touching ``size`` bytes of fresh anonymous memory, the loop's own cost removed."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fresh = mmap.mmap(-1, size)
    t_fault = _touch(fresh, size, 1)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    t_present = _touch(fresh, size, 2)
    fresh.close()
    return (t_fault - t_present) / max(faults, 1) * 1e6, faults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for _ in range(args.repeats):
        us, faults = fault_cost_us(args.mib << 20)
        print(f"{us:.2f} us per fault over {faults} faults")


if __name__ == "__main__":
    main()
