"""One config of ``surrobench optimize`` searched within ``budget_s`` and reported (:func:`optimize_config`), every
timed variant then profiled for its top op.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from surrobench.analysis.feasibility import without_baseline_own
from surrobench.errors import Interrupted
from surrobench.execution.config import ExecConfig
from surrobench.execution.failures import explain_failure
from surrobench.execution.remedies import candidate_remedies, compiles, off_device, run_flags
from surrobench.execution.runner import PreparedModel, merge_rounds, planned_inputs, run_config, timed_out_result
from surrobench.execution.env import listed
from surrobench.records.run import ConfigResult
from surrobench.results.compare import PAIRED_UNITS_KEY
from surrobench.results.measured_remedies import drifted
from surrobench.results.optimize import ConfigOptimization
from surrobench.records.paired import PairedSamples, Speedup
from surrobench.tune.bench import SIZING_CALLS, DeviceBench, free_device, room_for_compiled_variants, top_op
from surrobench.tune.fresh import ProcessWindows
from surrobench.tune.request import OptimizeRequest
from surrobench.tune.search import CONFIRM_WINDOWS, Search
from surrobench.workload.inputs import DEFAULT_INPUT_SETS


def _interrupted(partial: ConfigOptimization | None) -> Interrupted:
    return Interrupted("interrupted during the search", partial)


def optimize_config(
    cfg: ExecConfig,
    prepared: PreparedModel,
    request: OptimizeRequest,
    *,
    db: Path | None = None,
    on_phase: Callable[[str], None] = lambda text: None,
    on_progress: Callable[[ConfigOptimization], None] = lambda partial: None,
) -> ConfigOptimization:
    """The search of one config, fresh runs stored in ``db`` (None: not kept); ``on_phase`` gets a line before the
    fresh processes, ``on_progress`` the config so far after each verdict.

    Raises:
        Interrupted: Ctrl-C; ``partial`` the config as far as it got (the recipe on its finished windows when it
            came during the confirmation), its baseline ``interrupted`` (as ``run`` keeps a config cut) when untimed.
    """
    started = time.monotonic()
    try:
        bench = DeviceBench.start(cfg, prepared, request, started + request.budget_s, db)
    except (Interrupted, KeyboardInterrupt) as cut:  # the baseline as its sizing round timed it, else as run keeps it
        notes, baseline = (_SETUP_CUT, _SIZING_ONLY), getattr(cut, "partial", None)
        if baseline is None:  # cut in its first call, or in the sizing round before it was timed
            phase = "warmup" if isinstance(cut, Interrupted) else "first_call"
            seen = {"phase": phase, "inputs": planned_inputs(cfg, prepared.surrogate)}
            notes, baseline = notes[:1], timed_out_result(cfg, KeyboardInterrupt(), seen)
        raise _interrupted(_cut_short(cfg, request, baseline, (), notes, started)) from None
    except Exception as exc:  # the baseline itself cannot run: measured as run does, no candidates
        free_device(cfg.device)
        return ConfigOptimization(baseline=run_config(cfg, prepared), error=explain_failure(exc, cfg.device).line)
    bench.on_phase = on_phase
    search = Search(bench, request.rounds, budget_s=request.budget_s, budget_end=bench.budget_end)
    search.on_judged = lambda: on_progress(_partial(search, started))
    remedies = candidate_remedies(cfg.device, thorough=request.thorough, precision=cfg.precision)
    remedies = [r for r in remedies if request.only is None or r.name in request.only]
    remedies, search.own = without_baseline_own(remedies, cfg)
    with room_for_compiled_variants():
        try:
            search.run(remedies)
        except KeyboardInterrupt:
            raise _interrupted(_partial(search, started)) from None
        try:
            entry = _entry(search, started)
        except KeyboardInterrupt:  # while its top ops were profiled: the search stands, unprofiled
            raise _interrupted(_entry(search, started, profile=False)) from None
    if entry.cut_short:  # in the recipe's confirmation: it stands on the windows that finished; no profiling
        raise _interrupted(entry)
    return entry


#: The note of a config whose search was cut short while the baseline was set up.
_SETUP_CUT = "interrupted while the baseline was set up (its references, the probe): no candidate judged"
#: The note of a baseline kept as its sizing round timed it (:func:`surrobench.tune.bench.round_size`).
_SIZING_ONLY = f"the baseline as its sizing round timed it: 1 warm-up and {SIZING_CALLS} timed calls, not a full round"


def _entry(search: Search, started: float, profile: bool = True) -> ConfigOptimization:
    """The finished search as the report's config, every timed variant profiled unless Ctrl-C came during the
    recipe's windows or ``profile`` is False (Ctrl-C came while profiling)."""
    bench: DeviceBench = search.bench
    request, cfg, baseline = bench.request, bench.cfg, bench.baseline
    recipe, variant = search.recipe, search.recipe_handle
    cut = search.confirm_interrupted or (search.processes is not None and search.processes.interrupted)
    notes = _notes(search) + (() if profile or cut else ("interrupted while profiling the top ops: none kept",))
    profile = profile and not cut
    pairs = search.paired[id(variant)] if variant else [(i, 0) for i in range(len(baseline.rounds))]
    # each round marked with its window, so compare pairs them
    paired = {PAIRED_UNITS_KEY: [[0, w] for _, w in pairs]} if variant else {}
    # all timing is done: the profiler may attach, the baseline's top op first
    profiling_started = time.monotonic()
    base_result = replace(baseline.result([i for i, _ in pairs], paired), top_op=top_op(baseline) if profile else None)
    tops = {name: top_op(v) for name, v in search.timed.items()} if profile else {}
    profiled_s = time.monotonic() - profiling_started
    candidates = tuple(
        replace(c, result=replace(c.result, top_op=tops.get(c.name))) if c.result is not None else c
        for c in search.done
    )
    recipe_result = replace(variant.result(extra=paired), top_op=tops.get(recipe.name)) if variant else None
    processes = search.processes if variant else None  # an unconfirmed recipe's processes are in its note only
    search.timed.clear()
    timed = base_result.latency_ms  # a window whose baseline drifted from the baseline row (the one rule) is named
    late = [f"{c.name} (baseline {c.baseline_ms:.3g} ms)" for c in candidates if drifted(c.baseline_ms, timed)]
    row = f"{timed.median:.3g} ms [{timed.ci95_median[0]:.3g}, {timed.ci95_median[1]:.3g}]" if late else ""
    notes += tuple(listed(f"the host drifted: windows timed the baseline off the baseline row's {row}", late))
    elapsed_s = time.monotonic() - started
    return ConfigOptimization(
        baseline=base_result,
        candidates=candidates,
        recommended=tuple(recipe.names),
        recipe_result=recipe_result,
        recipe_code=tuple(recipe.code()),
        run_command=_command_for(request, recipe.apply(cfg)) if recipe.remedies else None,
        baseline_command=_command_for(request, cfg),
        fresh_configs=(cfg.to_json(), recipe.apply(cfg).to_json()) if request.rebuildable and recipe.remedies else None,
        not_tried=tuple(search.not_tried),
        notes=(*notes, *_overrun_note(search, elapsed_s, profiled_s)),
        elapsed_s=elapsed_s,
        recipe_speedup=search.recipe_speedup,
        recipe_window_speedups=search.window_speedups,
        recipe_process_windows=processes.windows if processes else 0,
        recipe_process_run_ids=processes.run_ids if processes else (),
        head_to_head=search.head_to_head,
        unconfirmed=search.unconfirmed,
        baseline_drift=_baseline_drift(baseline.samples_ms(), processes),
        cut_short=cut,
    )


def _baseline_drift(in_process: list[list[float]], processes: ProcessWindows | None) -> Speedup | None:
    """The baseline's rounds in the fresh processes over those in this process, as two separate runs; None
    without fresh rounds."""
    if processes is None or not processes.baseline_rounds or not in_process:
        return None
    return PairedSamples.separate(in_process, processes.baseline_rounds).speedup()


def _partial(search: Search, started: float) -> ConfigOptimization | None:
    """The config as far as its search got: the baseline's rounds (else its sizing round) and every verdict; None
    when the baseline was never timed."""
    bench: DeviceBench = search.bench
    notes = _notes(search)
    if bench.baseline.rounds:
        baseline = replace(merge_rounds(bench.baseline.rounds), cold_start_ms=bench.baseline.setup_ms)
    elif bench.sizing is not None:
        baseline = bench.sizing
        notes += ("interrupted before the first timing window: no candidate timed", _SIZING_ONLY)
    else:
        return None
    off = off_device(bench.cfg.device)  # never run there: not judged
    judged = sum(c.name not in off for c in search.done)
    note = f"interrupted during the search: {judged} candidate(s) judged, no recipe"
    return _cut_short(bench.cfg, bench.request, baseline, tuple(search.done), (*notes, note), started)


def _cut_short(
    cfg: ExecConfig,
    request: OptimizeRequest,
    baseline: ConfigResult,
    candidates: tuple,
    notes: tuple[str, ...],
    started: float,
) -> ConfigOptimization:
    return ConfigOptimization(
        baseline=baseline,
        candidates=candidates,
        baseline_command=_command_for(request, cfg),
        notes=notes,
        elapsed_s=time.monotonic() - started,
        cut_short=True,
    )


def _overrun_note(search: Search, elapsed_s: float, profiled_s: float) -> tuple[str, ...]:
    """Why the config ran past ``budget_s``, when it did."""
    budget_s = search.bench.request.budget_s
    if elapsed_s <= budget_s:
        return ()
    processes_s = search.processes.elapsed_s if search.processes is not None else 0.0
    fresh = f"the fresh processes {processes_s:.1f} s, " if processes_s else ""
    split = f"{elapsed_s:.1f} s in all: {fresh}profiling the top ops after the search {profiled_s:.1f} s"
    over = f"ran {elapsed_s - budget_s:.1f} s past the budget of {budget_s:g} s ({split})"
    longest = max(search.done, key=lambda c: c.time_s or 0.0, default=None)
    if longest is None or not longest.time_s:
        return (f"{over}; the baseline's setup, its references and its sizing round come before the first candidate",)
    compiled = " (a first compilation above all)" if compiles(longest.name) else ""
    return (
        f"{over}; the longest candidate, {longest.name}, took {longest.time_s:.1f} s (the first candidate of a "
        f"kind{compiled}, and a window's first round, cannot be estimated before they run)",
    )


def _notes(search: Search) -> tuple[str, ...]:
    bench: DeviceBench = search.bench
    request, probe = bench.request, bench.probe
    notes = [f"rounds of {bench.warmup} warm-up + {bench.iters} timed calls, {request.rounds} rounds per measurement"]
    notes += search.own
    if probe.ffts:
        notes.append(f"the forward runs FFTs at {probe.fft_text()}")
    if probe.syncs:
        what = "host synchronizations" if bench.device != "cpu" else "data-dependent ops (torch.compile graph breaks)"
        notes.append(f"{what} in forward: {probe.sync_text()}")
    if bench.fp64_note:
        notes.append(bench.fp64_note)
    notes += [part.note() for part in (search.head_to_head, search.unconfirmed) if part]
    if search.confirm_interrupted:
        notes.append(
            "interrupted (Ctrl-C or a signal) during the recipe's confirmation windows: it stands on those that finished"
        )
    elif search.confirm_error:
        notes.append(
            f"the recipe's confirmation window failed ({search.confirm_error}); its speedup pools the earlier ones"
        )
    elif search.confirm_rounds is not None and search.confirm_rounds < CONFIRM_WINDOWS * request.rounds:
        ran = f"{search.confirm_rounds} of its {CONFIRM_WINDOWS * request.rounds} rounds"
        notes.append(f"the recipe's confirmation ran {ran}: the rest would have ended past the budget")
    found = search.processes
    if found is not None:
        runs = ", ".join(found.run_ids) if bench.db else "not kept"
        notes.append(
            f"the confirmation's windows include {found.windows} of {request.process_pairs} pair(s) of fresh processes "
            f"({found.elapsed_s:.0f} s; runs of the processes that finished: {runs or 'none'})"
            + (f"; {found.skipped} pair(s) skipped: the budget left would not fit them" if found.skipped else "")
            + (f"; a process failed: {found.error}" if found.error else "")
            + ("; interrupted (Ctrl-C or a signal)" if found.interrupted else "")
        )
    notes += listed("top op not profiled (released to free device memory)", search.unprofiled)
    if not request.rebuildable:
        notes.append(
            "no `surrobench run` line: the model was given as a Python object, which a command line cannot name; "
            "apply the recipe's code, or give the model as 'path/file.py:factory' to get the line (and the "
            "recipe's timing windows in fresh processes)"
        )
    return tuple(notes)


def run_command(cfg: ExecConfig) -> str:
    """The ``surrobench run`` line that measures ``cfg`` again (seed and input sets where not the defaults)."""
    words = ["surrobench", "run", "--model", cfg.model, "--shape", cfg.shape.label(), "--batch", str(cfg.batch)]
    words += run_flags(cfg)
    if cfg.seed != 0:
        words += ["--seed", str(cfg.seed)]
    if cfg.input_sets != DEFAULT_INPUT_SETS:
        words += ["--input-sets", str(cfg.input_sets)]
    return shlex.join(words)


def _command_for(request: OptimizeRequest, cfg: ExecConfig) -> str | None:
    """:func:`run_command` of ``cfg``; None when no command line can name the model (``request.rebuildable``)."""
    return run_command(cfg) if request.rebuildable else None
