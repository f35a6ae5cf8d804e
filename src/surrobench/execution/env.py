"""Environment fingerprint: software versions, host, CPU, GPU, and GPU clocks/temperature/power (pynvml); the warnings
under a run's table from its stored results and env (``show`` prints them again; torch is imported to fingerprint)."""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable, Mapping

from surrobench.execution.config import low_iterations_note
from surrobench.execution.host_facts import busy_others, host_load, proc_value
from surrobench.records.run import GRAD_MODE_KEY, LEAK_KEY, MUTATED_KEY, ConfigResult
from surrobench.records.stats import IQR_WARN_FRACTION


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
    import torch

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


def fingerprint(device: str, threads: int | None = None) -> dict:
    """The run's ``env`` (run-v1): versions, host, CPU, ``torch_threads`` (the configs' ``threads`` where set, else
    torch's now) and, on CUDA, the GPU, its driver and ``gpu_clocks`` ``{"before", "after"}`` (``after`` at the end)."""
    import torch

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
        "torch_threads": threads or torch.get_num_threads(),
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


#: A config whose SM clock reads under this fraction of the run's highest is reported as throttled: well past the
#: few-percent steps of normal boost (H200: 1980 MHz boost, 345 MHz idle; docs/sources.md, h200).
CLOCK_DROP_FRACTION = 0.9


def sweep_warnings(results: list[ConfigResult], env: Mapping) -> list[str]:
    """Iterations under the method's minimums (a run's: its ``env`` holds its rounds; an optimization sizes its own),
    failed configs, clock drops, a busy host if timed (at the run ``env``'s torch threads; its load average and CPU
    count where no config read the CPUs others used), noise, forward flags."""
    ok = [r for r in results if r.status == "ok"]
    per_round = [(r.warmup, r.iters // r.extra.get("rounds", 1)) for r in ok if "rounds" in env]  # iters: rounds' sum
    warnings = sorted(set(filter(None, (low_iterations_note(*counts) for counts in per_round))))
    failed = [f"{r.label()} ({r.status})" for r in results if r.status != "ok"]
    warnings += listed(f"{len(failed)} of {len(results)} config(s) did not finish ok", failed)
    clocks = [(r.label(), r.extra["sm_clock_mhz"]) for r in results if r.extra.get("sm_clock_mhz")]
    timed = [r.extra for r in ok]  # none: no timing a busy host could spoil
    threads = env.get("torch_threads") or 1
    busy = busy_host_warning(env.get("load_avg_1m"), env.get("cpu_count") or 1, threads, timed) if timed else None
    warnings += filter(None, (clock_drop_warning(clocks), busy))  # each None when nothing to say
    noisy = [
        f"{r.label()} ({r.latency_ms.iqr / r.latency_ms.median:.0%})"
        for r in results
        if r.latency_ms is not None and r.latency_ms.noisy
    ]
    warnings += listed(f"{len(noisy)} config(s) noisy, IQR over {IQR_WARN_FRACTION:.0%} of the median", noisy)
    no_grad = [r.label() for r in results if r.extra.get(GRAD_MODE_KEY) == "no_grad"]
    return warnings + forward_warnings(results) + idle_setting_warnings(results) + listed(NO_GRAD, no_grad)


#: What the output says once of the configs whose forward ran under ``no_grad`` (:data:`GRAD_MODE_KEY`).
NO_GRAD = "ran under torch.no_grad, not inference_mode (the forward takes gradients)"


def listed(what: str, labels: list[str]) -> list[str]:
    """``["what: a, b"]``, one line naming ``labels`` (configs); none when there are none."""
    return [f"{what}: {', '.join(labels)}"] if labels else []


def forward_warnings(results: list[ConfigResult]) -> list[str]:
    """Configs whose forward grew memory on most timed calls or changed its input
    (:mod:`surrobench.execution.sanity`)."""
    leaks = [(r.label(), r.extra[LEAK_KEY]) for r in results if r.extra.get(LEAK_KEY)]
    out = [leak_warning(leaks)] if leaks else []
    mutated = [
        f"{r.label()} (input {', '.join(map(str, r.extra[MUTATED_KEY]))})" for r in results if r.extra.get(MUTATED_KEY)
    ]
    return out + listed("the forward changed its input in place, so later calls see other data", mutated)


def idle_setting_warnings(results: list[ConfigResult]) -> list[str]:
    """Settings that changed nothing: ``--channels-last`` on an input not 4-D, ``--compile-mode reduce-overhead`` on
    the CPU."""
    flat = [r.label() for r in results if r.extra.get("channels_last") and r.input_shape and len(r.input_shape) != 4]
    cpu_graphs = [r.label() for r in results if r.extra.get("compile_mode") == "reduce-overhead" and r.device == "cpu"]
    out = listed("--channels-last changed nothing (the input is not 4-D, B x C x H x W)", flat)
    graphs = "--compile-mode reduce-overhead on the CPU is the default torch.compile (CUDA graphs are CUDA-only)"
    return out + listed(graphs, cpu_graphs)


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
    top = max((c for _, c in sm_clocks_mhz), default=0)
    low = [(label, c) for label, c in sm_clocks_mhz if c < CLOCK_DROP_FRACTION * top]
    if not low:
        return None
    names = ", ".join(f"{label} ({c} MHz)" for label, c in low[:3])
    return f"SM clock dropped below {CLOCK_DROP_FRACTION:.0%} of {top} MHz during the run: {names}"


def leak_warning(leaks: Iterable[tuple[str, dict]]) -> str:
    """The one warning line for configs whose memory grew (``(label, growth)``, :meth:`.sanity.MemoryWatch.growth`)."""
    return "memory grew on most timed calls (a forward that keeps references, or an unbounded cache): " + ", ".join(
        f"{label} (+{g['bytes_per_call'] / 2**20:.1f} MiB per call)" for label, g in leaks
    )
