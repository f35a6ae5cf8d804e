"""Feasibility of a remedy for one config before timing it, from a probe (:mod:`surrobench.collect.probe`): another
device's remedy; one the baseline has; channels_last without a 4-D input (PyTorch "Channels Last Memory Format");
cuDNN autotuning without convolutions ("torch.backends.cudnn"); a CUDA graph with host syncs or changing shapes
("CUDA Graphs" constraints); a half FFT the library cannot do (no bf16; cuFFT fp16 at powers of 2 only: "Half-precision
cuFFT Transforms"; PocketFFT none), seen by a probe under the remedy's autocast."""

from __future__ import annotations

import torch

from surrobench.collect.probe import HALF_DTYPES, ProbeFacts
from surrobench.execution.config import ExecConfig
from surrobench.execution.remedies import Recipe, Remedy
from surrobench.execution.env import listed

_DEVICE_REASONS = {
    "cudagraph": "CUDA graphs are a CUDA feature",
    "compile-reduce-overhead": "its CUDA graphs are a CUDA feature (on the CPU it is the default torch.compile)",
    "tf32": "TF32 is a tensor-core format of NVIDIA GPUs (Ampere and later)",
    "fp16": "fp16 autocast is tried on CUDA only (CPUs lack fast fp16 matmul units)",
    "cudnn_benchmark": "cudnn.benchmark tunes cuDNN convolutions, a CUDA library",
}
_HALF_NAMES = {str(d).removeprefix("torch."): d for d in HALF_DTYPES}


def inapplicable(remedy: str, input_ranks: list[int] | tuple[int, ...]) -> str | None:
    """Why remedy ``remedy`` (name or id) cannot apply to a model whose inputs have ``input_ranks`` dims, before any
    probe: the one rule of optimize's verdict and diagnose's actions (:func:`surrobench.api.diagnose.applicable_actions`)."""
    if remedy == "channels_last" and 4 not in input_ranks:
        ranks = ", ".join(f"{r}-D" for r in dict.fromkeys(input_ranks))  # each rank once: "3-D", not "3-D, 3-D"
        return f"channels_last applies to 4-D (B, C, H, W) inputs; this model's inputs are {ranks}"
    return None


def baseline_own(remedy: Remedy, baseline: ExecConfig) -> str | None:
    """Why ``remedy`` changes nothing of ``baseline`` (it has it; torch's default thread count), or None."""
    if Recipe((remedy,)).apply(baseline) == baseline:
        return "already part of the baseline config"
    threads = dict(remedy.settings).get("threads")
    if threads is not None and baseline.threads is None and threads == torch.get_num_threads():
        unit = "thread" if threads == 1 else "threads"
        return f"torch's default here is {threads} {unit}: the baseline already runs {threads}"
    return None


def without_baseline_own(remedies: list[Remedy], baseline: ExecConfig) -> tuple[list[Remedy], list[str]]:
    """``remedies`` less those :func:`baseline_own` finds (no candidates: latency and capacity optimize alike), and
    the one note naming those left out, each ``name (why)`` (none: no note)."""
    own = [f"{r.name} ({why})" for r in remedies if (why := baseline_own(r, baseline))]
    return [r for r in remedies if not baseline_own(r, baseline)], listed("not tried, the baseline's own settings", own)


def infeasible_reason(
    remedy: Remedy,
    baseline: ExecConfig,
    probe: ProbeFacts,
    *,
    input_ranks: tuple[int, ...],
    shapes_change: bool = False,
    half_probe: ProbeFacts | None = None,
) -> str | None:
    """Why ``remedy`` cannot help ``baseline`` (fp32 ``probe``, autocast ``half_probe``), or None."""
    if baseline.device not in remedy.devices:
        need = "CUDA" if remedy.devices == ("cuda",) else "the CPU"
        return f"needs {need}: {_DEVICE_REASONS.get(remedy.name, f'{remedy.summary} applies to {need}')}"
    if why := baseline_own(remedy, baseline) or inapplicable(remedy.name, input_ranks):
        return why
    if remedy.name == "cudnn_benchmark" and not probe.convolutions:
        return "cudnn.benchmark picks cuDNN's convolution algorithms, and the forward runs no convolution"
    if remedy.name == "cudagraph":
        if probe.syncs:
            return (
                f"the forward synchronizes with the host ({probe.sync_text()}): CUDA-graph capture cannot "
                "contain a host synchronization"
            )
        if shapes_change:
            return "the inputs change shape between calls: a CUDA graph replays fixed shapes"
    if half_probe is not None:
        half = [c for c in half_probe.ffts if c.dtype in _HALF_NAMES]
        if not half:
            return None
        call = half[0]
        sizes = "x".join(map(str, call.sizes))
        library = "cuFFT" if baseline.device == "cuda" else "PocketFFT (the CPU's FFT)"
        if call.dtype == "bfloat16":
            return f"{library} has no bf16 transform, and the forward's {call.op} receives bf16 at {sizes}"
        if baseline.device != "cuda":
            return f"{library} has no fp16 transform, and the forward's {call.op} receives fp16 at {sizes}"
        if (odd := next((c for c in half if not c.power_of_two), None)) is not None:
            return (
                f"half-precision cuFFT needs power-of-2 sizes; the forward's {odd.op} runs at "
                f"{'x'.join(map(str, odd.sizes))}"
            )
    return None
