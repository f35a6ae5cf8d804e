"""One candidate of the remedy search tried (:mod:`surrobench.tune.search`, step 2): the search's state
of one config (:class:`SearchState`), the windows in which variants are timed in rounds interleaved with the
baseline (:func:`time_window`), and one recipe built, checked by the accuracy guard and judged by the speedup
rule against the baseline and, when stacking, against the recipe so far (:func:`measure_candidate`)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from surrobench.analysis.accuracy import check_accuracy
from surrobench.tune.fresh import ProcessWindows
from surrobench.tune.request import OptimizeRequest
from surrobench.collect.probe import ProbeFacts, probe_call
from surrobench.execution.config import ExecConfig, autocast_context, execution_settings
from surrobench.execution.failures import explain_failure
from surrobench.execution.interleave import Variant, interleave, open_variant, time_round
from surrobench.execution.remedies import Recipe
from surrobench.execution.runner import PreparedModel, config_inputs
from surrobench.results.optimize import CandidateResult, HeadToHead
from surrobench.results.paired import PairedSamples, Speedup, break_even_calls

#: A round of one variant is sized to take about this long (its timed calls), within [MIN_ROUND_ITERS, --iters].
ROUND_TARGET_MS = 300.0
MIN_ROUND_ITERS = 5


@dataclass
class SearchState:
    """The state of one config's search."""

    cfg: ExecConfig
    prepared: PreparedModel
    request: OptimizeRequest
    baseline: Variant
    reference: object
    fp64: object | None
    probe: ProbeFacts
    warmup: int
    iters: int
    deadline: float  # time.monotonic() at which the search stops trying candidates
    db: Path | None = None  # where the recipe's fresh processes store their runs (None: not kept)
    on_phase: Callable[[str], None] = lambda text: None  # told before a long step without results of its own
    paired: dict[int, list[int]] = field(default_factory=dict)  # id(variant) -> baseline rounds it was timed with
    timed: dict[str, Variant] = field(default_factory=dict)  # candidate name -> its variant, kept to be profiled
    unprofiled: list[str] = field(default_factory=list)  # timed candidates released unprofiled (device memory)
    confirm_error: str | None = None  # why the recipe's confirmation window failed, if it did
    confirm_interrupted: bool = False  # Ctrl-C came during the recipe's confirmation windows
    head_to_head: HeadToHead | None = None  # the two stacking paths' recipes against each other, when two
    processes: ProcessWindows | None = None  # the recipe's windows in fresh processes, when timed
    unconfirmed: str | None = None  # why the search's recipe is not recommended after pooling its windows
    done: list[CandidateResult] = field(default_factory=list)  # every candidate judged so far, in order
    budget_end: float = float("inf")  # time.monotonic() at which budget_s ends, the fresh processes included
    on_judged: Callable[[], None] = lambda: None  # told after each candidate is judged (it stores the progress)

    def judged(self, result: CandidateResult) -> None:
        """``result`` judged: kept in :attr:`done`, and :attr:`on_judged` told (the caller stores it)."""
        self.done.append(result)
        self.on_judged()

    def spent(self) -> bool:
        return time.monotonic() > self.deadline

    def spent_reason(self) -> str:
        """Why a candidate was not tried once :meth:`spent`: the budget, as given (0.3 s, not 0 s)."""
        return f"budget of {self.request.budget_s:g} s spent"


def free_device(device: str) -> None:
    """Collect garbage and, on CUDA, return the cached blocks, so the next variant starts from a clean pool."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


def probe_forward(cfg: ExecConfig, prepared: PreparedModel, precision: str | None = None) -> ProbeFacts:
    """One forward of the baseline module observed; under ``precision``'s autocast when given (stopping at
    the first half-precision FFT)."""
    inputs = config_inputs(replace(cfg, channels_last=False), prepared)[0]

    def forward():
        with autocast_context(precision or "fp32", cfg.device):
            return prepared.module(*inputs)

    with execution_settings(replace(cfg, precision="fp32")), torch.inference_mode():
        facts, _ = probe_call(forward, stop_at_half_fft=precision is not None)
    return facts


def round_size(baseline: Variant, warmup: int, iters: int) -> tuple[int, int]:
    """(warm-up, timed calls) per round: timed calls sized to :data:`ROUND_TARGET_MS` from three timed
    calls of the baseline, within [:data:`MIN_ROUND_ITERS`, ``--iters``]; warm-up at most ``--warmup``."""
    time_round(baseline, 1, 3)
    median = float(np.median(baseline.rounds.pop().samples_ms))
    iters = int(min(iters, max(MIN_ROUND_ITERS, ROUND_TARGET_MS / max(median, 1e-3))))
    return min(warmup, max(1, iters // 2)), iters


def time_window(ctx: SearchState, variants: list[Variant]) -> None:
    """``ctx.request.rounds`` rounds of the baseline and ``variants``; records which baseline rounds each
    variant was timed with. All or nothing: a window cut short by a failure leaves no rounds behind, so each
    variant's rounds stay aligned with the baseline rounds they were timed with; one cut short by Ctrl-C keeps
    the baseline's rounds (measurements, paired with nothing) and drops the variants'.

    Raises:
        Exception: what a variant raised, after the window's rounds were removed.
        KeyboardInterrupt: Ctrl-C, after the variants' rounds of the window were removed.
    """
    first = len(ctx.baseline.rounds)
    starts = [len(v.rounds) for v in variants]
    try:
        interleave([ctx.baseline, *variants], ctx.request.rounds, ctx.warmup, ctx.iters)
    except BaseException as exc:
        if not isinstance(exc, KeyboardInterrupt):  # Ctrl-C: the baseline's rounds are measurements to keep
            del ctx.baseline.rounds[first:]
        for v, start in zip(variants, starts):
            del v.rounds[start:]
        raise
    for v in variants:
        ctx.paired.setdefault(id(v), []).extend(range(first, len(ctx.baseline.rounds)))


def last_window(v: Variant, rounds: int) -> list[list[float]]:
    return v.samples_ms()[-rounds:]


def window_speedup(ctx: SearchState, reference: Variant, candidate: Variant) -> Speedup:
    """``candidate`` over ``reference`` in the window just timed (:class:`surrobench.results.paired.PairedSamples`:
    one process, one window, its rounds)."""
    rounds = ctx.request.rounds
    return PairedSamples.interleaved(last_window(reference, rounds), last_window(candidate, rounds)).speedup()


def _failed_candidate(name: str, exc: BaseException, started: float, stacked_on: str | None) -> CandidateResult:
    cause = explain_failure(exc)
    raw = f"{type(exc).__name__}: {exc}"
    return CandidateResult(
        name,
        "failed",
        f"{name} failed: {cause.line}",
        error=raw,
        cause=cause.cause_id,
        time_s=time.monotonic() - started,
        stacked_on=stacked_on,
    )


def measure_candidate(
    ctx: SearchState, recipe: Recipe, current: Variant | None = None, current_name: str | None = None
):
    """Build, check and time ``recipe`` (against the baseline and, when stacking, the ``current`` recipe).

    Returns:
        (its :class:`CandidateResult`, its variant when it was timed, else None).
    """
    started, device = time.monotonic(), ctx.cfg.device
    try:
        variant = open_variant(recipe.apply(ctx.cfg), ctx.prepared)
    except Exception as exc:  # compile, capture or the model under the remedy failed: explained, kept
        free_device(device)
        return _failed_candidate(recipe.name, exc, started, current_name), None
    accuracy = check_accuracy(variant.first_output, ctx.reference, ctx.fp64, tolerance=ctx.request.tolerance)
    common = dict(accuracy=accuracy, setup_s=variant.setup_ms / 1e3, stacked_on=current_name)
    if not accuracy.ok:
        del variant
        free_device(device)
        return CandidateResult(
            recipe.name, "rejected_accuracy", accuracy.reason, time_s=time.monotonic() - started, **common
        ), None
    try:
        time_window(ctx, [current, variant] if current is not None else [variant])
    except Exception as exc:  # a replay or a later call failed
        del variant
        free_device(device)
        return _failed_candidate(recipe.name, exc, started, current_name), None
    rounds = ctx.request.rounds
    vs_base = window_speedup(ctx, ctx.baseline, variant)
    gain = window_speedup(ctx, current, variant) if current is not None else None
    decisive = gain or vs_base
    reason = decisive.reason(current_name or "the baseline")
    if decisive.faster():
        reason += f"; {accuracy.reason} ({accuracy.decided_by} rule)"
    elif recipe.remedies[-1].name.startswith("compile") and ctx.probe.complex_ops:
        reason += "; Inductor generates no code for complex operators, so the spectral layers stay uncompiled"
    base_ms = float(np.median(last_window(ctx.baseline, rounds)))
    ms = float(np.median(last_window(variant, rounds)))
    result = CandidateResult(
        recipe.name,
        "accepted" if decisive.faster() else "rejected_slower",
        reason,
        speedup=vs_base,
        gain=gain,
        break_even_calls=break_even_calls(variant.setup_ms, ctx.baseline.setup_ms, ms, base_ms),
        result=variant.result(),
        time_s=time.monotonic() - started,
        baseline_ms=base_ms,
        **common,
    )
    _keep_for_profile(ctx, recipe.name, variant)
    return result, variant


#: Keep timed variants for profiling only while the device has at least this fraction of its memory free
#: (each CUDA-graph variant holds its own memory pool).
_KEEP_FREE_FRACTION = 0.25


def _keep_for_profile(ctx: SearchState, name: str, variant: Variant) -> None:
    """Keep ``variant`` to be profiled after all timing; on CUDA with less than :data:`_KEEP_FREE_FRACTION`
    of the device memory free, release the kept ones instead (their top op is then not measured)."""
    ctx.timed[name] = variant
    if ctx.cfg.device == "cuda":
        free, total = torch.cuda.mem_get_info()
        if free < _KEEP_FREE_FRACTION * total:
            ctx.unprofiled += list(ctx.timed)
            ctx.timed.clear()
