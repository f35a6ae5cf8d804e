"""``calibrate``: measure a device's roofline ceilings once and store them for this machine (``surrobench calibrate``),
per host, device and CPU thread count (:mod:`surrobench.results.ceilings`), where ``diagnose`` reads them. Sizes under
:data:`surrobench.collect.ceilings.MIN_SIZES` are refused: they time overhead and caches. A measurement another process
may have slowed is not stored (:func:`check_calibration`): a low ceiling would make later rooflines read above the peak.
"""

from __future__ import annotations

from pathlib import Path

import torch

from surrobench.api.benchmark import check_cpu_threads
from surrobench.collect.ceilings import DEFAULT_SIZES, MIN_SIZES, REPEATS, Calibration, measure_ceilings
from surrobench.errors import UsageError
from surrobench.execution.config import check_bools, check_ints
from surrobench.execution.env import busy_host_warning, host_load, listed
from surrobench.execution.sweep import resolve_device
from surrobench.records.ceilings import Ceilings
from surrobench.results.ceilings import save_ceilings

_WHY_MIN = "smaller sizes time the per-call overhead (launch/dispatch) and caches, not the ceiling"
#: Largest spread of a ceiling's repeats (``(slowest - fastest) / fastest`` of their medians) stored without
#: ``force``: on an idle machine 10-call medians repeat within a few percent (docs/benchmarks/h200-diagnosis.md);
#: a tenth is beyond that, and well under the factor of ten a busy host put into a stored ceiling.
MAX_SPREAD = 0.10


def check_sizes(device: str, matmul_n: int | None, copy_mib: int | None, iters: int) -> None:
    """Reject values that are not ints, non-positive values and sizes under the device's minimum.

    Raises:
        UsageError: the first offending parameter, with the value given.
    """
    sizes = {"matmul_n": matmul_n, "copy_mib": copy_mib}
    check_ints(**sizes, iters=iters)
    for name, value in (*sizes.items(), ("iters", iters)):
        if value is not None and value < 1:
            raise UsageError.bad(name, f"{value}: must be a positive integer")
    for name, value in sizes.items():
        if value is not None and value < (low := MIN_SIZES[device][name]):
            raise UsageError.bad(name, f"{value}: must be >= {low} on {device}: {_WHY_MIN}")


class CalibrationRefused(UsageError):
    """A calibration measured but not stored (:func:`check_calibration` objected, no ``force``): ``problems`` one
    line each; ``spreads`` by ceiling name (``copy``, ``matmul:fp32``), each ``(slowest - fastest) / fastest`` of
    its repeats' medians, a fraction (empty when the host was busy before anything was measured)."""

    def __init__(self, problems: list[str], spreads: dict[str, float]) -> None:
        listed = ", ".join(f"{name} {spread:.0%}" for name, spread in spreads.items())
        measured = f"its ceilings may be too low: {'; '.join(problems)} (repeat spread per ceiling: {listed})"
        if not spreads:  # refused before measuring
            measured = f"nothing measured: {'; '.join(problems)}"
        text = (
            f"calibration not stored: {measured}; calibrate on a quiet machine, or give {{force}} to store them anyway"
        )
        super().__init__("", detail=text, others=("force",))
        self.args = (self.worded(),)
        self.problems, self.spreads = list(problems), dict(spreads)


def check_threads(device: str, threads: int | None) -> int | None:
    """The CPU's torch thread count a calibration is measured and stored at (``threads``, None: torch's); None on CUDA.

    Raises:
        UsageError: ``threads`` not a whole number in ``[1, os.cpu_count()]``, or given for CUDA.
    """
    if threads is None:
        return torch.get_num_threads() if device == "cpu" else None
    check_ints(threads=threads)
    if threads < 1:
        raise UsageError.bad("threads", f"{threads}: must be >= 1")
    if device != "cpu":
        raise UsageError.bad(
            "threads", f"{threads}: sets the CPU's torch threads; {device} ceilings do not depend on it"
        )
    check_cpu_threads(threads)
    return threads


def check_calibration(
    calibration: Calibration, device: str, load: tuple[float | None, int], threads: int | None
) -> list[str]:
    """Why ``calibration`` may not be stored (empty when it may): a busy host on the CPU (``load``: the
    :func:`~surrobench.execution.env.host_load` reading calibrate takes after measuring, by the rule of
    :func:`~surrobench.execution.host_facts.busy_others`), repeats spread over :data:`MAX_SPREAD`."""
    busy = busy_host_warning(*load, threads) if device == "cpu" else None
    problems = [busy] if busy else []
    noisy = [f"{name} {spread:.0%}" for name, spread in calibration.spreads.items() if spread > MAX_SPREAD]
    problems += listed(f"{REPEATS} repeats disagree by more than {MAX_SPREAD:.0%}", noisy)
    return problems


def calibrate(
    device: str = "auto",
    *,
    matmul_n: int | None = None,
    copy_mib: int | None = None,
    iters: int = 10,
    threads: int | None = None,
    force: bool = False,
) -> tuple[Ceilings, Path]:
    """Measure the copy bandwidth (GB/s) and the matmul rate per precision (TFLOP/s) of ``device`` (``cpu``,
    ``cuda`` or ``auto``), store them for this machine and return them with the file they are stored in.

    ``matmul_n``: GEMM size n (n x n @ n x n); ``copy_mib``: MiB per copy (None: the device's
    :data:`~surrobench.collect.ceilings.DEFAULT_SIZES`); ``iters``: timed calls per measurement (median); ``threads``:
    the CPU's torch thread count (None: torch's current); ``force``: store it even when :func:`check_calibration`
    objects.

    Raises:
        UsageError: bad sizes (:func:`check_sizes`) or ``threads`` (:func:`check_threads`), ``force`` not a
            ``bool``, no GPU for cuda, an unwritable cache folder.
        CalibrationRefused: :func:`check_calibration` objects (nothing stored), or, on the CPU, a busy host before
            measuring (nothing measured); unless ``force``.
    """
    device = resolve_device(device)
    check_sizes(device, matmul_n, copy_mib, iters)
    check_bools(force=force)
    threads = check_threads(device, threads)
    sizes = DEFAULT_SIZES[device]
    # a load seen before measuring refuses at once: measuring first took 78-100 s on a CPU only to refuse after
    busy = busy_host_warning(*host_load(), threads) if device == "cpu" else None
    if busy and not force:
        raise CalibrationRefused([busy], {})
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        calibration = measure_ceilings(
            device,
            matmul_n=sizes["matmul_n"] if matmul_n is None else matmul_n,
            copy_mib=sizes["copy_mib"] if copy_mib is None else copy_mib,
            iters=iters,
        )
    finally:
        torch.set_num_threads(saved)
    problems = check_calibration(calibration, device, host_load(), threads)
    if problems and not force:
        raise CalibrationRefused(problems, calibration.spreads)
    ceilings = calibration.ceilings
    return ceilings, save_ceilings(ceilings, threads)
