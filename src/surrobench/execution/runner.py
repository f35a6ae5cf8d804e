"""One config measured into a :class:`ConfigResult` (docs/sources.md, method §1 and §5): inputs built once on
the device from the seed, ``eval()`` and ``inference_mode()`` (``no_grad()``: :func:`in_grad_mode`), the first call
timed alone (the cold start), then ``warmup`` untimed and ``iters`` timed calls. An OOM or any exception ends the
config ``oom``/``error`` with its cause in ``extra``; the sweep goes on.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from surrobench.errors import ModelError, UsageError
from surrobench.execution.config import ExecConfig, execution_settings
from surrobench.execution.deadline import ConfigTimeout, deadline
from surrobench.execution.host_facts import host_load, subnormal_share, usable_cpus
from surrobench.execution.env import gpu_readings
from surrobench.execution.failures import failure_extra, failure_label, failure_status
from surrobench.execution.memory import PeakMemory, PeakMemoryTracker, pin_malloc_thresholds
from surrobench.execution.modes import Inputs, Step, channels_last_inputs, cudagraph_step, eager_step
from surrobench.execution.sanity import MUTATED_KEY, MemoryWatch, check_calls, input_digest, merge_flags, mutated_inputs
from surrobench.execution.sanity import nonfinite_message, output_tensors
from surrobench.execution.timing import TimedSamples, measure_round, time_once
from surrobench.records.config import InputSpec
from surrobench.records.run import FAULTS_KEY, HOST_SUBMIT_KEY, LEAK_KEY, NONFINITE_KEY, PEAK_OWN_KEY, ConfigResult
from surrobench.records.run import GRAD_MODE_KEY
from surrobench.records.stats import MS_PER_S, LatencyStats
from surrobench.workload.inputs import make_input_sets
from surrobench.workload.zoo.base import Surrogate

#: What to do when a forward misses arguments: the factory's inputs hook (docs/models.md, "Your model").
MULTI_INPUT_HINT = (
    "a model with several inputs needs an example_inputs(batch, shape) hook next to its factory, "
    "see surrobench run --help"
)
T = TypeVar("T")


@dataclass
class PreparedModel:
    """A surrogate with its module built, in eval mode, on the target device; ``grad_mode`` its forward runs in
    (:func:`in_grad_mode`)."""

    surrogate: Surrogate
    module: nn.Module
    grad_mode: str = "inference_mode"


def prepare_model(surrogate: Surrogate, device: str, seed: int, grad_mode: str = "inference_mode") -> PreparedModel:
    """The module built with weights from ``seed``, on ``device``, in eval mode, run in ``grad_mode``; glibc malloc's
    thresholds pinned first (:func:`~surrobench.execution.memory.pin_malloc_thresholds`)."""
    pin_malloc_thresholds()
    torch.manual_seed(seed)
    return PreparedModel(surrogate, surrogate.build().to(device).eval(), grad_mode)


def fresh_module(prepared: PreparedModel, device: str) -> nn.Module:
    """``prepared.module`` copied for one variant: ``copy.deepcopy``, else (a sparse CSR tensor cannot be deep-copied)
    the surrogate built again, its first build's ``state_dict`` loaded (strict: the same weights whatever the factory's
    initialisation), on ``device`` in eval mode. Raises ModelError: neither works (the build raises or refuses it)."""
    try:
        return copy.deepcopy(prepared.module)
    except Exception as exc:
        copy_error = error_text(exc)
    try:
        module = prepared.surrogate.build()
        module.load_state_dict(prepared.module.state_dict())
    except Exception as exc:
        why = f"cannot be copied for timing ({copy_error}), nor built again ({error_text(exc)})"
        raise ModelError(f"model {prepared.surrogate.info.name}: {why}") from exc
    return module.to(device).eval()


class ModelOutputError(TypeError):
    """The model's forward returned no tensor (None, a string, a generator, ...): there is nothing to time."""


def check_output(output) -> None:
    """Raise :class:`ModelOutputError` unless ``output`` is or holds a tensor."""
    if next(output_tensors(output), None) is None:
        kind = type(output).__name__
        raise ModelOutputError(f"model forward returned {kind}, not a tensor (or a tuple, list or dict of tensors)")


def input_specs(inputs: Inputs) -> tuple[InputSpec, ...]:
    """Every tensor of one input set as its :class:`~surrobench.records.config.InputSpec`, in call order."""
    return tuple(
        InputSpec(tuple(t.shape), str(t.dtype).removeprefix("torch.")) for t in inputs if isinstance(t, torch.Tensor)
    )


ERROR_CHARS = 500
"""The longest error text a failed config keeps (characters)."""


def error_text(exc: BaseException) -> str:
    """A failed config's ``error``: ``Type: first line``, a forward missing arguments with :data:`MULTI_INPUT_HINT`,
    then where the model's own code raised it (:func:`model_frame`); at most :data:`ERROR_CHARS`."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, SystemExit):
        first_line = f"the model called sys.exit({exc.code!r})"
    elif isinstance(exc, TypeError) and "required positional argument" in first_line:
        first_line += f" ({MULTI_INPUT_HINT})"
    where = model_frame(exc)
    return failure_label(exc, first_line)[: ERROR_CHARS - len(where)] + where


def model_frame(exc: BaseException) -> str:
    """`` (at models.py:42, in forward)``: the innermost frame of ``exc``'s traceback outside torch's and surrobench's
    packages (the model's own code, or a library it calls); empty when every frame is theirs."""
    ours = (Path(torch.__file__).parent, Path(__file__).parents[1])
    frames = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if not any(Path(f.filename).is_relative_to(package) for package in ours)]
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""


def failed_result(cfg: ExecConfig, status: str, exc: BaseException, inputs: tuple[InputSpec, ...] = ()) -> ConfigResult:
    """``cfg`` recorded with ``status`` and :func:`error_text`; ``inputs`` when built before the failure."""
    return config_result(cfg, inputs, status, error=error_text(exc), extra=failure_extra(exc, cfg.device))


def planned_inputs(cfg: ExecConfig, surrogate: Surrogate) -> tuple[InputSpec, ...]:
    """Every input ``surrogate`` builds for ``cfg`` (its inputs hook or layout: no module needed, so a factory that
    raises has them too); none where they cannot be built (measuring it then says why)."""
    try:
        built = make_input_sets(surrogate, cfg.batch, cfg.shape, device=cfg.device, seed=cfg.seed, n_sets=1)
    except (Exception, SystemExit):  # the model's own inputs hook: any exception type
        return ()
    return input_specs(built[0])


def config_result(cfg: ExecConfig, inputs: tuple[InputSpec, ...], status: str, **measured) -> ConfigResult:
    """A measured :class:`ConfigResult` of ``cfg`` (:meth:`ConfigResult.of`): ``input_shape`` the first of
    ``inputs``, ``extra`` the settings ``cfg`` changes and ``measured``'s."""
    config = {key: getattr(cfg, key) for key in ("model", "batch", "precision", "device", "mode", "warmup", "iters")}
    config |= {"shape_label": cfg.shape.label(), "input_shape": inputs[0].shape if inputs else ()}
    config["settings"] = cfg.changed()
    return ConfigResult.of(config, inputs=inputs, status=status, **measured)


def free_device(device: str) -> None:
    """Collect garbage and, on CUDA, empty the allocator's cache."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


@contextlib.contextmanager
def config_step(cfg: ExecConfig, prepared: PreparedModel) -> Iterator[tuple[Step, list[Inputs]]]:
    """Inside the config's settings and the model's grad mode: the mode's ``step(i)`` (not yet called) and the input
    sets, for the timing here and the profiling child; with ``cfg.channels_last`` the module converted in place,
    and back afterwards."""
    if cfg.mode == "compile":  # one config at a time: Dynamo's caches reset, so a sweep never hits its recompile limit
        torch._dynamo.reset()
    with execution_settings(cfg, prepared.grad_mode):
        input_sets = config_inputs(cfg, prepared)
        if cfg.channels_last:
            prepared.module.to(memory_format=torch.channels_last)
        try:
            yield config_step_of(cfg, prepared.module, input_sets), input_sets
        finally:
            if cfg.channels_last:
                prepared.module.to(memory_format=torch.contiguous_format)


def config_inputs(cfg: ExecConfig, prepared: PreparedModel) -> list[Inputs]:
    """The config's fixed-seed input sets on its device, channels-last when ``cfg.channels_last``."""
    input_sets = make_input_sets(
        prepared.surrogate, cfg.batch, cfg.shape, device=cfg.device, seed=cfg.seed, n_sets=cfg.input_sets
    )
    return channels_last_inputs(input_sets) if cfg.channels_last else input_sets


def config_step_of(cfg: ExecConfig, module: nn.Module, input_sets: list[Inputs]) -> Step:
    """The mode's ``step(i)`` of ``cfg`` (``eager``, ``compile``, ``cudagraph``; not yet called); ``cfg.compile_mode``
    reaches ``torch.compile`` only, with static shapes. Dynamo's caches are the caller's to reset between configs
    (:func:`config_step`): a reset here made a compiled variant still held (optimize's) recompile in its next round."""
    if cfg.mode == "compile":
        compiled = torch.compile(module, dynamic=False, mode=cfg.compile_mode)
        return eager_step(compiled, input_sets, cfg.precision, cfg.device)
    return {"eager": eager_step, "cudagraph": cudagraph_step}[cfg.mode](module, input_sets, cfg.precision, cfg.device)


def _measure(
    cfg: ExecConfig, prepared: PreparedModel, seen: dict, before_each: Callable[[], None] | None
) -> ConfigResult:
    tracker = seen["tracker"] = PeakMemoryTracker(cfg.device)
    if cfg.device != "cpu":  # the allocator's peak from the config's start; the CPU's from after its first calls
        tracker.start()
    with config_step(cfg, prepared) as (step, input_sets):
        # known before the model runs: a config that fails later keeps the shape compare pairs it by
        seen["inputs"] = input_specs(input_sets[0])
        digest = input_digest(input_sets[0])  # before any call: the cold call runs on set 0
        seen["points"] = prepared.surrogate.points_per_sample(input_sets[0])
        outputs: list = []
        seen["phase"] = "first_call"
        cold_ms = seen["cold_ms"] = time_once(lambda i: outputs.append(step(i)), cfg.device)
        check_output(outputs[-1])
        seen["phase"] = "input_sets_check"
        nonfinite = first_calls_nonfinite(step, outputs.pop(), len(input_sets))
        if cfg.device == "cpu":  # its warm-up and timed calls alone (docs/design.md, "CPU peak memory")
            tracker.start()
        seen["phase"] = "warmup"
        watch = MemoryWatch(cfg.device)

        def warm() -> None:
            seen["mutated"] = mutated_inputs(digest, input_digest(input_sets[0]))
            seen["phase"] = "timed"

        def before() -> None:
            watch.sample()
            if before_each is not None:
                before_each()

        samples = measure_round(step, cfg.warmup, cfg.iters, cfg.device, before, warm)
        watch.sample()
        growth = watch.growth()
        calls = len(input_sets) + cfg.warmup + cfg.iters
        nonfinite = nonfinite or check_calls(step, range(len(input_sets)), calls, "end")
        host = {"subnormal_share": subnormal_share(prepared.module, input_sets[0])} if cfg.device == "cpu" else {}
    memory = tracker.stop()
    result = timed_result(cfg, seen["inputs"], seen["points"], cold_ms, samples, memory, nonfinite)
    mutated = seen["mutated"]
    flags = {**({LEAK_KEY: growth} if growth else {}), **({MUTATED_KEY: mutated} if mutated else {}), **host}
    flags[GRAD_MODE_KEY] = prepared.grad_mode
    return replace(result, extra={**result.extra, **flags})


def first_calls_nonfinite(step: Step, first_output, n_sets: int) -> dict | None:
    """The first-call check of every input set: ``first_output`` for set 0, one call of each other set."""
    return check_calls(lambda i: first_output if i == 0 else step(i), range(n_sets), 0, "first")


def timed_result(
    cfg: ExecConfig,
    inputs: tuple[InputSpec, ...],
    points_per_sample: float | None,
    cold_ms: float,
    samples: TimedSamples,
    memory: PeakMemory,
    nonfinite: dict | None = None,
) -> ConfigResult:
    """The record of one timed loop of ``cfg``; status ``nonfinite`` with the ``nonfinite`` record in ``extra`` when
    given; TF32 switches and the SM clock read now; the CPU's page faults per call (``samples.faults_per_call``) and
    its host: ``torch_threads``, ``usable_cpus``, ``load_1m`` now, ``other_cpus`` over the timed calls."""
    latency = LatencyStats.from_samples(samples.latency_ms)
    samples_per_s = cfg.batch / (latency.median / MS_PER_S)
    with execution_settings(cfg):
        extra = {
            "cudnn_benchmark": cfg.cudnn_benchmark,
            "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "input_sets": cfg.input_sets,
            "seed": cfg.seed,
        }
        if cfg.device == "cpu":  # read in the config's settings: its thread count
            host = dict(torch_threads=torch.get_num_threads(), usable_cpus=usable_cpus(), load_1m=host_load()[0])
            extra.update(host, other_cpus=samples.other_cpus)
    if memory.alloc_retries is not None:
        extra["alloc_retries"] = memory.alloc_retries
    if not memory.own_peak:
        extra[PEAK_OWN_KEY] = False
    error = nonfinite_message(nonfinite) if nonfinite else None
    if nonfinite:
        extra.update({**failure_extra(error, cfg.device), NONFINITE_KEY: nonfinite})
    if cfg.device == "cuda":
        extra["sm_clock_mhz"] = (gpu_readings() or {}).get("sm_clock_mhz")
    if samples.host_ms is not None:
        extra[HOST_SUBMIT_KEY] = float(np.median(samples.host_ms))
    if samples.faults_per_call is not None:
        extra[FAULTS_KEY] = samples.faults_per_call
    return config_result(
        cfg,
        inputs,
        "nonfinite" if nonfinite else "ok",
        error=error,
        cold_start_ms=cold_ms,
        latency_ms=latency,
        device_ms=LatencyStats.from_samples(samples.device_ms) if samples.device_ms is not None else None,
        samples_per_s=samples_per_s,
        points_per_s=None if points_per_sample is None else samples_per_s * points_per_sample,
        peak_mem_bytes=memory.peak_bytes,
        peak_reserved_bytes=memory.reserved_bytes,
        samples_ms=tuple(samples.latency_ms.tolist()),
        device_samples_ms=tuple(samples.device_ms.tolist()) if samples.device_ms is not None else (),
        extra=extra,
    )


#: Where a config's limit can cut it (``extra["timeout_phase"]``), in the order they run, and the words said.
TIMEOUT_PHASES = {
    "setup": "before the first call (building the step)",
    "first_call": "in the first call (the cold start)",
    "input_sets_check": "in the untimed first call of each other input set (their NaN/Inf check)",
    "warmup": "in the warm-up",
    "timed": "in the first timed call",
}


def timed_out_result(cfg: ExecConfig, exc: ConfigTimeout | KeyboardInterrupt, seen: dict) -> ConfigResult:
    """``cfg`` recorded ``timeout`` (after Ctrl-C or a signal: ``interrupted``) with what was measured before it,
    its statistics from however few timed calls finished; ``extra``: ``timed_calls``, ``timeout_phase`` (where it
    was cut, a key of :data:`TIMEOUT_PHASES`), ``timeout_s`` (None when interrupted)."""
    timed, device_ms = getattr(exc, "timed_ms", ()), getattr(exc, "device_ms", ())
    where = f"after {len(timed)} of {cfg.iters} timed calls" if timed else TIMEOUT_PHASES[seen.get("phase", "setup")]
    timeout = isinstance(exc, ConfigTimeout)
    exc.args = (f"{exc if timeout else 'Ctrl-C or a signal'} {where}",)
    base = failed_result(cfg, "timeout" if timeout else "interrupted", exc, seen.get("inputs", ()))
    extra = {**base.extra, "timeout_s": getattr(exc, "timeout_s", None), "timed_calls": len(timed)}
    extra["timeout_phase"] = seen.get("phase", "setup")
    if not timed:
        return replace(base, cold_start_ms=seen.get("cold_ms"), extra=extra)
    samples = TimedSamples(np.asarray(timed), np.asarray(device_ms) if device_ms else None)
    partial = timed_result(cfg, base.inputs, seen["points"], seen["cold_ms"], samples, seen["tracker"].stop())
    return replace(partial, status=base.status, error=base.error, extra={**partial.extra, **extra})


def run_config(
    cfg: ExecConfig,
    prepared: PreparedModel,
    before_each: Callable[[], None] | None = None,
    timeout_s: float | None = None,
) -> ConfigResult:
    """Measure one config; a failure of the model becomes its status, never an exception. ``before_each``: as
    :func:`~surrobench.execution.timing.time_loop`'s; ``timeout_s``: the config's limit (None: none).

    Raises:
        UsageError: for a mistake in the request itself (e.g. ``cudagraph`` on the CPU).
        KeyboardInterrupt: Ctrl-C or a signal, its ``cut_result`` the config ``interrupted`` (:func:`timed_out_result`).
    """
    seen: dict = {}
    try:
        with deadline(timeout_s):
            return in_grad_mode(prepared, lambda: _measure(cfg, prepared, seen, before_each))
    except UsageError:
        raise
    except (ConfigTimeout, KeyboardInterrupt) as exc:  # Ctrl-C: what was measured goes on with it (``cut_result``)
        exc.cut_result = timed_out_result(cfg, exc, seen)
        if isinstance(exc, KeyboardInterrupt):
            raise
        return exc.cut_result
    except (Exception, SystemExit) as exc:  # any failure of the user's model is recorded; the sweep goes on
        return failed_result(cfg, failure_status(exc), exc, seen.get("inputs", ()))
    finally:
        free_device(cfg.device)


def in_grad_mode(prepared: PreparedModel, attempt: Callable[[], T]) -> T:
    """``attempt()``, again under ``no_grad`` where it raised through torch.autograd under ``inference_mode``: a
    forward that takes gradients (``torch.autograd.grad``, ``backward``) cannot run in inference mode, and runs under
    ``no_grad``, which the model then keeps (``prepared.grad_mode``). Any other failure is not retried (a model's own
    error, an out-of-memory, a timeout: a code review found a retry hid a genuine IndexError of a fifth call).

    Raises:
        Exception: what the first ``attempt`` raised, or, retried, what the second raised.
    """
    try:
        return attempt()
    except Exception as exc:
        autograd = str(Path(torch.autograd.__file__).parent)  # a failure raised from a frame in it took gradients
        frames = (frame.f_code.co_filename for frame, _ in traceback.walk_tb(exc.__traceback__))
        if prepared.grad_mode == "no_grad" or not any(name.startswith(autograd) for name in frames):
            raise
    prepared.grad_mode = "no_grad"  # inference mode cannot run it: what fails now is the model's own failure
    return attempt()


def merge_rounds(rounds: list[ConfigResult]) -> ConfigResult:
    """One result from the rounds of one config: samples concatenated (two-stage bootstrap), the first round's cold
    start, the highest peak memory, the lowest SM clock, the mean ``other_cpus``, any round's flags; a failed round
    makes it that failure."""
    first = rounds[0]
    if len(rounds) == 1:
        return first
    failed = next((r for r in rounds if r.status != "ok"), None)
    flags = {**merge_flags([r.extra for r in rounds]), "rounds": len(rounds)}
    if failed is not None:
        return replace(failed, extra={**failed.extra, **flags})
    extra = {**first.extra, **flags}
    samples = tuple(s for r in rounds for s in r.samples_ms)
    device_samples = tuple(s for r in rounds for s in r.device_samples_ms)
    latency = LatencyStats.from_samples(samples, rounds=len(rounds))
    samples_per_s = first.batch / (latency.median / MS_PER_S)
    if "alloc_retries" in first.extra:
        extra["alloc_retries"] = sum(r.extra.get("alloc_retries", 0) for r in rounds)
    if clocks := [r.extra["sm_clock_mhz"] for r in rounds if r.extra.get("sm_clock_mhz")]:
        extra["sm_clock_mhz"] = min(clocks)
    if submits := [r.extra[HOST_SUBMIT_KEY] for r in rounds if r.extra.get(HOST_SUBMIT_KEY) is not None]:
        extra[HOST_SUBMIT_KEY] = float(np.median(submits))
    if others := [r.extra["other_cpus"] for r in rounds if r.extra.get("other_cpus") is not None]:
        extra["other_cpus"] = float(np.mean(others))
    return replace(
        first,
        latency_ms=latency,
        device_ms=LatencyStats.from_samples(device_samples, rounds=len(rounds)) if device_samples else None,
        samples_per_s=samples_per_s,
        points_per_s=None if (per_sample := first.points_per_sample()) is None else samples_per_s * per_sample,
        peak_mem_bytes=max(r.peak_mem_bytes for r in rounds),
        peak_reserved_bytes=None if first.peak_reserved_bytes is None else max(r.peak_reserved_bytes for r in rounds),
        samples_ms=samples,
        device_samples_ms=device_samples,
        iters=sum(r.iters for r in rounds),
        extra=extra,
    )
