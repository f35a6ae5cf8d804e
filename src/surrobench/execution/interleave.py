"""Interleaved timing of several variants of one config in one process (A B A B ...): each built once (its first
call timed as its setup), then taking turns round by round, so a slow spell of the host lands on all of them
(docs/benchmarks/h200-compare.md, "A/A"; Kalibera & Jones 2013, "Rigorous benchmarking in reasonable time").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from surrobench.execution.config import ExecConfig, execution_settings
from surrobench.execution.memory import PeakMemory, PeakMemoryTracker
from surrobench.execution.modes import Inputs, Step
from surrobench.execution.runner import PreparedModel, config_inputs, config_step_of, first_calls_nonfinite, input_specs
from surrobench.execution.runner import fresh_module, merge_rounds, timed_result
from surrobench.execution.sanity import MemoryWatch, check_calls
from surrobench.execution.timing import measure_round, time_once
from surrobench.records.run import GRAD_MODE_KEY, LEAK_KEY, ConfigResult


def _allocated(device: str) -> int:
    return torch.cuda.memory_allocated() if device == "cuda" else 0


def clone_output(output):
    """A detached copy of a model output (tensors cloned, containers rebuilt): a CUDA graph's static
    output buffer or a compiled model's reused memory is overwritten by the next call."""
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, dict):
        return {k: clone_output(v) for k, v in output.items()}
    if isinstance(output, (list, tuple)):
        return [clone_output(v) for v in output]
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        cloned = {f.name: clone_output(getattr(output, f.name)) for f in dataclasses.fields(output) if f.init}
        return dataclasses.replace(output, **cloned)
    return output


@dataclass
class Variant:
    """One config built for interleaved timing: ``setup_ms``, its first call (host ms) and ``first_output``
    (cloned, for the accuracy guard); ``rounds``, one result per timed round; ``resident_bytes`` of CUDA memory
    held between rounds; ``peak_bytes``, of its setup and rounds on CUDA, of its timed rounds alone on the CPU (a
    build's growth, a compiler's too, is not the step's: docs/design.md, "CPU peak memory"); ``nonfinite``, where
    its output first held NaN/Inf, None while finite; ``grad_mode``, its model's (``PreparedModel.grad_mode``)."""

    cfg: ExecConfig
    step: Step
    input_sets: list[Inputs]
    points_per_sample: float | None
    setup_ms: float
    first_output: object
    rounds: list[ConfigResult] = field(default_factory=list)
    resident_bytes: int = 0
    peak_bytes: int = 0
    nonfinite: dict | None = None
    calls: int = 0
    watch: MemoryWatch | None = None
    grad_mode: str = "inference_mode"

    def samples_ms(self) -> list[list[float]]:
        """Host latencies, ms, ``rounds x iters``."""
        return [list(r.samples_ms) for r in self.rounds]

    def result(self, indices: list[int] | None = None, extra: dict | None = None) -> ConfigResult:
        """The rounds merged (those at ``indices``; None: all) with ``extra`` added, the setup as the cold start,
        :attr:`peak_bytes` its peak memory."""
        merged = merge_rounds(self.rounds if indices is None else [self.rounds[i] for i in indices])
        extra = {**merged.extra, **(extra or {})}
        return replace(merged, cold_start_ms=self.setup_ms, peak_mem_bytes=self.peak_bytes, extra=extra)


def open_variant(cfg: ExecConfig, prepared: PreparedModel, *, own_module: bool = True) -> Variant:
    """``cfg``'s inputs and step, its first call timed (the setup); ``own_module``: on its own copy of the module
    (:func:`~surrobench.execution.runner.fresh_module`).

    Raises:
        Exception: whatever the model, the compiler or the graph capture raises (the caller classifies it).
    """
    before = _allocated(cfg.device)
    tracker = PeakMemoryTracker(cfg.device)
    tracker.start()
    module = fresh_module(prepared, cfg.device) if own_module else prepared.module
    with execution_settings(cfg, prepared.grad_mode):
        input_sets = config_inputs(cfg, prepared)
        if cfg.channels_last:
            module.to(memory_format=torch.channels_last)
        step = config_step_of(cfg, module, input_sets)
        outputs: list = []
        setup_ms = time_once(lambda i: outputs.append(clone_output(step(i))), cfg.device)
        nonfinite = first_calls_nonfinite(step, outputs[0], len(input_sets))
    memory = tracker.stop()
    return Variant(
        cfg,
        step,
        input_sets,
        prepared.surrogate.points_per_sample(input_sets[0]),
        setup_ms,
        outputs[0],
        resident_bytes=_allocated(cfg.device) - before,
        peak_bytes=_own_peak(memory, before, 0) if cfg.device == "cuda" else 0,  # CPU: the rounds
        nonfinite=nonfinite,
        calls=len(input_sets),
        grad_mode=prepared.grad_mode,
    )


def _own_peak(memory: PeakMemory, allocated_at_start: int, own_resident: int) -> int:
    """Peak of one phase less what other variants held during it (CUDA; none on the CPU: RSS growth)."""
    return max(0, memory.peak_bytes - (allocated_at_start - own_resident))


def time_round(variant: Variant, warmup: int, iters: int) -> None:
    """One round of ``variant`` (warm-up, ``iters`` timed calls) appended to ``variant.rounds``, then one checked
    call of each input set: the first not finite kept as :attr:`Variant.nonfinite`, the round ``nonfinite``."""
    cfg = variant.cfg
    start = _allocated(cfg.device)
    watch = variant.watch = variant.watch or MemoryWatch(cfg.device)
    watch.pause()  # its intervals are its own timed calls: not other variants' rounds, the heap's return, a warm-up
    tracker = PeakMemoryTracker(cfg.device)
    tracker.start()
    with execution_settings(cfg, variant.grad_mode):
        samples = measure_round(variant.step, warmup, iters, cfg.device, watch.sample)
        watch.sample()
        variant.calls += warmup + iters
        found = check_calls(variant.step, range(len(variant.input_sets)), variant.calls, "end")
        variant.calls += len(variant.input_sets)
    memory = tracker.stop()
    variant.nonfinite = variant.nonfinite or found
    variant.peak_bytes = max(variant.peak_bytes, _own_peak(memory, start, variant.resident_bytes))
    inputs = input_specs(variant.input_sets[0])
    as_run = replace(cfg, warmup=warmup, iters=iters)  # the record says what this round ran
    result = timed_result(as_run, inputs, variant.points_per_sample, variant.setup_ms, samples, memory, found)
    growth = watch.growth()  # the median timed call of its rounds so far, as run reads its loop
    flags = {LEAK_KEY: growth} if growth else {}
    flags[GRAD_MODE_KEY] = variant.grad_mode
    variant.rounds.append(replace(result, extra={**result.extra, **flags}))


def interleave(variants: list[Variant], rounds: int, warmup: int, iters: int, stop: Callable[[], bool]) -> None:
    """``rounds`` rounds; in each, every variant in list order runs :func:`time_round` (A B A B ...). ``stop`` is
    asked after each round; True ends the window there."""
    for _ in range(rounds):
        for variant in variants:
            time_round(variant, warmup, iters)
        if stop():
            return
