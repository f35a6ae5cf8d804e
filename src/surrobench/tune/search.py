"""The remedy search of one config (:class:`Search`) through an injected :class:`surrobench.tune.bench.Bench` and
clock, every verdict by the rule of :mod:`surrobench.records.paired` (docs/design.md, "Faster"):

1. :meth:`Search.singles`: each feasible remedy built, checked, timed with the baseline and judged.
2. :meth:`Search.stack`: greedy stacking on the fastest accepted remedy, then on its rival (the fastest timed
   remedy that excludes it); the two recipes timed head to head (:meth:`Search.duel`).
3. :meth:`Search.confirm`: the recipe timed in :data:`CONFIRM_WINDOWS` more windows and pairs of fresh
   processes; recommended only when its pooled speedup is faster.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from surrobench.execution.failures import explain_failure
from surrobench.execution.remedies import Recipe, Remedy
from surrobench.results.optimize import CandidateResult, HeadToHead, Unconfirmed
from surrobench.records.paired import PairedSamples, Speedup
from surrobench.tune.bench import Handle
from surrobench.tune.fresh import ProcessWindows
from surrobench.tune.trials import Trials

#: Windows in which the recipe is timed with the baseline again after the search (the confirmation): its
#: interval is drawn over windows, so it needs several (durations: docs/benchmarks/h200-optimize.md).
CONFIRM_WINDOWS = 3

Singles = list[tuple[Remedy, CandidateResult]]


@dataclass
class Search(Trials):
    """:meth:`run` fills ``not_tried`` (``(name, reason)``), ``recipe`` (empty: nothing recommended) with its handle and
    speedups, ``processes``, and ``unconfirmed`` (its pooled speedup did not hold); ``own``: the note naming the remedies
    left out as the baseline's own settings (:func:`~surrobench.analysis.feasibility.without_baseline_own`)."""

    not_tried: list[tuple[str, str]] = field(default_factory=list)
    own: list[str] = field(default_factory=list)
    head_to_head: HeadToHead | None = None
    recipe: Recipe = Recipe()
    recipe_handle: Handle | None = None
    recipe_speedup: Speedup | None = None
    window_speedups: tuple[float, ...] = ()
    processes: ProcessWindows | None = None
    confirm_error: str | None = None
    confirm_interrupted: bool = False
    confirm_rounds: int | None = None
    unconfirmed: Unconfirmed | None = None

    def reserve_s(self) -> tuple[float, float]:
        """Once a candidate is accepted (the recipe will be one of them): :data:`CONFIRM_WINDOWS` windows of the
        baseline and a recipe no slower than it, a round twice the baseline's (``Bench.round_s``; not the last window's
        rounds: a slow candidate's 27.7 s round kept 499 s of a 60 s budget in a CPU trial), at most half the budget (a
        busy host's 3.9 s rounds kept 139 s of 60 in another: a confirmation that does not fit runs the rounds that do),
        and one pair of its fresh processes while it still fits after them, else none would start and its time goes to
        candidates (docs/benchmarks/h200-optimize.md, "The budget holds the fresh processes")."""
        if (setup := self.reserve_setup_ms()) is None:
            return 0.0, 0.0
        windows = min(CONFIRM_WINDOWS * self.rounds * 2 * self.bench.round_s(), self.budget_s / 2)
        pair = self.bench.process_reserve_s(setup)
        return windows, pair if self.clock() + windows + pair <= self.budget_end else 0.0

    def run(self, remedies: list[Remedy]) -> None:
        """Steps 1 to 3 over ``remedies``, in their order.

        Raises:
            KeyboardInterrupt: Ctrl-C before the confirmation (what was judged is in :attr:`done`).
        """
        singles, best = self.singles(remedies)
        recipe, handle = self.stack(singles, best)
        if handle is None and not self.bench.baseline.rounds:  # nothing was timed: the baseline alone, for the record
            self.window([])
        if handle is None or self.bench.baseline.nonfinite:  # nothing to recommend against a NaN/Inf baseline
            return
        pooled, per_window = self.confirm(recipe, handle)
        if not pooled.faster():  # the pooled windows do not bear it out
            accepted = sorted((c for c in self.done if c.verdict == "accepted"), key=lambda c: -c.speedup.median)
            self.unconfirmed = Unconfirmed(recipe.name, pooled, len(per_window), tuple(c.name for c in accepted))
            return
        self.recipe, self.recipe_handle, self.recipe_speedup, self.window_speedups = recipe, handle, pooled, per_window

    def singles(self, remedies: list[Remedy]) -> tuple[Singles, Handle | None]:
        """Every remedy alone, in :meth:`~Trials.crowded_turns` (a crowded thread count last, its window cut). Returns
        ([(remedy, its CandidateResult)], the fastest accepted one's handle)."""
        out: Singles = []
        best, best_speed = None, 0.0
        for recipe, crowd in self.crowded_turns([Recipe((r,)) for r in remedies]):
            (remedy,) = recipe.remedies
            if reason := self.bench.infeasible(remedy):
                result, handle = CandidateResult(remedy.name, "infeasible", reason), None
            elif reason := self.spent(recipe):
                self.not_tried.append((remedy.name, f"{crowd}: {reason}" if crowd else reason))
                continue
            else:
                result, handle = self.try_recipe(recipe, crowd=crowd)
            out.append((remedy, result))
            self.judged(result)
            if result.verdict == "accepted" and result.speedup.median > best_speed:
                best, best_speed = handle, result.speedup.median
        return out, best

    def stack(self, singles: Singles, best: Handle | None) -> tuple[Recipe, Handle | None]:
        """Greedy stacking (:meth:`_path`) from the fastest accepted remedy, then from its rival (the fastest timed
        remedy that sets the same setting), whose recipe wins when the head to head favours it
        (docs/benchmarks/h200-optimize.md, "Two starts"). Returns (recipe, its handle)."""
        timed = sorted(
            ((r, c) for r, c in singles if c.speedup is not None and c.verdict != "rejected_accuracy"),
            key=lambda rc: -rc[1].speedup.median,
        )
        accepted = [r for r, c in timed if c.verdict == "accepted"]
        if not accepted or best is None:
            return Recipe(), None
        start = Recipe((accepted[0],))
        recipe, handle = self._path(start, best, timed)
        rival = next((r for r, _ in timed if r is not accepted[0] and start.conflict(r) is not None), None)
        if rival is None:
            return recipe, handle
        if reason := self.spent(Recipe((rival,))):
            self.not_tried.append((f"stacking on {rival.name}", reason))
            return recipe, handle
        rival_handle = self.timed.get(rival.name)
        if rival_handle is None:  # released to free device memory: built again (its accuracy was checked)
            try:
                rival_handle = self.bench.open(Recipe((rival,)))
            except Exception as exc:
                self.bench.free()
                error = f"could not be built again: {explain_failure(exc, self.bench.device).line}"
                self.head_to_head = HeadToHead(recipe.name, rival.name, None, recipe.name, error)
                return recipe, handle
        other, other_handle = self._path(Recipe((rival,)), rival_handle, timed)
        if self.duel((recipe, handle), (other, other_handle)):
            return other, other_handle
        return recipe, handle

    def _path(self, start: Recipe, handle: Handle, timed: Singles):
        """Greedy stacking from ``start`` over the timed singles, fastest first: each single added, or swapped in for
        a remedy added after the start (fp16 for tf32 in cudagraph+tf32), kept when it beats the recipe; then the
        swaps the first pass could not try yet (docs/benchmarks/h200-optimize.md, "Every ladder rung on the new
        core"). Returns (recipe, handle)."""
        recipe = start

        def attempt(candidate: Recipe, swapped_out: str | None = None) -> None:
            nonlocal recipe, handle
            seen = [c.name for c in self.done] + [name for name, _ in self.not_tried]
            if frozenset(candidate.names) in {frozenset(name.split("+")) for name in seen}:
                return  # judged or left out already (a swap can rebuild a stack tried before)
            if reason := self.spent(candidate):
                self.not_tried.append((candidate.name, reason))
                return
            result, new = self.try_recipe(candidate, handle, recipe.name)
            if swapped_out is not None:
                result = replace(result, reason=f"in place of {swapped_out}: {result.reason}")
            self.judged(result)
            if result.verdict == "accepted":
                recipe, handle = candidate, new

        def add_or_swap(remedy: Remedy, adds: bool) -> None:
            clash = recipe.conflict(remedy)
            if clash is None:
                if adds:
                    attempt(recipe.plus(remedy))
            elif remedy not in recipe.remedies and start.conflict(remedy) is None:  # the start's own rivals get
                attempt(recipe.swap(remedy), swapped_out=clash.name)  # a path of their own (:meth:`stack`)

        for remedy, _ in timed:
            add_or_swap(remedy, adds=True)
        for remedy, _ in timed:
            add_or_swap(remedy, adds=False)
        return recipe, handle

    def duel(self, first: tuple[Recipe, Handle], other: tuple[Recipe, Handle]) -> bool:
        """Whether ``other`` replaces ``first``: its median faster in one more window together (a fresh window against
        selection bias: Cawley & Talbot 2010, JMLR 11); a failed window keeps ``first``. Kept as
        :attr:`head_to_head`."""
        (recipe, handle), (rival, rival_handle) = first, other
        try:
            self.window([handle, rival_handle])
        except Exception as exc:
            self.bench.free()
            why = explain_failure(exc, self.bench.device).line
            self.head_to_head = HeadToHead(recipe.name, rival.name, None, recipe.name, why)
            return False
        gain = self.window_speedup(handle, rival_handle, self.last_rounds)
        wins = gain.median > 1.0
        self.head_to_head = HeadToHead(recipe.name, rival.name, gain, rival.name if wins else recipe.name)
        return wins

    def confirm(self, recipe: Recipe, handle: Handle) -> tuple[Speedup, tuple[float, ...]]:
        """The recipe's speedup pooled over every window with the baseline after :data:`CONFIRM_WINDOWS` more and the
        fresh pairs, its interval drawn over windows and processes (docs/benchmarks/h200-optimize.md, "Windows and
        processes"), and each window's. A failed window or Ctrl-C leaves those measured; a window, and a round of it,
        starts after the first only when it would end within the budget (:meth:`~Trials.window`), the rounds run
        counted in :attr:`confirm_rounds`."""
        before = len(self.paired[id(handle)])
        for n in range(CONFIRM_WINDOWS):
            if n and self.clock() + self.last_round_s > self.budget_end:
                break
            try:
                self.window([handle], end=self.budget_end)
            except KeyboardInterrupt:  # the recipe stands on the windows that finished; no fresh processes
                self.confirm_interrupted = True
                break
            except Exception as exc:  # the earlier windows stand as measured
                self.bench.free()
                self.confirm_error = explain_failure(exc, self.bench.device).line
                break
        self.confirm_rounds = len(self.paired[id(handle)]) - before
        baseline = self.bench.baseline.samples_ms()
        base, windows = zip(*((baseline[i], w) for i, w in self.paired[id(handle)]))
        record = PairedSamples.interleaved(base, handle.samples_ms(), windows=windows)
        if not self.confirm_interrupted:
            setup = self.fresh_setup_ms(recipe.name, handle.setup_ms)
            self.processes = self.bench.process_windows(recipe, handle, setup)
        found = self.processes
        for pair in range(found.windows if found is not None else 0):  # each pair of fresh processes is its own unit
            cut = slice(pair * self.rounds, (pair + 1) * self.rounds)
            record = record.add_windows(
                found.baseline_rounds[cut], found.recipe_rounds[cut], rounds=self.rounds, process=pair + 1
            )
        return record.speedup(), tuple(record.unit_speedups())
