"""How steady a reading of the CPUs other processes keep busy is, by window length (for
docs/benchmarks/cpu-busy-reading.md): one spinning process beside this one, which spins too, and
``host_facts.other_cpus`` over windows of 12 ms to 1 s. Usage: python benchmarks/cpu_busy_reading.py"""

import multiprocessing as mp
import os
import time

import numpy as np

from surrobench.execution.host_facts import cpu_times, other_cpus, usable_cpus


def _spin(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def main() -> None:
    load = os.getloadavg()[0]
    spinner = mp.Process(target=_spin, args=(time.time() + 30,))
    spinner.start()
    time.sleep(0.5)
    print(f"usable CPUs {usable_cpus()}, 1-minute load before {load:.2f}; one spinning process beside this one")
    print("| window ms | windows | mean | p10 | p90 | min | max |\n|---|---|---|---|---|---|---|")
    for window_s in (0.012, 0.06, 0.2, 1.0):
        readings = []
        for _ in range(max(3, int(4 / window_s))):
            since, began = cpu_times(), time.perf_counter()
            while time.perf_counter() - began < window_s:
                pass
            readings.append(other_cpus((since, cpu_times())) or 0.0)
        r = np.array(readings)
        stats = (r.mean(), *np.percentile(r, [10, 90]), r.min(), r.max())
        print(f"| {window_s * 1e3:g} | {len(r)} | " + " | ".join(f"{v:.2f}" for v in stats) + " |")
    spinner.terminate()


if __name__ == "__main__":
    main()
