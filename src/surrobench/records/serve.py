"""The serving records (``surrobench serve``) and their JSON form, ``surrobench/serve-v2`` (serve-v1 still reads):
per batching policy one :class:`LoadPoint` per offered load (a rate, a closed-loop concurrency: what it achieved)
and, for a peak search at a P99 target, the :class:`Capacity` it found. Latencies are per request, completion -
arrival, ms; rates requests per second (``_rps``); times s; shares fractions.

**Capacity optimization** (:class:`CapacityOptimization`, ``surrobench/capacity-v1``, ``optimize --objective
capacity``): per candidate recipe its accuracy, the capacity the simulation predicts per batching policy, and the
recipe chosen, verified under load beside the baseline (eager) as two stored serve runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from surrobench.records import schemas
from surrobench.records.config import InputSpec, inputs_text

#: The arrival processes: open loop (seeded Poisson and constant rate, chosen by name; timestamps replayed from a
#: file) and closed loop (N requests outstanding, perf_analyzer's concurrency mode).
CHOSEN_ARRIVALS = ("poisson", "constant")
ARRIVALS = (*CHOSEN_ARRIVALS, "replay", "closed")
#: The percentiles reported per load point, as fractions.
PERCENTILES = (0.50, 0.95, 0.99)


def padded_sizes(max_batch: int) -> tuple[int, ...]:
    """The batch sizes a batch is padded to, one compiled or CUDA graph each: the powers of two below
    ``max_batch`` and ``max_batch`` itself (``8 -> (1, 2, 4, 8)``, ``6 -> (1, 2, 4, 6)``).

    Raises:
        ValueError: ``max_batch`` < 1.
    """
    if max_batch < 1:
        raise ValueError(f"max_batch {max_batch}: must be >= 1")
    sizes = [1 << i for i in range(max_batch.bit_length()) if 1 << i < max_batch]
    return (*sizes, max_batch)


def padded_size(k: int, sizes: tuple[int, ...]) -> int:
    """The smallest of ``sizes`` (ascending) that holds ``k`` requests."""
    return next(s for s in sizes if s >= k)


def rate_text(rate_rps: float) -> str:
    """A rate in prose, requests/s: whole with thousands separators from 100 up (``50,000 rps``), three
    significant digits below (``2.9 rps``, ``0.25 rps``), never an exponent."""
    return f"{rate_rps:,.0f} rps" if rate_rps >= 100 else f"{rate_rps:.3g} rps"


@dataclass(frozen=True)
class ServePolicy(schemas.Plain):
    """A dynamic batcher's policy: dispatch when ``max_batch`` requests wait, or when the oldest waiting one
    has waited ``max_wait_ms`` (Triton's dynamic batcher, ``max_queue_delay_microseconds``)."""

    max_batch: int
    max_wait_ms: float

    def label(self) -> str:
        return f"batch<={self.max_batch} wait<={self.max_wait_ms:g}ms"


@dataclass(frozen=True)
class Percentile(schemas.Plain):
    """One latency percentile of a load point: the quantile ``q`` (0.99), the sample quantile ``value_ms`` (linear
    interpolation), its distribution-free 95% interval from order statistics (a side None when too few requests
    bound it: :func:`surrobench.analysis.serve_load.quantile_ci`), the measured requests slower than it, and
    ``lower_bound`` when it falls among dropped requests (``value_ms`` is then the slowest completed latency)."""

    q: float
    value_ms: float
    ci95_ms: tuple[float | None, float | None]
    tail_requests: int
    lower_bound: bool = False


@dataclass(frozen=True)
class LoadPoint(schemas.Plain):
    """What one offered load did.

    Attributes:
        arrival: one of :data:`ARRIVALS`; ``target_rps`` the rate asked for (open loop) or ``concurrency`` the
            requests outstanding (closed loop), else None.
        offered_rps: measured requests / the measured arrival window (the schedule after the warm-up; their
            arrival span where the schedule's length is not known: a replay, a closed loop); achieved_rps:
            completed requests / that window, or from its start to the last completion when that comes later (from
            the first measured arrival without a schedule's length): never above ``offered_rps`` there.
        requests: requests measured (after warm-up); warmup_requests: arrived during warm-up, not measured;
            dropped: measured requests not completed when the run's drain time ran out; late: measured requests
            slower than the P99 target, dropped ones included (None without a target).
        percentiles: :data:`PERCENTILES`, in order; max_ms, mean_ms: of the completed latencies (None when none did).
        queue_share: the mean wait before dispatch (queueing and batch formation) over the mean latency;
            compute_share: the mean batch service time (gather, forward, synchronized finish) over it.
        mean_batch, mean_padded_batch: requests per batch, and the padded size run.
        device_busy: the batches' compute time (CUDA events on CUDA, else the synchronized host time) over the
            measured span. These five are None for an HTTP endpoint (its batches and queue are not seen).
        generator_overhead_share: the batcher loop's own time (not serving, not waiting) over the run;
            wake_late_p99_ms: P99 of how late an idle batcher woke for a due request or deadline.
        passed: P99 within the target, nothing dropped (MLPerf's Server rule) and ``backlog_growth`` at most
            :data:`~surrobench.analysis.serve_load.MAX_BACKLOG_GROWTH` (the load is sustained); False whenever a
            request was dropped (a warm-up one too), else None without a target.
        completed: measured requests that completed (None in serve-v1); the percentiles count the others as
            slower than any (:attr:`Percentile.lower_bound`).
        slo_attainment: the share of measured requests completed within the P99 target; None without a target.
        errors: for an endpoint, failed requests per error name (``ConnectError``, ``HTTP 503``).
        offered_interval_rps: ``(lo, hi)``, the offered rates a Poisson process at ``target_rps`` gives 99.9% of the
            time over the measured arrival window (:func:`surrobench.analysis.serve_load.poisson_rate_interval`);
            None for a closed loop, a replay, or a document written before it.
        backlog_growth: the least-squares slope of the completed requests' latency on their arrival time (s per s):
            0 for a sustained load, 1 - service rate / offered rate for a queue that grows; None under 2 completions
            or in a document written before it.
        goodput_rps (derived, JSON only): measured requests completed within the target per second, over the span
            of ``achieved_rps`` (so never above it); None without a target. What this load achieved, not a capacity.
    """

    DERIVED = ("goodput_rps",)

    arrival: str
    target_rps: float | None
    concurrency: int | None
    offered_rps: float
    achieved_rps: float
    requests: int
    warmup_requests: int
    dropped: int
    late: int | None
    percentiles: tuple[Percentile, ...]
    max_ms: float | None
    mean_ms: float | None
    queue_share: float | None
    compute_share: float | None
    mean_batch: float | None
    mean_padded_batch: float | None
    device_busy: float | None
    generator_overhead_share: float
    wake_late_p99_ms: float
    passed: bool | None = None
    completed: int | None = None
    slo_attainment: float | None = None
    errors: dict[str, int] = field(default_factory=dict)
    offered_interval_rps: tuple[float, float] | None = None
    backlog_growth: float | None = None

    def percentile(self, q: float) -> Percentile:
        """The percentile ``q`` (one of :data:`PERCENTILES`).

        Raises:
            KeyError: ``q`` was not computed.
        """
        for p in self.percentiles:
            if math.isclose(p.q, q):
                return p
        raise KeyError(q)

    @property
    def p99_ms(self) -> float:
        return self.percentile(0.99).value_ms

    def p99_holds(self, target_ms: float) -> bool:
        """Whether the P99's 95% interval (a side None: unbounded) holds ``target_ms``: pass or fail is noise."""
        lo, hi = self.percentile(0.99).ci95_ms
        return (lo or 0.0) <= target_ms <= (hi if hi is not None else math.inf)

    def load(self) -> str:
        """The load, in prose: its asked rate (``20 rps asked``: what it offered is ``offered_rps``), ``concurrency 4``,
        or ``the replay``."""
        name = f"concurrency {self.concurrency}" if self.concurrency else "the replay"
        return f"{rate_text(self.target_rps)} asked" if self.target_rps else name

    @property
    def goodput_rps(self) -> float | None:
        done = max(1, self.requests - self.dropped if self.completed is None else self.completed)  # 0: none within
        return None if self.slo_attainment is None else self.achieved_rps * self.slo_attainment * self.requests / done


@dataclass(frozen=True)
class SearchStep(schemas.Plain):
    """One rate tried by the peak search: ``phase`` ``bound`` (doubling or halving to bracket the peak) or
    ``bisect`` (halving the bracket); ``p99_ms`` None when no request of the rate completed (it fails)."""

    rate_rps: float
    p99_ms: float | None
    passed: bool
    phase: str


@dataclass(frozen=True)
class Capacity(schemas.Plain):
    """The peak search at ``target_p99_ms`` in the rates it asked (the schedule's parameter it moves): ``capacity_rps``
    the highest passing rate tried (0: none passed), ``failing_rps`` the lowest failing above it (None: none failed),
    the rates tried in ``steps``; the capacity is what those loads offered (:meth:`PolicyResult.capacity_offered_rps`).

    Attributes:
        predicted_rps: the capacity the simulation of the batcher over the unloaded service times predicted
            (:mod:`surrobench.analysis.capacity`); None where nothing was predicted (an endpoint, serve-v1).
        infeasible: why no rate meets the target: answered without a load (the bracket ``[0, 0)``), or after one
            failing load where the simulation passed no rate (``[0, that rate)``), or once the P99 did not fall with
            the rate (``[0, the lowest rate tried)``); None when a rate passed or the search was cut.
        search_s: wall time of the search under load, s (None in serve-v1).
    """

    target_p99_ms: float
    capacity_rps: float
    failing_rps: float | None
    steps: tuple[SearchStep, ...]
    predicted_rps: float | None = None
    infeasible: str | None = None
    search_s: float | None = None


@dataclass(frozen=True)
class UnloadedLatency(schemas.Plain):
    """Service times of one padded batch size measured before any load, ms (wall time of the synchronized call),
    in order: ``isolated`` batches started after an idle gap of ``gap_ms`` (as a sparse rate finds the device)
    and ``back_to_back`` batches, each started as the previous one ended (as under load: short runs, then a
    saturated load's); ``loop_ms``, the batcher loop's own time per batch there, and ``saturated_ms`` its wall time per
    full batch (:func:`surrobench.execution.batcher.saturated_cycles`; None: not measured, nothing charged);
    ``idle_ms``, batches started after the longest idle probed (``MAX_GAP_S`` there), as the sparsest rates find
    the device (empty: not measured, or that gap is ``gap_ms``)."""

    batch: int
    gap_ms: float
    isolated_ms: tuple[float, ...]
    back_to_back_ms: tuple[float, ...]
    loop_ms: float | None = None
    idle_ms: tuple[float, ...] = ()
    saturated_ms: float | None = None

    @property
    def loop_charge_ms(self) -> float:
        """The loop's own time charged per batch, ms: ``loop_ms``, 0 where it was not measured (None: nothing charged)."""
        return self.loop_ms or 0.0

    @property
    def loaded_excess_ms(self) -> float:
        """``saturated_ms`` less the back-to-back mean, at least 0 (draws then add up to it); else ``loop_ms`` or 0."""
        mean = sum(self.back_to_back_ms) / len(self.back_to_back_ms)
        return self.loop_charge_ms if self.saturated_ms is None else max(0.0, self.saturated_ms - mean)

    @staticmethod
    def _q(samples: tuple[float, ...], q: float) -> float:
        ordered = sorted(samples)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    @property
    def isolated_p50_ms(self) -> float:
        return self._q(self.isolated_ms, 0.5)

    @property
    def isolated_p99_ms(self) -> float:
        """The P99 of the isolated samples (the nearest-rank sample: with fewer than 100 samples, the max)."""
        return self._q(self.isolated_ms, 0.99)

    @property
    def idle_p99_ms(self) -> float | None:
        """The P99 of the ``idle_ms`` samples (with 10, their max); None when there are none."""
        return self._q(self.idle_ms, 0.99) if self.idle_ms else None

    @property
    def back_to_back_p50_ms(self) -> float:
        return self._q(self.back_to_back_ms, 0.5)

    @property
    def back_to_back_p99_ms(self) -> float:
        return self._q(self.back_to_back_ms, 0.99)


@dataclass(frozen=True)
class PolicyResult(schemas.Plain):
    """The load points (and capacity, when searched) of one batching policy; ``policy`` None for an HTTP
    endpoint, which batches (or not) by its own policy. ``nonfinite``: a padded size's output held NaN/Inf (``run``'s
    status; :func:`~surrobench.execution.sanity.check_calls`'s record, its ``batch``): on its first call, no points."""

    DERIVED = ("capacity_offered_rps", "capacity_unresolved")

    policy: ServePolicy | None
    points: tuple[LoadPoint, ...]
    capacity: Capacity | None = None
    nonfinite: dict | None = None

    def offered(self, rate_rps: float | None) -> float | None:
        """The rate (requests/s) the load asked at ``rate_rps`` offered; ``rate_rps`` itself where none was kept."""
        return next((p.offered_rps for p in self.points if rate_rps and p.target_rps == rate_rps), rate_rps)

    def capacity_offered_rps(self) -> tuple[float, float | None] | None:
        """The capacity as measured, ``(capacity, first failing)``, requests/s: the rates the search's highest passing
        load and its lowest failing one above it offered (docs/serve.md); None without a search."""
        c = self.capacity
        return None if c is None else (self.offered(c.capacity_rps), self.offered(c.failing_rps))

    def prediction_error(self) -> float | None:
        """(predicted - measured) / measured, the measured capacity the middle of :meth:`capacity_offered_rps` (the
        capacity when no rate failed), as the headline's one basis; None without a prediction or a passing rate."""
        lo, hi = self.capacity_offered_rps() or (0.0, None)
        middle = (lo + hi) / 2 if hi else lo
        return (
            None if not lo or self.capacity.predicted_rps is None else (self.capacity.predicted_rps - middle) / middle
        )

    def capacity_unresolved(self, cut_short_p99_ms: float | None = None) -> str | None:
        """Why the capacity (given ``cut_short_p99_ms``, a search cut short's :meth:`bracket` at that target) lies in
        its loads' noise: the passing load offered no less than the failing one (two Poisson samples that overlap), or
        an end's P99 95% interval holds the target (:meth:`LoadPoint.p99_holds`); None: resolved, or no passing load."""
        c = self.capacity
        ends = self.capacity_offered_rps() if c else self.bracket() if cut_short_p99_ms else None
        if not ends or not ends[0]:
            return None
        lo, hi = ends
        why = ["the passing load offered no less than the failing one"] if hi is not None and hi <= lo else []
        held = [p for p in self.points if p.offered_rps in ends and p.p99_holds(cut_short_p99_ms or c.target_p99_ms)]
        why += [f"the P99's 95% interval at {rate_text(p.offered_rps)} offered holds the target" for p in held]
        return "; ".join(why) or None

    def bracket(self) -> tuple[float, float | None] | None:
        """A search cut short: its bracket, requests/s, by the points judged against the P99 target: the rates offered
        by the highest asked rate that passed (0: none) and the lowest failing above it; None: none judged."""
        judged = [(p.target_rps, p.passed) for p in self.points if p.passed is not None and p.target_rps]
        lower = max((rate for rate, ok in judged if ok), default=0.0)
        upper = min((rate for rate, ok in judged if not ok and rate > lower), default=None)
        return (self.offered(lower), self.offered(upper)) if judged else None

    def noise_bracket(self, target_p99_ms: float) -> tuple[float, float | None]:
        """:meth:`capacity_offered_rps` widened by the loads' noise: each end moves outward over the loads of its
        verdict (passing below, failing above) to the first whose P99 interval does not hold the target, at its rate
        (:meth:`LoadPoint.p99_holds`); where none does, to the farthest of them, or to 0 below (open above) when one
        had no bound on the side that judges it (too few requests: a pass without an upper bound supports nothing);
        ends in order where the passing load offered more than the failing one (:meth:`capacity_unresolved`)."""

        def outward(points: list[LoadPoint], side: int, end: float | None, unknown: float | None) -> float | None:
            if not points or points[0].target_rps != end:  # the end's own load not measured: as searched
                return self.offered(end)
            firm = next((p.offered_rps for p in points if not p.p99_holds(target_p99_ms)), None)
            bare = any(p.percentile(0.99).ci95_ms[side] is None for p in points)
            return firm if firm is not None else unknown if bare else points[-1].offered_rps

        lo, hi = self.capacity.capacity_rps, self.capacity.failing_rps
        rated = sorted((p for p in self.points if p.target_rps), key=lambda p: p.target_rps)
        lo = outward([p for p in reversed(rated) if p.passed and p.target_rps <= lo], 1, lo, 0.0)
        hi = hi if hi is None else outward([p for p in rated if p.passed is False and p.target_rps >= hi], 0, hi, None)
        return (lo, hi) if hi is None or hi >= lo else (hi, lo)  # the passing load offered more: within the noise


@dataclass(frozen=True)
class ServeRecord(schemas.Plain):
    """A serve run: ``workload`` (model, shape_label, input_shape of one request, precision, mode, device and the
    execution settings), ``url`` (None: in process), the arrival process and one :class:`PolicyResult` per batching
    policy tried; ``find_max`` whether a peak search measured a capacity (else each load point is one offered load;
    None: a document written before it). Its JSON object, ``surrobench/serve-v2``, is its fields and ``best_policy``."""

    SCHEMA = schemas.SERVE
    DERIVED = ("best_policy",)

    run_id: str
    created: str
    tag: str | None
    env: dict
    workload: dict
    url: str | None
    arrival: str
    duration_s: float
    warmup_s: float
    seed: int
    target_p99_ms: float | None
    policies: tuple[PolicyResult, ...]
    notes: tuple[str, ...] = field(default=())
    unloaded: tuple[UnloadedLatency, ...] = field(default=())
    find_max: bool | None = None

    def label(self) -> str:
        """What was served: the endpoint's URL, or model, shape (every input of one request,
        :func:`~surrobench.records.config.inputs_text`; the asked shape in a record without ``request_inputs``),
        precision, mode and device."""
        w = self.workload
        shape = inputs_text(tuple(InputSpec.from_json(s) for s in w.get("request_inputs") or ())) or w["shape_label"]
        return self.url or f"{w['model']} {shape} {w['precision']} {w['mode']} on {w['device']}"

    def best(self) -> PolicyResult | None:
        """The policy with the highest capacity (:meth:`PolicyResult.capacity_offered_rps`; None without a search)."""
        searched = [p for p in self.policies if p.capacity is not None]
        return max(searched, key=lambda p: p.capacity_offered_rps()[0]) if searched else None

    def infeasible(self) -> str | None:
        """Why no rate meets the target, when every policy was answered without a search (else None)."""
        reasons = [p.capacity.infeasible for p in self.policies if p.capacity is not None]
        return reasons[0] if reasons and all(reasons) else None

    def cut_short_p99_ms(self) -> float | None:
        """The P99 target a search cut short (``env.interrupted``, not fixed rates) judges its bracket at, else None."""
        return self.target_p99_ms if self.env.get("interrupted") and self.find_max is not False else None

    def to_json(self) -> dict:
        """As stored: each policy's ``capacity_unresolved`` judged as its headline is, at :meth:`cut_short_p99_ms`."""
        d = super().to_json()
        for policy, result in zip(d["policies"], self.policies):
            policy["capacity_unresolved"] = result.capacity_unresolved(self.cut_short_p99_ms())
        return d

    @property
    def best_policy(self) -> ServePolicy | None:
        return best.policy if (best := self.best()) else None

    @property
    def n_points(self) -> int:
        """The load points measured, over every policy."""
        return sum(len(p.points) for p in self.policies)


#: ``{schema id: check}`` of serve documents: the id alone; their keys are checked as they are read.
DOCUMENTS = {schemas.SERVE: schemas.anything, schemas.SERVE_V1: schemas.anything}


def serve_from_json(d: object) -> ServeRecord:
    """Inverse of :meth:`ServeRecord.to_json`; a serve-v1 document reads with no unloaded latency, no
    prediction, and its load points without ``completed`` and ``slo_attainment``.

    Raises:
        DocumentError: not a serve-v2 or serve-v1 document, or a key missing or of the wrong kind.
    """
    schemas.check(d, DOCUMENTS)
    try:
        return ServeRecord.from_json(d)
    except (KeyError, TypeError, ValueError) as exc:
        raise schemas.DocumentError(f"{schemas.SERVE}: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class CapacityCandidate(schemas.Plain):
    """One recipe tried for capacity: ``"baseline"`` or the remedies joined by ``+`` (``"cudagraph+tf32"``), and
    the execution ``settings`` it runs with (precision, mode and the rest).

    Attributes:
        accurate: the accuracy guard's verdict against the fp32 eager (and fp64) output; None when it failed to run.
        accuracy: the guard's reason, or the error that stopped the candidate.
        predicted_rps: per policy label (``batch<=8 wait<=1ms``), the predicted capacity at the target.
        best_policy: the policy with the highest prediction (None when it failed to run).
        service_faster: whether the best policy's full batch is faster than the baseline's at that size by the
            paired rule (back-to-back service times); None for the baseline.
    """

    recipe: str
    settings: dict
    accurate: bool | None
    accuracy: str
    predicted_rps: dict[str, float] = field(default_factory=dict)
    best_policy: ServePolicy | None = None
    service_faster: bool | None = None

    @property
    def best_predicted_rps(self) -> float:
        return max(self.predicted_rps.values(), default=0.0)


@dataclass(frozen=True)
class CapacityOptimization(schemas.Plain):
    """What ``optimize --objective capacity`` found for one config; its JSON object, ``surrobench/capacity-v1``.

    Attributes:
        workload: the config served (as a serve record's ``workload``); target_p99_ms, tolerance (rel L2).
        candidates: every recipe tried, in order (the baseline first).
        top: the candidate ranked first by prediction (accurate, and faster by the paired rule where it is
            not the baseline); verified under load.
        baseline_run_id, top_run_id: the stored serve runs that measured each one's capacity under load (at its
            best predicted policy; ``top_run_id`` None for the baseline), ``baseline_rps``, ``top_rps`` the brackets, rates offered (asked before 2026-12-07).
        verdict: the top against the baseline by :func:`surrobench.results.serve_store.judge_capacities`
            (``higher``, ``lower``, ``same``, ``inconclusive``); None when the top is the baseline.
        recipe: the recipe recommended: the top when its verified capacity is ``higher``, else ``baseline``;
            None in the partial record of an interrupted search, or when the baseline failed (nothing was decided).
        search_s: wall time of the whole search; ``infeasible`` why no candidate meets the target, else None.
        optimize_id, created: the id and UTC creation time it is stored under as an optimization (None: older).
    """

    SCHEMA = schemas.CAPACITY

    workload: dict
    target_p99_ms: float
    tolerance: float
    candidates: tuple[CapacityCandidate, ...]
    top: str
    recipe: str | None
    search_s: float
    baseline_run_id: str | None = None
    top_run_id: str | None = None
    baseline_rps: tuple[float, float | None] | None = None
    top_rps: tuple[float, float | None] | None = None
    verdict: str | None = None
    infeasible: str | None = None
    notes: tuple[str, ...] = ()
    optimize_id: str | None = None
    created: str | None = None

    @classmethod
    def from_json(cls, d: dict) -> CapacityOptimization:
        """Inverse of :meth:`to_json`.

        Raises:
            DocumentError: not a ``surrobench/capacity-v1`` document; KeyError, TypeError: a key missing or of the
                wrong kind.
        """
        schemas.check(d, {schemas.CAPACITY: schemas.anything})
        return super().from_json(d)
