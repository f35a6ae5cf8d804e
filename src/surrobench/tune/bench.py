"""What the remedy search measures with (:class:`Bench`: a test plants timings and accuracies) and the bench of
one config on this machine (:class:`DeviceBench`).

:meth:`DeviceBench.start`: the baseline built and run once (its setup), the round size (:func:`round_size`),
the fp32 and fp64 references (:mod:`surrobench.execution.reference`), one forward probed op by op.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from surrobench.analysis.accuracy import AccuracyVerdict, check_accuracy
from surrobench.analysis.feasibility import infeasible_reason
from surrobench.errors import Interrupted
from surrobench.collect.probe import ProbeFacts, probe_call
from surrobench.collect.torch_profiler import ProfileSchedule, profile_steps
from surrobench.execution.config import ExecConfig, autocast_context, execution_settings
from surrobench.execution.host_facts import cpu_times, free_cores_of, other_cpus, usable_cpus
from surrobench.execution.interleave import Variant, interleave, open_variant, time_round
from surrobench.execution.ranges import annotated_step
from surrobench.execution.reference import reference_outputs
from surrobench.execution.remedies import Recipe, Remedy, compiles
from surrobench.execution.runner import PreparedModel, check_output, config_inputs, free_device, in_grad_mode
from surrobench.execution.sanity import nonfinite_message
from surrobench.records.run import ConfigResult
from surrobench.records.vocab import HALF_PRECISIONS
from surrobench.tune.fresh import PairBudget, ProcessWindows, pair_estimate_s, process_windows
from surrobench.tune.request import OptimizeRequest

#: A round of one variant is sized to take about this long (its timed calls), within [MIN_ROUND_ITERS, --iters].
ROUND_TARGET_MS = 300.0
MIN_ROUND_ITERS = 5
#: Keep timed variants for profiling only while this fraction of device memory is free (CUDA graphs hold pools).
KEEP_FREE_FRACTION = 0.25
#: The largest share of the budget kept for one fresh pair (pair times: docs/benchmarks/h200-optimize.md).
PAIR_SHARE = 0.25
#: Profiled steps for the top-op share of the baseline and of every timed candidate: one warm-up, three recorded,
#: after every timed round (once CUPTI is attached, launches stay slower in that process:
#: https://github.com/pytorch/pytorch/issues/144455).
_TOP_OP_SCHEDULE = ProfileSchedule(wait=0, warmup=1, active=3)


class Handle(Protocol):
    """A built candidate, or the baseline, as the search reads it (:class:`Variant` on a device)."""

    setup_ms: float  # its first call: compilation, capture, autotuning and one forward, ms
    rounds: list  # one entry per timed round, in time order
    nonfinite: dict | None  # where its output first held NaN/Inf (sanity.check_calls), None while finite

    def samples_ms(self) -> list[list[float]]:
        """Per-call latencies, ms, ``rounds x calls``."""

    def result(self) -> ConfigResult | None:
        """Its rounds merged into one result (median, P95, peak memory), for the report."""


class Bench(Protocol):
    """What :class:`surrobench.tune.search.Search` measures with: one baseline and the candidates built on it."""

    baseline: Handle
    device: str  # the config's, which a failure's explanation names remedies for (explain_failure)

    def infeasible(self, remedy: Remedy) -> str | None:
        """Why ``remedy`` cannot help this config, known before any time is spent on it; None to try it."""

    def open(self, recipe: Recipe) -> Handle:
        """``recipe`` built and called once (its setup). Raises what building or the call raised."""

    def accuracy(self, handle: Handle) -> AccuracyVerdict:
        """The accuracy guard's verdict on ``handle``'s first output."""

    def window(self, handles: Sequence[Handle], stop: Callable[[], bool]) -> None:
        """One window of the baseline and ``handles`` interleaved, appended to each one's ``rounds``. A failure leaves
        no rounds behind; Ctrl-C keeps the baseline's. Raises what a handle raised, or KeyboardInterrupt."""

    def round_s(self) -> float:
        """Seconds one round of the baseline takes (its warm-up and timed calls)."""

    def free_cores(self) -> int | None:
        """The CPU cores other processes left free since the search began; None off the CPU or unread."""

    def free(self) -> None:
        """Return the memory a failed candidate left behind."""

    def crowded(self) -> bool:
        """Whether the device is too full to keep timed candidates for profiling after the search."""

    def not_faster_note(self, recipe: Recipe) -> str | None:
        """What the bench knows about why ``recipe`` may not be faster (one clause), or None."""

    def process_windows(self, recipe: Recipe, handle: Handle, setup_ms: float) -> ProcessWindows | None:
        """More windows of ``recipe`` and the baseline in pairs of fresh processes; None when none run."""

    def process_reserve_s(self, setup_ms: float) -> float:
        """Seconds kept at the budget's end for one fresh pair of a recipe with this setup; 0 when none run."""


#: torch._dynamo compiles one code object at most ``recompile_limit`` times per process (8 by default), then runs
#: new variants uncompiled; the search compiles many candidates in one process, so the limit is raised this many
#: times over (:func:`room_for_compiled_variants`; docs/benchmarks/h200-optimize.md, "Every ladder rung").
COMPILED_VARIANTS = 32


@contextmanager
def room_for_compiled_variants() -> Iterator[None]:
    """torch._dynamo's recompile limits raised :data:`COMPILED_VARIANTS` times for the ``with`` block, so that
    every compiled candidate of the search is compiled (torch.compiler docs, "Recompilation"), and its warning of a
    graph break at ``Tensor.item()`` (a dozen lines) held back: the search's notes count the forward's data-dependent
    ops in one line (``ProbeFacts.syncs``)."""
    import torch._dynamo

    config = torch._dynamo.config
    graph_breaks = logging.getLogger("torch._dynamo.variables.tensor")
    level = graph_breaks.level
    graph_breaks.setLevel(logging.ERROR)
    try:
        with config.patch(
            recompile_limit=config.recompile_limit * COMPILED_VARIANTS,
            accumulated_recompile_limit=config.accumulated_recompile_limit * COMPILED_VARIANTS,
        ):
            yield
    finally:
        graph_breaks.setLevel(level)


def probe_forward(cfg: ExecConfig, prepared: PreparedModel, precision: str | None = None) -> ProbeFacts:
    """One forward of the baseline module observed; under ``precision``'s autocast when given (stopping at
    the first half-precision FFT)."""
    inputs = config_inputs(replace(cfg, channels_last=False), prepared)[0]

    def forward():
        with autocast_context(precision or "fp32", cfg.device):
            return prepared.module(*inputs)

    with execution_settings(replace(cfg, precision="fp32"), prepared.grad_mode):
        facts, _ = probe_call(forward, stop_at_half_fft=precision is not None)
    return facts


def remedy_infeasible(remedy: Remedy, cfg: ExecConfig, prepared: PreparedModel, sets, probe: ProbeFacts) -> str | None:
    """:func:`~surrobench.analysis.feasibility.infeasible_reason` for baseline ``cfg`` (its ``probe``, input ``sets``)."""
    precision = dict(remedy.settings).get("precision")
    half = precision in HALF_PRECISIONS and cfg.device in remedy.devices
    probed = probe_forward(cfg, prepared, precision) if half else None
    ranks, changes = tuple(t.dim() for t in sets[0]), len({tuple(t.shape for t in s) for s in sets}) > 1
    return infeasible_reason(remedy, cfg, probe, input_ranks=ranks, shapes_change=changes, half_probe=probed)


#: The baseline's sizing round (:func:`round_size`): one warm-up call, then this many timed calls.
SIZING_CALLS = 3


def round_size(baseline: Variant, warmup: int, iters: int) -> tuple[int, int, ConfigResult]:
    """(warm-up, timed calls) per round, sized to :data:`ROUND_TARGET_MS` within [:data:`MIN_ROUND_ITERS`,
    ``iters``] from a sizing round of :data:`SIZING_CALLS` calls (returned third, not kept in ``baseline.rounds``)."""
    time_round(baseline, 1, SIZING_CALLS)
    sizing = baseline.rounds.pop()
    median = float(np.median(sizing.samples_ms))
    iters = int(min(iters, max(MIN_ROUND_ITERS, ROUND_TARGET_MS / max(median, 1e-3))))
    return min(warmup, max(1, iters // 2)), iters, sizing


def top_op(variant: Variant) -> dict | None:
    """``{"name", "share"}`` of the variant's top operator over :data:`_TOP_OP_SCHEDULE`'s profiled steps, run
    after all timing; None when nothing was recorded."""
    try:
        with execution_settings(variant.cfg, variant.grad_mode):
            capture = profile_steps(
                annotated_step(variant.step, variant.cfg.device), _TOP_OP_SCHEDULE, variant.cfg.device
            )
    except Exception:  # a profiler that cannot attach must not lose the measurements
        return None
    top = capture.op_table.top_op() if capture.op_table is not None and not capture.errors else None
    return {"name": top.name, "share": float(top.share)} if top else None


@dataclass
class DeviceBench:
    """The :class:`Bench` of one config on this machine (``fp64_note``: why there is no ``fp64`` reference;
    ``warmup``/``iters`` per round: :func:`round_size`)."""

    cfg: ExecConfig
    prepared: PreparedModel
    request: OptimizeRequest
    baseline: Variant
    reference: object
    fp64: object | None
    fp64_note: str | None
    probe: ProbeFacts
    warmup: int
    iters: int
    budget_end: float
    db: Path | None = None
    on_phase: Callable[[str], None] = lambda text: None
    sizing: ConfigResult | None = None
    since: tuple[float, float, float] | None = None  # host_facts.cpu_times at the start: a window long enough to read

    @property
    def device(self) -> str:
        return self.cfg.device

    @classmethod
    def start(
        cls,
        cfg: ExecConfig,
        prepared: PreparedModel,
        request: OptimizeRequest,
        budget_end: float,
        db: Path | None = None,
    ) -> DeviceBench:
        """The baseline set up (module docstring), the round sized first so that Ctrl-C later leaves it timed.

        Raises:
            Exception: the baseline cannot run, returns no tensor, or returns NaN/Inf on a first call.
            Interrupted: Ctrl-C after the baseline's first call; ``partial`` its sizing round when timed, else None.
            KeyboardInterrupt: Ctrl-C before then.
        """
        torch._dynamo.reset()  # the config's compiled variants alone in Dynamo's caches, none reset while held
        baseline = in_grad_mode(prepared, lambda: open_variant(cfg, prepared, own_module=False))
        check_output(baseline.first_output)  # None, a string, a generator: nothing to time or compare
        if baseline.nonfinite:  # measured as run does by the caller: status nonfinite, no recipe
            raise ValueError(nonfinite_message(baseline.nonfinite))
        sizing = None
        since = cpu_times()
        try:
            warmup, iters, sizing = round_size(baseline, cfg.warmup, cfg.iters)
            reference, fp64, fp64_note = reference_outputs(cfg, prepared)
            probe = probe_forward(cfg, prepared)
        except KeyboardInterrupt:
            partial = sizing or (baseline.rounds[-1] if baseline.rounds else None)
            raise Interrupted("interrupted while the baseline was set up", partial) from None
        fields = (cfg, prepared, request, baseline, reference, fp64, fp64_note, probe, warmup, iters, budget_end)
        return cls(*fields, db, sizing=sizing, since=since)

    def infeasible(self, remedy: Remedy) -> str | None:
        return remedy_infeasible(remedy, self.cfg, self.prepared, self.baseline.input_sets, self.probe)

    def open(self, recipe: Recipe) -> Variant:
        return open_variant(recipe.apply(self.cfg), self.prepared)

    def accuracy(self, handle: Variant) -> AccuracyVerdict:
        return check_accuracy(handle.first_output, self.reference, self.fp64, tolerance=self.request.tolerance)

    def window(self, handles: Sequence[Variant], stop: Callable[[], bool]) -> None:
        first = len(self.baseline.rounds)
        starts = [len(v.rounds) for v in handles]
        try:
            interleave([self.baseline, *handles], self.request.rounds, self.warmup, self.iters, stop)
        except BaseException as exc:
            if not isinstance(exc, KeyboardInterrupt):  # Ctrl-C: the baseline's rounds are measurements to keep
                del self.baseline.rounds[first:]
            for v, start in zip(handles, starts):
                del v.rounds[start:]
            raise

    def free(self) -> None:
        free_device(self.cfg.device)

    def crowded(self) -> bool:
        """On CUDA, less than :data:`KEEP_FREE_FRACTION` of the device memory free."""
        if self.cfg.device != "cuda":
            return False
        free, total = torch.cuda.mem_get_info()
        return free < KEEP_FREE_FRACTION * total

    def not_faster_note(self, recipe: Recipe) -> str | None:
        if compiles(recipe.remedies[-1].name) and self.probe.complex_ops:
            calls = self.probe.complex_ops
            return f"Inductor generates no code for complex operators ({calls} call(s) a step here): they stay eager"
        return None

    def free_cores(self) -> int | None:
        others = other_cpus((self.since, cpu_times())) if self.cfg.device == "cpu" else None
        return None if others is None else free_cores_of(usable_cpus(), others)

    def round_s(self) -> float:
        return (self.warmup + self.iters) * self._per_call_ms(self.baseline) / 1e3

    def _per_call_ms(self, variant: Variant) -> float:
        return float(np.mean(np.concatenate(variant.samples_ms()))) if variant.rounds else ROUND_TARGET_MS / self.iters

    def process_reserve_s(self, setup_ms: float, handle: Variant | None = None) -> float:
        """:func:`surrobench.tune.fresh.pair_estimate_s` of one pair (the recipe's calls timed as ``handle``'s, else
        the baseline's), at most :data:`PAIR_SHARE` of the budget (docs/design.md, "Fresh processes: their share of
        the budget")."""
        request = self.request
        if not request.process_pairs or not request.rebuildable:
            return 0.0
        call_ms = (self._per_call_ms(self.baseline), self._per_call_ms(handle or self.baseline))
        calls = self.warmup + request.rounds * self.iters
        pair = pair_estimate_s((self.baseline.setup_ms, setup_ms), call_ms, calls, self.cfg.device)
        return min(pair, PAIR_SHARE * request.budget_s)

    def process_windows(self, recipe: Recipe, handle: Variant, setup_ms: float) -> ProcessWindows | None:
        """:func:`surrobench.tune.fresh.process_windows` of ``process_pairs`` pairs, each started when it would end by
        :attr:`budget_end` (the first as :meth:`process_reserve_s` kept it); None when none are asked or possible."""
        request = self.request
        if not request.process_pairs or not request.rebuildable:
            return None
        budget = PairBudget(self.budget_end, self.process_reserve_s(setup_ms, handle))
        if budget.fits():  # none will start otherwise, and the config's note says they were skipped
            self.on_phase(
                f"timing {recipe.name} and the baseline in up to {request.process_pairs} pair(s) of fresh processes "
                "(within the budget)"
            )
        return process_windows(
            self.cfg,
            recipe.apply(self.cfg),
            pairs=request.process_pairs,
            rounds=request.rounds,
            warmup=self.warmup,
            iters=self.iters,
            db=self.db,
            budget=budget,
        )
