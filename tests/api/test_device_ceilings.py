"""A CPU run finds the ceilings ``calibrate`` stored at the thread count torch ran with (``torch_threads``),
whatever the machine's CPU count."""

from __future__ import annotations

from synthetic import config, latency_samples, run

from surrobench.api.diagnose import device_ceilings
from surrobench.records.ceilings import Ceilings
from surrobench.results.ceilings import save_ceilings


def test_a_cpu_run_reads_the_ceilings_of_its_torch_thread_count_not_of_its_cpu_count():
    ceilings = Ceilings("Test CPU", 20.0, {"fp32": 1.0}, "2026-12-01T00:00:00+00:00", "measured")
    save_ceilings(ceilings, threads=1)  # as `OMP_NUM_THREADS=1 surrobench calibrate --device cpu` keys them
    env = {"device": "cpu", "device_name": "Test CPU", "cpu_count": 2, "torch_threads": 1}
    record = run("20261201-000000-tttt", [config(latency_samples(1.0, 0.01, n=20))], env=env)
    assert device_ceilings(record)[0] == ceilings
    other = run("20261201-000000-uuuu", [config(latency_samples(1.0, 0.01, n=20))], env={**env, "torch_threads": 2})
    assert device_ceilings(other)[0] is None  # calibrated at 1 thread only: no roofline at 2
