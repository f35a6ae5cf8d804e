"""Step 2 and 3 of the remedy search (:mod:`surrobench.tune.search`): every remedy alone
(:func:`judge_singles`), then greedy stacking, with swaps, from two starts, the fastest accepted remedy and its
rival, the two recipes timed head to head (:func:`stack`)."""

from __future__ import annotations

from dataclasses import replace

from surrobench.analysis.feasibility import infeasible_reason
from surrobench.tune.trial import (
    SearchState,
    free_device,
    measure_candidate,
    probe_forward,
    time_window,
    window_speedup,
)
from surrobench.collect.probe import ProbeFacts
from surrobench.execution.failures import explain_failure
from surrobench.execution.interleave import Variant, open_variant
from surrobench.execution.remedies import Recipe, Remedy
from surrobench.records.vocab import HALF_PRECISIONS
from surrobench.results.optimize import CandidateResult, HeadToHead


def _half_probe(ctx: SearchState, remedy: Remedy) -> ProbeFacts | None:
    precision = dict(remedy.settings).get("precision")
    if precision not in HALF_PRECISIONS or ctx.cfg.device not in remedy.devices:
        return None
    return probe_forward(ctx.cfg, ctx.prepared, precision)


def judge_singles(ctx: SearchState, remedies: list[Remedy], not_tried: list) -> tuple[list, Variant | None]:
    """Every remedy alone. Returns ([(remedy, CandidateResult)], the fastest accepted one's variant)."""
    ranks = tuple(t.dim() for t in ctx.baseline.input_sets[0])
    shapes_change = len({tuple(t.shape for t in s) for s in ctx.baseline.input_sets}) > 1
    out, best, best_speed = [], None, 0.0
    for remedy in remedies:
        reason = infeasible_reason(
            remedy,
            ctx.cfg,
            ctx.probe,
            input_ranks=ranks,
            shapes_change=shapes_change,
            half_probe=_half_probe(ctx, remedy),
        )
        if reason:
            out.append((remedy, CandidateResult(remedy.name, "infeasible", reason)))
            ctx.judged(out[-1][1])
            continue
        if ctx.spent():
            not_tried.append((remedy.name, ctx.spent_reason()))
            continue
        result, variant = measure_candidate(ctx, Recipe((remedy,)))
        out.append((remedy, result))
        ctx.judged(result)
        if result.verdict == "accepted" and result.speedup.median > best_speed:
            best, best_speed = variant, result.speedup.median
    return out, best


def _path(ctx: SearchState, start: Recipe, variant: Variant, timed: list, not_tried: list):
    """Greedy stacking from ``start`` (whose variant is ``variant``): each timed single that sets no setting of
    the recipe is added, fastest first, and kept when it beats the recipe so far; then each timed single that
    sets a setting of a remedy added after the start is tried in its place (a swap: fp16 for tf32 in
    cudagraph+tf32), kept by the same rule. Returns (stacked candidates, recipe, its variant)."""
    recipe, stacked = start, []

    def attempt(candidate: Recipe, swapped_out: str | None = None) -> None:
        nonlocal recipe, variant
        if frozenset(candidate.names) in {frozenset(c.name.split("+")) for c in ctx.done}:
            return  # the same remedies were judged already (a swap can rebuild a stack tried before)
        if ctx.spent():
            not_tried.append((candidate.name, ctx.spent_reason()))
            return
        result, new = measure_candidate(ctx, candidate, variant, recipe.name)
        if swapped_out is not None:
            result = replace(result, reason=f"in place of {swapped_out}: {result.reason}")
        stacked.append(result)
        ctx.judged(result)
        if result.verdict == "accepted":
            recipe, variant = candidate, new

    for remedy, _ in timed:
        if recipe.conflict(remedy) is None:
            attempt(recipe.plus(remedy))
    for remedy, _ in timed:  # the start's own rivals get a path of their own (:func:`stack`)
        clash = recipe.conflict(remedy)
        if clash is not None and remedy not in recipe.remedies and start.conflict(remedy) is None:
            attempt(recipe.swap(remedy), swapped_out=clash.name)
    return stacked, recipe, variant


def stack(ctx: SearchState, singles: list, best: Variant | None, not_tried: list):
    """Greedy stacking (:func:`_path`) from the fastest accepted remedy, then from its rival, the fastest timed
    remedy that sets the same setting (another precision, another way to launch the step; accepted alone or
    not, as a remedy slower alone can win once stacked), which the first path can never reach; the rival's
    recipe replaces the first when it beats it head to head (:func:`head_to_head`). Returns (stacked
    candidates, recipe, its variant).

    Why a second start, and the swaps of :func:`_path`: which of two remedies that exclude each other is faster
    alone does not say which is faster once the rest is stacked on it. On the H200, DeepONet at 262,144 points
    ran tf32 1.61x and fp16 1.56x alone, and tf32+cudagraph 2.16x against fp16+cudagraph 2.52x in a later
    search, where fp16 had won alone (docs/benchmarks/h200-optimize.md, "Two starts")."""
    timed = sorted(
        ((r, c) for r, c in singles if c.speedup is not None and c.verdict != "rejected_accuracy"),
        key=lambda rc: -rc[1].speedup.median,
    )
    accepted = [r for r, c in timed if c.verdict == "accepted"]
    if not accepted or best is None:
        return [], Recipe(), None
    start = Recipe((accepted[0],))
    stacked, recipe, variant = _path(ctx, start, best, timed, not_tried)
    rival = next((r for r, _ in timed if r is not accepted[0] and start.conflict(r) is not None), None)
    if rival is None:
        return stacked, recipe, variant
    if ctx.spent():
        not_tried.append((f"stacking on {rival.name}", ctx.spent_reason()))
        return stacked, recipe, variant
    rival_variant = ctx.timed.get(rival.name)
    if rival_variant is None:  # released to free device memory: built again (its accuracy was checked)
        try:
            rival_variant = open_variant(Recipe((rival,)).apply(ctx.cfg), ctx.prepared)
        except Exception as exc:
            free_device(ctx.cfg.device)
            error = f"could not be built again: {explain_failure(exc).line}"
            ctx.head_to_head = HeadToHead(recipe.name, rival.name, None, recipe.name, error)
            return stacked, recipe, variant
    more, other, other_variant = _path(ctx, Recipe((rival,)), rival_variant, timed, not_tried)
    stacked += more
    if head_to_head(ctx, (recipe, variant), (other, other_variant)):
        return stacked, other, other_variant
    return stacked, recipe, variant


def head_to_head(ctx: SearchState, first: tuple[Recipe, Variant], other: tuple[Recipe, Variant]) -> bool:
    """Whether ``other`` (recipe, variant) beats ``first`` by the speedup rule of
    :mod:`surrobench.results.paired`, timed against each other (and the baseline) in one more window; the
    outcome is kept as ``ctx.head_to_head``. A window that fails keeps ``first``."""
    (recipe, variant), (rival, rival_variant) = first, other
    try:
        time_window(ctx, [variant, rival_variant])
    except Exception as exc:
        free_device(ctx.cfg.device)
        ctx.head_to_head = HeadToHead(recipe.name, rival.name, None, recipe.name, explain_failure(exc).line)
        return False
    gain = window_speedup(ctx, variant, rival_variant)
    ctx.head_to_head = HeadToHead(recipe.name, rival.name, gain, rival.name if gain.faster() else recipe.name)
    return gain.faster()
