"""Environment fingerprint: software versions, host, CPU, GPU, and GPU clocks/temperature/power (pynvml)."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable

import torch

from surrobench.execution.host_facts import busy_others, host_load, proc_value

#: A config whose SM clock reads under this fraction of the run's highest is reported as throttled: well past the
#: few-percent steps of normal boost (H200: 1980 MHz boost, 345 MHz idle; docs/sources.md, h200).
CLOCK_DROP_FRACTION = 0.9


@contextlib.contextmanager
def _nvml():
    """pynvml, initialised for the block; None when NVML is unavailable (no NVIDIA driver)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # NVML missing or no driver: the CPU path must keep working.
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def _handle(pynvml):
    """The NVML handle of torch's current CUDA device, by UUID (NVML numbers every GPU of the host, torch only
    ``CUDA_VISIBLE_DEVICES``); index 0 where torch gives none."""
    try:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{props.uuid}")
    except Exception:
        return pynvml.nvmlDeviceGetHandleByIndex(0)


def gpu_readings() -> dict | None:
    """SM and memory clock (MHz), temperature (°C), power (W), throttle reasons of torch's GPU; None without NVML."""
    with _nvml() as pynvml:
        if pynvml is None:
            return None
        try:
            h = _handle(pynvml)
            return {
                "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
                "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)),
            }
        except Exception as exc:  # a query unsupported on this GPU must not stop a run
            return {"error": f"{type(exc).__name__}: {exc}"}


def git_state() -> dict | None:
    """``{"commit", "dirty"}`` of the git tree the command runs in (as pytest-benchmark records); None outside one
    or without git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip())}


def fingerprint(device: str) -> dict:
    """The run's ``env`` (run-v1): versions, host, CPU and, on CUDA, the GPU, its driver and ``gpu_clocks``
    ``{"before", "after"}`` (``after`` filled at the end)."""
    cpu = proc_value("model name") or platform.processor() or platform.machine()
    env = {
        "device": device,
        "device_name": cpu,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "python": sys.version.split()[0],
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_avg_1m": host_load()[0],
        "driver": None,
        "gpu_clocks": None,
        "git": git_state(),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        env["device_name"] = props.name
        with _nvml() as pynvml, contextlib.suppress(Exception):  # no NVML, or its query failed: the driver stays None
            env["driver"] = pynvml.nvmlSystemGetDriverVersion() if pynvml else None
        env["gpu_memory_bytes"] = int(props.total_memory)
        env["gpu_sm_count"] = int(props.multi_processor_count)
        env["gpu_clocks"] = {"before": gpu_readings(), "after": None}
    return env


def busy_host_warning(load_1m: float | None, cpu_count: int, threads: int, extras: Iterable[dict] = ()) -> str | None:
    """One line when other processes kept the host busy (:func:`~surrobench.execution.host_facts.busy_others`: the
    most CPUs they kept busy of a config's usable CPUs while it was measured, read from ``extras``, each a result's
    ``extra`` or serve's workload; none read: a 1-minute load average, host-wide, over the host's ``cpu_count``),
    naming torch's ``threads``."""
    timed = [extra for extra in extras if extra.get("other_cpus") is not None]
    worst = max(timed, key=lambda extra: busy_others(extra) or 0.0, default={"usable_cpus": cpu_count})
    if (others := busy_others(worst, load_1m)) is None:
        return None
    what = f"other processes used {others:.1f} of" if timed else f"1-minute load average {load_1m:.1f} on"
    return (
        f"busy host: {what} {worst.get('usable_cpus') or 1} CPU(s) while torch used {threads} "
        f"thread(s); other processes share the cores, so timings are noisy "
        f"({'try 1 thread, or more rounds' if threads > 1 else 'try more rounds, or a quieter machine'})"
    )


def clock_drop_warning(sm_clocks_mhz: list[tuple[str, int]]) -> str | None:
    """One line when a config of ``sm_clocks_mhz`` ((label, MHz)) ran under :data:`CLOCK_DROP_FRACTION` of the top."""
    if not sm_clocks_mhz:
        return None
    top = max(c for _, c in sm_clocks_mhz)
    low = [(label, c) for label, c in sm_clocks_mhz if c < CLOCK_DROP_FRACTION * top]
    if not low:
        return None
    names = ", ".join(f"{label} ({c} MHz)" for label, c in low[:3])
    return f"SM clock dropped below {CLOCK_DROP_FRACTION:.0%} of {top} MHz during the run: {names}"
