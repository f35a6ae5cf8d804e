"""The remedy search of ``surrobench optimize`` for one config (:func:`optimize_config`).

1. The baseline is built and run once (its setup); the fp32 eager reference (TF32 off) and, where the
   model runs in fp64, the fp64 reference are computed on the same input (:mod:`surrobench.execution.reference`);
   one forward is observed op by op (:mod:`surrobench.collect.probe`).
2. Each remedy (:mod:`surrobench.execution.remedies`) is checked for feasibility with a reason
   (:mod:`surrobench.analysis.feasibility`); a feasible one is built and run once (its setup, timed), its
   output checked by the accuracy guard (:mod:`surrobench.analysis.accuracy`), then timed in rounds
   interleaved with the baseline (:mod:`surrobench.execution.interleave`) and judged by the speedup rule
   of :mod:`surrobench.results.paired`. A failure is explained in one line
   (:func:`surrobench.execution.failures.explain_failure`), the raw exception kept
   (:func:`surrobench.tune.stacking.judge_singles`, each through :func:`surrobench.tune.trial.measure_candidate`).
3. Greedy stacking: on top of the fastest accepted remedy, the other measured ones are added one at a
   time, fastest first, each timed in rounds with the baseline and the current recipe and kept when it
   beats the current recipe by the same rule, until the list or the budget (``budget_s``) runs out. Then
   the same from its rival, the fastest accepted remedy that excludes it; the two recipes are timed head
   to head and the rival's kept only when it is faster by the same rule (:func:`surrobench.tune.stacking.stack`).
4. The recipe is timed with the baseline in :data:`CONFIRM_WINDOWS` more windows (the confirmation), then in
   ``process_pairs`` pairs of fresh processes, one window each (:func:`surrobench.tune.fresh.process_windows`),
   and its speedup is taken over every window the two were timed in together, its interval drawn over
   windows (:func:`_confirm` says why); a recipe whose pooled speedup does not clear 1 + the noise floor is
   not recommended (:func:`unconfirmed_note`). The fresh processes are part of ``budget_s``: the search ends
   early enough to leave them their estimated time (:func:`process_reserve_s`), and a pair that would not
   end within the budget is skipped, a note says so.
5. After every timed round, the baseline and each timed candidate are profiled for their top op.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from surrobench.tune.fresh import PairBudget, ProcessWindows, pair_estimate_s, process_windows
from surrobench.tune.request import OptimizeRequest
from surrobench.tune.trial import (
    ROUND_TARGET_MS,
    SearchState,
    free_device,
    probe_forward,
    round_size,
    time_window,
)
from surrobench.tune.stacking import judge_singles, stack
from surrobench.collect.child import config_to_json
from surrobench.collect.torch_profiler import ProfileSchedule, profile_steps
from surrobench.execution.config import ExecConfig, execution_settings
from surrobench.execution.failures import explain_failure
from surrobench.execution.interleave import Variant, open_variant
from surrobench.execution.ranges import annotated_step
from surrobench.execution.reference import reference_outputs
from surrobench.execution.remedies import Recipe, candidate_remedies, run_flags
from surrobench.execution.runner import (
    check_output,
    nonfinite_message,
    PreparedModel,
    merge_rounds,
    run_config,
)
from surrobench.workload.inputs import DEFAULT_INPUT_SETS
from surrobench.results.optimize import ConfigOptimization
from surrobench.records.run import ConfigResult
from surrobench.results.compare import PAIRED_UNITS_KEY
from surrobench.results.paired import PairedSamples, Speedup

#: Profiled steps for the top-op share of the baseline and of every timed candidate: one warm-up, three recorded.
#: They run after every timed round of the config: once torch.profiler has attached CUPTI, kernel launches in
#: that process stay slower until it exits (Kineto does not finalize CUPTI by default, 10-20% slower reported at
#: https://github.com/pytorch/pytorch/issues/144455), which would slow every eager round timed after it.
_TOP_OP_SCHEDULE = ProfileSchedule(wait=0, warmup=1, active=3)

#: Windows in which the recipe is timed with the baseline again after the search (the confirmation). The recipe's
#: speedup draws its interval over windows (:class:`surrobench.results.paired.PairedSamples`), so it needs
#: several; three took about 8 s (U-Net 512²) to 17 s (MeshGraphNet 262,144) on the H200, estimated from
#: their round sizes (6 rounds of up to ~0.3 s of calls a side, plus warm-up).
CONFIRM_WINDOWS = 3


def _confirm(ctx: SearchState, recipe: Recipe, variant: Variant) -> tuple[Speedup, tuple[float, ...]]:
    """The recipe's speedup over every window in which it was timed with the baseline, after
    :data:`CONFIRM_WINDOWS` more windows of ``rounds`` rounds (the confirmation) and ``process_pairs`` windows
    in pairs of fresh processes (:func:`_process_windows`), and each window's own speedup.

    One window's CI covers the drift between its rounds, not between windows: on the H200 the same recipe read
    2.87x to 3.04x at MeshGraphNet 65,536 and 5.06x to 5.75x at U-Net 512² in six windows within 20 s, and the
    fresh processes fell inside those ranges (docs/benchmarks/h200-optimize.md, "Windows and processes"). So the
    interval is drawn over windows, and with fresh processes over processes, each pair of them one unit
    (:class:`surrobench.results.paired.PairedSamples`, whose drift between processes widens it). A confirmation
    window that fails (the recipe raised on a later call) leaves the windows measured so far, and a note says
    why."""
    for _ in range(CONFIRM_WINDOWS):
        try:
            time_window(ctx, [variant])
        except KeyboardInterrupt:  # the recipe stands on the windows that finished; no fresh processes
            ctx.confirm_interrupted = True
            break
        except Exception as exc:  # the earlier windows stand as measured
            free_device(ctx.cfg.device)
            ctx.confirm_error = explain_failure(exc).line
            break
    base = [ctx.baseline.rounds[i].samples_ms for i in ctx.paired[id(variant)]]
    rounds = ctx.request.rounds
    record = PairedSamples.interleaved(base, variant.samples_ms(), windows=len(base) // rounds)
    found = None if ctx.confirm_interrupted else _process_windows(ctx, recipe, variant)
    for pair in range(found.windows if found is not None else 0):  # each pair of fresh processes is its own unit
        cut = slice(pair * rounds, (pair + 1) * rounds)
        record = record.add_windows(
            found.baseline_rounds[cut], found.recipe_rounds[cut], rounds=rounds, process=pair + 1
        )
    return record.speedup(), tuple(record.unit_speedups())


def _process_windows(ctx: SearchState, recipe: Recipe, variant: Variant) -> ProcessWindows | None:
    """The recipe and the baseline in ``process_pairs`` pairs of fresh processes, shaped as the search's windows
    (:func:`surrobench.tune.fresh.process_windows`); None when none are asked for or no command line can name the
    model.

    Windows inside one process do not see what moves between processes: on the H200 a launch-bound eager
    baseline (DeepONet 65,536, FNO 256²) took 21% and 42% longer in one fresh process than in the next, while
    its CUDA-graph recipe took the same time in each; the recipe's interval, drawn over in-process windows only,
    then missed the fresh processes' speedup (docs/benchmarks/h200-optimize.md, "Windows and processes"). Windows
    timed in fresh processes bring that drift into the interval."""
    if not ctx.request.process_pairs or not ctx.request.rebuildable:
        return None
    ctx.on_phase(
        f"timing {recipe.name} and the baseline in {ctx.request.process_pairs} pair(s) of fresh processes "
        "(within the budget)"
    )
    calls = ctx.warmup + ctx.request.rounds * ctx.iters
    per_call = tuple(
        float(np.mean(np.concatenate(v.samples_ms()))) if v.rounds else ROUND_TARGET_MS / ctx.iters
        for v in (ctx.baseline, variant)
    )
    setup = (ctx.baseline.setup_ms, variant.setup_ms)
    ctx.processes = process_windows(
        ctx.cfg,
        recipe.apply(ctx.cfg),
        pairs=ctx.request.process_pairs,
        rounds=ctx.request.rounds,
        warmup=ctx.warmup,
        iters=ctx.iters,
        db=ctx.db,
        budget=PairBudget(ctx.budget_end, pair_estimate_s(setup, per_call, calls)),
    )
    return ctx.processes


def process_reserve_s(request: OptimizeRequest, setup_ms: float, iters: int, warmup: int) -> float:
    """Seconds of ``budget_s`` the search leaves to its ``process_pairs`` pairs of fresh processes, estimated
    from the baseline before any candidate is known: each side as the baseline (its setup ``setup_ms``, its
    rounds of ``iters`` calls taking about :data:`ROUND_TARGET_MS` each, ``warmup`` calls more), at most half
    the budget, so the search keeps the other half; 0 when no processes run. A compiled recipe's setup is
    larger: its pairs are estimated again before they start, and skipped when they do not fit
    (:class:`surrobench.tune.fresh.PairBudget`)."""
    if not request.process_pairs or not request.rebuildable:
        return 0.0
    per_call = ROUND_TARGET_MS / iters
    pair = pair_estimate_s((setup_ms, setup_ms), (per_call, per_call), warmup + request.rounds * iters)
    return min(request.process_pairs * pair, request.budget_s / 2)


def unconfirmed_note(name: str, pooled: Speedup, windows: int) -> str:
    """Why a recipe that won every step of the search is not recommended: its speedup pooled over its
    ``windows`` timing windows does not clear 1 + the noise floor (the acceptance rule of
    :mod:`surrobench.results.paired`), so the wins were the drift of single windows."""
    return (
        f"not recommended: {name} pooled over {windows} timing windows reads {pooled.median:.2f}x "
        f"[{pooled.ci95[0]:.2f}, {pooled.ci95[1]:.2f}], lower bound not above 1 + "
        f"{pooled.margin_text()}: its wins did not hold across windows (a busy or drifting machine; "
        "measure again when it is quieter, or with more --rounds)"
    )


def _top_op(variant: Variant) -> dict | None:
    """``{"name", "share"}`` of the variant's top operator from a few profiled steps (torch.profiler), run
    after every timed round of the config (:data:`_TOP_OP_SCHEDULE` says why); None when nothing was
    recorded."""
    try:
        with execution_settings(variant.cfg), torch.inference_mode():
            capture = profile_steps(
                annotated_step(variant.step, variant.cfg.device), _TOP_OP_SCHEDULE, variant.cfg.device
            )
    except Exception:  # a profiler that cannot attach must not lose the measurements
        return None
    top = capture.op_table.top_op() if capture.op_table is not None and not capture.errors else None
    return {"name": top.name, "share": float(top.share)} if top else None


def _notes(ctx: SearchState, fp64_note: str | None) -> tuple[str, ...]:
    notes = [f"rounds of {ctx.warmup} warm-up + {ctx.iters} timed calls, {ctx.request.rounds} rounds per measurement"]
    if ctx.probe.ffts:
        notes.append(f"FFTs at {ctx.probe.fft_text()}")
    if ctx.probe.syncs:
        notes.append(f"host synchronizations in forward: {ctx.probe.sync_text()}")
    if fp64_note:
        notes.append(fp64_note)
    if ctx.head_to_head:
        notes.append(ctx.head_to_head.note())
    if ctx.unconfirmed:
        notes.append(ctx.unconfirmed)
    if ctx.confirm_interrupted:
        notes.append("interrupted by Ctrl-C during the recipe's confirmation windows: it stands on those that finished")
    if ctx.confirm_error:
        notes.append(
            f"the recipe's confirmation window failed ({ctx.confirm_error}); its speedup pools the earlier ones"
        )
    found = ctx.processes
    if found is not None:
        runs = ", ".join(found.run_ids) if ctx.db else "not kept"
        notes.append(
            f"the recipe's windows include {found.windows} of {ctx.request.process_pairs} pair(s) of fresh processes "
            f"({found.elapsed_s:.0f} s; runs of the processes that finished: {runs or 'none'})"
            + (f"; {found.skipped} pair(s) skipped: the budget left would not fit them" if found.skipped else "")
            + (f"; a process failed: {found.error}" if found.error else "")
            + ("; interrupted by Ctrl-C" if found.interrupted else "")
        )
    if ctx.unprofiled:
        notes.append(f"top op not profiled (released to free device memory): {', '.join(ctx.unprofiled)}")
    if not ctx.request.rebuildable:
        notes.append(
            "no `surrobench run` line: the model was given as a Python object, which a command line cannot name; "
            "apply the recipe's code, or give the model as 'path/file.py:factory' to get the line (and the "
            "recipe's timing windows in fresh processes)"
        )
    return tuple(notes)


def run_command(cfg: ExecConfig) -> str:
    """The ``surrobench run`` line that measures ``cfg`` again (workload, execution settings); the seed and the
    input buffers only where they differ from ``run``'s defaults, so the common line stays short. A rendering
    for the user: the fresh processes get the config itself as JSON (:mod:`surrobench.tune.fresh_child`)."""
    words = [
        "surrobench",
        "run",
        "--model",
        cfg.model,
        "--shape",
        cfg.shape.label(),
        "--batch",
        str(cfg.batch),
        *run_flags(cfg),
    ]
    if cfg.seed != 0:
        words += ["--seed", str(cfg.seed)]
    if cfg.input_sets != DEFAULT_INPUT_SETS:
        words += ["--input-sets", str(cfg.input_sets)]
    return shlex.join(words)


def _paired_extra(rounds: int, per_window: int) -> dict:
    """The stored baseline's and recipe's ``extra`` that marks their ``rounds`` rounds as timed together, in
    windows of ``per_window`` rounds in this process (:data:`surrobench.results.compare.PAIRED_UNITS_KEY`), so
    ``compare`` of the pair reads the record optimize judged its in-process windows by."""
    return {PAIRED_UNITS_KEY: [[0, i // per_window] for i in range(rounds)]}


def _with_extra(result: ConfigResult, extra: dict) -> ConfigResult:
    return replace(result, extra={**result.extra, **extra}) if extra else result


def _command_for(request: OptimizeRequest, cfg: ExecConfig) -> str | None:
    """:func:`run_command` of ``cfg``; None when no command line can name the model (``request.rebuildable``)."""
    return run_command(cfg) if request.rebuildable else None


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C inside one config's search: ``partial`` holds what was judged so far (no recipe when the search
    did not finish; the recipe, on the windows that finished, when Ctrl-C came during its confirmation
    windows or its fresh processes),
    None when the baseline had not been timed yet."""

    def __init__(self, partial: ConfigOptimization | None) -> None:
        super().__init__()
        self.partial = partial


def _partial(ctx: SearchState, fp64_note: str | None, started: float) -> ConfigOptimization | None:
    """The config as far as its search got: the baseline's rounds so far and every candidate judged, with
    a note; no recipe, no top ops (profiling would prolong the interruption)."""
    if not ctx.baseline.rounds:
        return None
    note = f"interrupted during the search: {len(ctx.done)} candidate(s) judged, no recipe"
    return ConfigOptimization(
        baseline=replace(merge_rounds(ctx.baseline.rounds), cold_start_ms=ctx.baseline.setup_ms),
        candidates=tuple(ctx.done),
        baseline_command=_command_for(ctx.request, ctx.cfg),
        notes=(*_notes(ctx, fp64_note), note),
        elapsed_s=time.monotonic() - started,
        cut_short=True,
    )


def _start(cfg: ExecConfig, prepared: PreparedModel, request: OptimizeRequest, started: float, db: Path | None = None):
    """Step 1 of the module docstring: the baseline built and run once, the references, the round size and
    the probe. Returns (the search state, the note on a missing fp64 reference or None).

    Raises:
        Exception: the baseline cannot run, returns no tensor, or returns NaN/Inf (every candidate would look
            inaccurate against it).
    """
    baseline = open_variant(cfg, prepared, own_module=False)
    check_output(baseline.first_output)  # None, a string, a generator: nothing to time or compare
    bad = nonfinite_message(baseline.first_output)
    if bad:
        raise ValueError(bad)
    reference, fp64, fp64_note = reference_outputs(cfg, prepared)
    warmup, iters = round_size(baseline, cfg.warmup, cfg.iters)
    probe = probe_forward(cfg, prepared)
    end = started + request.budget_s
    reserve = process_reserve_s(request, baseline.setup_ms, iters, warmup)
    ctx = SearchState(cfg, prepared, request, baseline, reference, fp64, probe, warmup, iters, end - reserve, db)
    ctx.budget_end = end
    return ctx, fp64_note


def optimize_config(
    cfg: ExecConfig,
    prepared: PreparedModel,
    request: OptimizeRequest,
    *,
    db: Path | None = None,
    on_phase: Callable[[str], None] = lambda text: None,
    on_progress: Callable[[ConfigOptimization], None] = lambda partial: None,
) -> ConfigOptimization:
    """The search of the module docstring for one config; the recipe's fresh processes store their runs in
    ``db`` (None: not kept). ``on_phase`` gets one line before a step that runs long without a result of its
    own (the recipe's fresh processes); ``on_progress`` the config as far as it got (:func:`_partial`) after
    each candidate is judged, so the caller can store it before the search goes on."""
    started = time.monotonic()
    try:
        ctx, fp64_note = _start(cfg, prepared, request, started, db)
        ctx.on_phase = on_phase
        ctx.on_judged = lambda: on_progress(_partial(ctx, fp64_note, started))
    except Exception as exc:  # the baseline itself cannot run: measured as run does, no candidates
        free_device(cfg.device)
        return ConfigOptimization(baseline=run_config(cfg, prepared), error=explain_failure(exc).line)
    baseline = ctx.baseline
    remedies = [
        r
        for r in candidate_remedies(cfg.device, thorough=request.thorough)
        if request.only is None or r.name in request.only
    ]
    not_tried: list[tuple[str, str]] = []
    try:
        singles, best = judge_singles(ctx, remedies, not_tried)
        stacked, recipe, variant = stack(ctx, singles, best, not_tried)
        if variant is None and not baseline.rounds:  # nothing was timed: the baseline alone, for the record
            time_window(ctx, [])
        recipe_speedup, per_window = _confirm(ctx, recipe, variant) if variant is not None else (None, ())
    except KeyboardInterrupt:
        raise SearchInterrupted(_partial(ctx, fp64_note, started)) from None
    if recipe_speedup is not None and not recipe_speedup.faster():  # the pooled windows do not bear it out
        ctx.unconfirmed = unconfirmed_note(recipe.name, recipe_speedup, len(per_window))
        recipe, variant, recipe_speedup, per_window = Recipe(), None, None, ()
    # Ctrl-C during the recipe's confirmation: it stands on the windows that finished; no profiling
    interrupted = ctx.confirm_interrupted or (ctx.processes is not None and ctx.processes.interrupted)
    indices = ctx.paired.get(id(variant), range(len(baseline.rounds))) if variant else range(len(baseline.rounds))
    paired = _paired_extra(len(indices), request.rounds) if variant else {}
    base_result = replace(
        _with_extra(merge_rounds([baseline.rounds[i] for i in indices]), paired),
        cold_start_ms=baseline.setup_ms,
        peak_mem_bytes=baseline.peak_bytes,
        top_op=None if interrupted else _top_op(baseline),
    )
    # all timing is done: the profiler may attach
    tops = {} if interrupted else {name: _top_op(v) for name, v in ctx.timed.items()}
    candidates = tuple(
        replace(c, result=replace(c.result, top_op=tops.get(c.name))) if c.result is not None else c
        for c in (*(c for _, c in singles), *stacked)
    )
    recipe_result = replace(_with_extra(variant.result(), paired), top_op=tops.get(recipe.name)) if variant else None
    processes = ctx.processes if per_window else None  # an unconfirmed recipe's processes are in its note only
    ctx.timed.clear()
    entry = ConfigOptimization(
        baseline=base_result,
        candidates=candidates,
        recommended=tuple(recipe.names),
        recipe_result=recipe_result,
        recipe_code=tuple(recipe.code()),
        run_command=_command_for(request, recipe.apply(cfg)) if recipe.remedies else None,
        baseline_command=_command_for(request, cfg),
        fresh_configs=(config_to_json(cfg), config_to_json(recipe.apply(cfg)))
        if request.rebuildable and recipe.remedies
        else None,
        not_tried=tuple(not_tried),
        notes=_notes(ctx, fp64_note),
        elapsed_s=time.monotonic() - started,
        recipe_speedup=recipe_speedup,
        recipe_window_speedups=per_window,
        recipe_process_windows=processes.windows if processes else 0,
        recipe_process_run_ids=processes.run_ids if processes else (),
        head_to_head=ctx.head_to_head,
    )
    if interrupted:
        raise SearchInterrupted(entry)
    return entry
