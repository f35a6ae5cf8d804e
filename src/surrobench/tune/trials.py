"""One candidate of the remedy search at a time (:class:`Trials`): built, checked by the accuracy guard, timed
in a window with the baseline and judged by the rule of :mod:`surrobench.records.paired`; the budget, and which
baseline rounds each candidate was timed with.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from surrobench.execution.deadline import ConfigTimeout, deadline
from surrobench.execution.failures import budget_cut, explain_failure, failure_label
from surrobench.execution.host_facts import BF16_FLAGS, proc_value
from surrobench.execution.remedies import Recipe, compiles
from surrobench.execution.sanity import nonfinite_message
from surrobench.results.optimize import CandidateResult, timed_verdict
from surrobench.records.vocab import PRECISIONS, remedy_id
from surrobench.records.paired import MIN_ROUNDS, PairedSamples, Speedup, break_even_calls, noise_floor
from surrobench.tune.bench import Bench, Handle

#: A compiled candidate after the first takes at most this fraction of the first's time and setup (the later ones
#: hit Inductor's caches): the largest ratio measured (docs/benchmarks/h200-optimize.md, "The budget holds the
#: fresh processes").
WARM_COMPILE_FRACTION = 0.72
#: (Seconds, where) a cold torch.compile candidate is expected to take, by device: the slowest first compilation
#: measured on an H200 (docs/benchmarks/h200-optimize.md, "The budget holds the fresh processes") and on a 2-core
#: EPYC at 1 thread, a fresh Inductor cache (docs/benchmarks/cpu-optimize.md, "A first compilation on the CPU").
#: Which candidates compile cold (a new thread count; on the CPU a new precision too, not on CUDA) and the
#: measurements behind it: docs/design.md, "Fresh processes: their share of the budget".
FIRST_COMPILE_S = {"cuda": (20.6, "an H200"), "cpu": (33.4, "a 2-core EPYC CPU")}


@dataclass
class Trials:
    """Candidates tried against one baseline through ``bench``, ``rounds`` rounds per window, within ``budget_s``
    ending at ``budget_end`` on ``clock``. ``bounded`` (diagnose): a candidate starts when its least measurement
    fits (:meth:`minimum_s`); ``stored`` (diagnose): the cited optimization's candidates, whose ``setup_s`` time a
    first compilation. ``paired``: ``id(handle)`` -> (baseline round, its window's id) of each round it was timed
    with; ``timed`` handles kept to be profiled; ``done``, every verdict."""

    bench: Bench
    rounds: int
    budget_s: float = math.inf
    budget_end: float = math.inf
    clock: Callable[[], float] = time.monotonic
    bounded: bool = False
    stored: Mapping[frozenset[str], dict] | None = None
    on_judged: Callable[[], None] = lambda: None
    last_rounds: int = 0
    last_round_s: float = 0.0
    paired: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    timed: dict[str, Handle] = field(default_factory=dict)
    unprofiled: list[str] = field(default_factory=list)
    done: list[CandidateResult] = field(default_factory=list)

    def judged(self, result: CandidateResult) -> None:
        self.done.append(result)
        self.on_judged()

    def fresh_setup_ms(self, name: str, setup_ms: float) -> float:
        """The setup, ms, a fresh process of recipe ``name`` pays (``setup_ms`` here): a compiled one loads the
        search's caches (the median of the compiled candidates after the first, or :data:`WARM_COMPILE_FRACTION`
        of the first's)."""
        if not compiles(name):
            return setup_ms
        compiled = [1000.0 * c.setup_s for c in self.done if c.setup_s is not None and compiles(c.name)] or [setup_ms]
        return float(np.median(compiled[1:])) if len(compiled) > 1 else WARM_COMPILE_FRACTION * compiled[0]

    def reserve_setup_ms(self) -> float | None:
        """The largest :meth:`fresh_setup_ms` of the accepted candidates (the recipe will be one); None before one."""
        accepted = [c for c in self.done if c.verdict == "accepted"]
        return max((self.fresh_setup_ms(c.name, 1000.0 * (c.setup_s or 0.0)) for c in accepted), default=None)

    def reserve_s(self) -> tuple[float, float]:
        """Seconds kept at the budget's end for the recipe's confirmation (windows, one fresh pair): none here."""
        return 0.0, 0.0

    def deadline(self) -> float:
        """``clock()`` by which a candidate must end: :attr:`budget_end` less :meth:`reserve_s`."""
        return self.budget_end - sum(self.reserve_s())

    def recompiles(self, recipe: Recipe) -> bool:
        """Whether ``recipe`` compiles cold after compiled candidates ran: none at its thread count (and precision on
        the CPU, :data:`FIRST_COMPILE_S`)."""
        guarded = ("threads", *PRECISIONS) if self.bench.device == "cpu" else ("threads",)

        def state(name: str) -> set[str]:
            return {part for part in name.split("+") if remedy_id(part) in guarded}

        ran = [state(c.name) for c in self.done if c.time_s and compiles(c.name)]
        return compiles(recipe.name) and bool(ran) and state(recipe.name) not in ran

    def crowds(self, recipe: Recipe) -> str:
        """Why ``recipe`` is tried last (:meth:`crowded_turns`): more threads than the cores other processes left free
        (:meth:`~surrobench.tune.bench.Bench.free_cores`, read now), spinning on cores others hold; bf16 on a CPU whose
        flags name no bf16 units (:data:`~surrobench.execution.host_facts.BF16_FLAGS`), emulated; else ""."""
        threads = dict(setting for part in recipe.remedies for setting in part.settings).get("threads")
        free = threads and self.bench.free_cores()
        if free and threads > free:
            return f"tried last: {threads} threads for {free} free core(s)"
        flags = proc_value(("flags", "Features")) if self.bench.device == "cpu" and "bf16" in recipe.names else None
        emulated = flags is not None and not set(BF16_FLAGS) & set(flags.split())
        return f"tried last: this CPU has no bf16 units (no {'/'.join(BF16_FLAGS)} flag)" if emulated else ""

    def crowded_turns(self, recipes: Sequence[Recipe]) -> Iterator[tuple[Recipe, str]]:
        """``recipes`` in order, each with why it is tried last (:meth:`crowds` at its turn: the free cores move during
        a search; "" for none): one crowded at its turn is sent to the end, after the others, with that reason."""
        later = []
        for recipe in recipes:
            if crowd := self.crowds(recipe):
                later.append((recipe, crowd))
            else:
                yield recipe, ""
        yield from later

    def expected_s(self, recipe: Recipe) -> float:
        """Seconds ``recipe`` takes to build, check and time: the longest candidate so far that compiles as it does
        (0 before one); the first compiled one (cold) left out once there is a second, else counted at
        :data:`WARM_COMPILE_FRACTION`; one that :meth:`recompiles`, as a first compilation: its device's
        :data:`FIRST_COMPILE_S` or the first compiled one's time, the longer."""
        compiled = compiles(recipe.name)
        like = [c.time_s for c in self.done if c.time_s and compiles(c.name) == compiled]
        if self.recompiles(recipe):
            return max(FIRST_COMPILE_S[self.bench.device][0], like[0])
        if compiled and like:
            like = like[1:] or [WARM_COMPILE_FRACTION * like[0]]
        return max(like, default=0.0)

    def minimum_s(self, recipe: Recipe) -> float:
        """Seconds the least measurement of ``recipe`` takes: the longest setup so far that compiles as it does, and
        :data:`MIN_ROUNDS` rounds of it and the baseline."""
        compiled = compiles(recipe.name)
        setup = max((c.setup_s for c in self.done if c.setup_s and compiles(c.name) == compiled), default=0.0)
        return setup + MIN_ROUNDS * 2 * self.bench.round_s()

    def spent(self, recipe: Recipe) -> str | None:
        """Why ``recipe`` would not end by :meth:`deadline` (needing :meth:`minimum_s` when :attr:`bounded`, else
        :meth:`expected_s`), None when it would: the budget as given (0.3 s, not 0 s), what ``recipe`` needs against
        what is left, and the time kept, one :meth:`reserve_s` per decision."""
        need = self.minimum_s(recipe) if self.bounded else self.expected_s(recipe)
        windows, pair = self.reserve_s()
        left = self.budget_end - windows - pair - self.clock()
        if need <= left:
            return None
        kept = windows + pair
        what = "windows and fresh processes" if pair else "windows"
        reserve = f"{kept:.0f} s kept for the recipe's confirmation {what}" if kept >= 0.5 else ""
        budget = f"budget of {self.budget_s:.3g} s"
        if need <= 0 or left <= 0:  # what is left of it, if any, is kept
            return f"{budget}: the {reserve}" if reserve else f"{budget} spent"
        return f"needs about {need:.0f} s, {left:.0f} s left of the {budget}" + (f", {reserve}" if reserve else "")

    def window(self, handles: Sequence[Handle], versus: Handle | None = None, end: float | None = None) -> None:
        """One window of ``handles`` with the baseline (:attr:`paired`, :attr:`last_rounds`, :attr:`last_round_s`),
        a round started only when one as long as its last would end by ``end`` (:meth:`deadline` unless given);
        ``versus``: what a crowded candidate (the last of ``handles``) would replace, its window then ending also once
        :meth:`slower_so_far` finds it slower. Raises what the bench's did."""
        baseline = self.bench.baseline
        first = len(baseline.rounds)
        ends = [self.clock()]  # the window's start, then each round's end

        def stop() -> bool:
            ends.append(self.clock())
            self.last_round_s = ends[-1] - ends[-2]
            late = ends[-1] + self.last_round_s > (self.deadline() if end is None else end)
            crowded = versus is not None and len(ends) > MIN_ROUNDS
            return late or crowded and self.slower_so_far(versus, handles[-1], len(ends) - 1)

        self.bench.window(handles, stop)
        self.last_rounds = len(baseline.rounds) - first
        for h in handles:
            self.paired.setdefault(id(h), []).extend((i, first) for i in range(first, len(baseline.rounds)))

    def timed_window(self, handles: Sequence[Handle], reference: Handle, crowd: str) -> str:
        """:meth:`window` of ``handles`` (the candidate last; ``crowd``: tried last, cut ``versus`` ``reference``), then
        one more where the paired rule reads the candidate over ``reference`` ``inconclusive`` with its estimate past
        the rule's margin (a gain the interval does not yet confirm; not crowded, finite) and :data:`MIN_ROUNDS` rounds
        as long as the last end by :meth:`deadline`; :attr:`last_rounds` then both windows' rounds, judged together as
        one window's rounds (two windows as units of the bootstrap would draw the first window's inconclusive reading
        alone in a quarter of the draws: the second could never decide; a drift between them widens the interval, a
        cautious error). One: the rounds doubled, a candidate at most two windows,
        as later ones are budgeted by the longest (:meth:`expected_s`; docs/design.md, "Measured actions"). Returns what
        its reason adds: the rounds and the first window's reading, or why no window more ran; else "". Raises what
        :meth:`window` raised."""
        self.window(handles, reference if crowd else None)
        first = self.window_speedup(reference, handles[-1], self.last_rounds)
        if crowd or first.verdict() != "inconclusive" or first.median <= 1.0 + first.margin() or handles[-1].nonfinite:
            return ""
        need = MIN_ROUNDS * self.last_round_s
        if (left := self.deadline() - self.clock()) < need:
            return f"; no window more: {MIN_ROUNDS} rounds need {need:.1f} s, {max(left, 0.0):.1f} s left"
        rounds = self.last_rounds
        self.window(handles)
        self.last_rounds += rounds
        return f"; over {self.last_rounds} rounds in 2 windows, the first's {rounds} at {first.text()}"

    def window_speedup(self, reference: Handle, candidate: Handle, rounds: int) -> Speedup:
        """``candidate`` over ``reference`` in their last ``rounds`` rounds (>= 1), timed together."""
        return PairedSamples.interleaved(reference.samples_ms()[-rounds:], candidate.samples_ms()[-rounds:]).speedup()

    def slower_so_far(self, reference: Handle, candidate: Handle, rounds: int) -> bool:
        """Whether :meth:`window_speedup` is slower (checked between timed rounds): its bootstrap drawn only once the
        ratio of medians alone, a zero-width interval, is slower by the rule's own margin (:meth:`Speedup.slower`)."""
        base, mine = reference.samples_ms()[-rounds:], candidate.samples_ms()[-rounds:]
        estimate = float(np.median(base) / np.median(mine))
        cheap = Speedup(estimate, (estimate, estimate), noise_floor(base)).slower()
        return cheap and PairedSamples.interleaved(base, mine).speedup().slower()

    def try_recipe(
        self, recipe: Recipe, current: Handle | None = None, current_name: str | None = None, crowd: str = ""
    ) -> tuple[CandidateResult, Handle | None]:
        """Build, check and time ``recipe`` against the baseline and, when stacking, the ``current`` recipe:
        ``accepted`` when faster than the one it would replace; ``crowd``: why it is tried last (:meth:`crowds`),
        its window then cut as :meth:`window` says (``versus`` the one it would replace); a timed verdict's reason ends
        with it and with a window cut short. Returns (its result, its handle when timed)."""
        bench = self.bench
        started = self.clock()
        # a build (a first compilation: 100+ s for a forward looping 128 steps, docs/benchmarks/h200-measured-advice.md)
        # is cut at the budget's end; on the main thread only (a signal's)
        main = math.isfinite(self.budget_end) and threading.current_thread() is threading.main_thread()
        try:
            with deadline(max(self.budget_end - started, 1e-3) if main else None, "the budget's end") as fired:
                handle = bench.open(recipe)
        except (Exception, ConfigTimeout) as exc:  # compile, capture or the model under the remedy failed: kept
            return self._failed(recipe.name, exc, started, current_name, bool(fired)), None
        accuracy = bench.accuracy(handle)
        common = dict(accuracy=accuracy, setup_s=handle.setup_ms / 1e3, stacked_on=current_name)
        if accuracy.ok and not handle.nonfinite:
            try:
                replaced = current if current is not None else bench.baseline
                extended = self.timed_window([current, handle] if current is not None else [handle], replaced, crowd)
            except Exception as exc:  # a replay or a later call failed
                del handle
                return self._failed(recipe.name, exc, started, current_name), None
        if not accuracy.ok or handle.nonfinite:  # NaN/Inf before its window or at its end: no timing of it is judged
            reason = accuracy.reason if not accuracy.ok else nonfinite_message(handle.nonfinite)
            del handle
            bench.free()
            verdict = "rejected_accuracy"
            return CandidateResult(recipe.name, verdict, reason, time_s=self.clock() - started, **common), None
        vs_base = self.window_speedup(bench.baseline, handle, self.last_rounds)
        gain = self.window_speedup(current, handle, self.last_rounds) if current is not None else None
        decisive = gain or vs_base
        few = self.last_rounds < MIN_ROUNDS  # fewer rounds than the rule needs: not judged, faster or slower
        accepted = decisive.faster() and not few
        reason = decisive.reason(current_name or "the baseline") + extended
        if accepted:
            reason += f"; {accuracy.reason} ({accuracy.decided_by} rule)"
        elif why_not := bench.not_faster_note(recipe):
            reason += f"; {why_not}"
        if crowd:
            reason += f"; {crowd}"
        if few:
            cut = f"{self.last_rounds} of {self.rounds} rounds before the budget's end (the rule needs {MIN_ROUNDS})"
            reason = f"inconclusive: {cut}: {reason}"
        elif self.last_rounds < self.rounds:
            slower = crowd and decisive.slower()
            how = "once slower" if slower else "at the deadline"
            reason += f"{',' if crowd else ';'} its window cut {how}: {self.last_rounds} of {self.rounds} rounds"
        base_ms, ms = (float(np.median(h.samples_ms()[-self.last_rounds :])) for h in (bench.baseline, handle))
        calls = break_even_calls(handle.setup_ms, bench.baseline.setup_ms, ms, base_ms) if accepted else None
        result = CandidateResult(
            recipe.name,
            "rejected_not_faster" if few else timed_verdict(decisive),
            reason,
            rounds=self.last_rounds,
            speedup=vs_base,
            gain=gain,
            break_even_calls=calls,
            result=handle.result(),
            time_s=self.clock() - started,
            baseline_ms=base_ms,
            **common,
        )
        self.timed[recipe.name] = handle  # kept to be profiled, all released when the bench is crowded
        if bench.crowded():
            self.unprofiled += list(self.timed)
            self.timed.clear()
        return result, handle

    def _failed(
        self, name: str, exc: BaseException, started: float, stacked_on: str | None, cut: bool = False
    ) -> CandidateResult:
        """``name`` failed with ``exc``; ``cut``: the budget's end cut it (:func:`budget_cut`), whatever ``exc`` says."""
        self.bench.free()  # the memory the failed candidate left behind
        time_s = self.clock() - started
        cause = budget_cut(time_s) if cut else explain_failure(exc, self.bench.device)
        return CandidateResult(
            name,
            "failed",
            f"{name} failed: {cause.line}",
            error=failure_label(exc),
            cause=cause.cause_id,
            time_s=time_s,
            stacked_on=stacked_on,
        )
