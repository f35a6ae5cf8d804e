"""``serve``: the request rate a surrogate sustains at a latency target, under open-loop arrivals and a
dynamic batcher (``surrobench serve``).

Per batching policy (max batch x max wait) and per offered load (a rate, or a closed-loop concurrency) one
:class:`~surrobench.records.serve.LoadPoint`; with ``find_max`` the peak search
(:func:`~surrobench.analysis.capacity.find_capacity`), started at the capacity predicted from the unloaded latency
measured before any load, or answered at once when the target is infeasible (:mod:`surrobench.analysis.capacity`).
The policy with the highest capacity is the record's best.

The search and the load loop take the service (``service(k) -> compute_s``) and a clock, a virtual one in tests;
:func:`serve` builds the model's service from ``run``'s own config and stores the record with its run.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from surrobench.analysis.capacity import MAX_SEARCH_STEPS, PREDICTED_STEP, SEARCH_TOLERANCE, find_capacity
from surrobench.analysis.capacity import infeasible_reason, no_rate_found, predict_capacity, slowdown_under_load
from surrobench.analysis.capacity import FLAT_TAIL_STEP, NEAR_TARGET, sparse_rate
from surrobench.analysis.serve_load import P99_BOUNDING_REQUESTS, load_point, load_warnings
from surrobench.api.benchmark import open_store, sweep_plan
from surrobench.errors import Interrupted, Stopped, StoreWriteError, Unsaved, UsageError
from surrobench.execution.arrivals import MAX_ARRIVALS_PER_LOAD, check_load, constant_arrivals, poisson_arrivals
from surrobench.execution.arrivals import replay_arrivals
from surrobench.execution.batcher import UNLOADED_BUDGET_S, Service, WallClock, serve_closed_loop, serve_open_loop
from surrobench.execution.batcher import MAX_GAP_S, saturated_cycles, unloaded_latency
from surrobench.execution.env import NO_GRAD, busy_host_warning, listed
from surrobench.execution.host_facts import cpu_times, host_load, other_cpus, usable_cpus
from surrobench.execution.http_load import check_reachable, check_url, http_open_loop, http_unloaded
from surrobench.execution.runner import prepare_model
from surrobench.execution.serve_step import NonfiniteOutputError, model_service
from surrobench.execution.memory import available_bytes
from surrobench.execution.sweep import check_input_size, mark_unsaved, new_run_id, run_environment, unsaved_env
from surrobench.records.config import EXEC_SETTINGS, inputs_json
from surrobench.records.serve import ARRIVALS, Capacity, LoadPoint, PolicyResult, ServePolicy, ServeRecord
from surrobench.records.serve import CHOSEN_ARRIVALS, UnloadedLatency, padded_sizes, rate_text
from surrobench.results.serve_store import begin_serve, save_serve
from surrobench.records.run import GRAD_MODE_KEY, created_now

#: Where an endpoint's search starts: this fraction of its throughput bound, 1 / its back-to-back median.
START_FRACTION = 0.5
__all__ = ["MAX_SEARCH_STEPS", "SEARCH_TOLERANCE", "find_capacity", "serve", "serve_policy", "serve_request"]


@dataclass(frozen=True)
class ServeRequest:
    """A checked serve request: the loads (``rates`` in requests/s, or ``concurrencies`` for the closed loop),
    the batching ``policies``, the times (s) and the P99 target (ms)."""

    rates: tuple[float, ...]
    concurrencies: tuple[int, ...]
    arrival: str
    arrivals_file: Path | None
    policies: tuple[ServePolicy, ...]
    duration_s: float
    warmup_s: float
    drain_s: float
    target_p99_ms: float | None
    find_max: bool
    seed: int
    url: str | None
    min_requests: int = P99_BOUNDING_REQUESTS

    @property
    def unloaded_budget_s(self) -> float:
        """The unloaded latency's time, s: one load's, at most :data:`UNLOADED_BUDGET_S`."""
        return min(UNLOADED_BUDGET_S, self.duration_s)


def _numbers(value: float | str | Iterable, parameter: str) -> tuple[float, ...]:
    items = value.split(",") if isinstance(value, str) else [value] if isinstance(value, (int, float)) else value
    try:
        out = tuple(float(v) for v in items if str(v).strip())
    except (TypeError, ValueError):
        out = ()  # not numbers: refused as none
    if not out:
        raise UsageError.bad(parameter, f"{value!r}: give numbers, comma-separated")
    return out


def _floats(value: float | str | Iterable, parameter: str, *, positive: bool = False) -> tuple[float, ...]:
    """Finite numbers >= 0 (``positive``: > 0) from one value, a sequence or comma-separated text."""
    out = _numbers(value, parameter)
    if any(not 0 <= v < math.inf or (positive and v == 0) for v in out):
        raise UsageError.bad(parameter, f"{value!r}: give finite numbers {'> 0' if positive else '>= 0'}")
    return out


def _ints(value, parameter: str) -> tuple[int, ...]:
    out = _numbers(value, parameter)
    if any(not (1 <= v < float("inf")) or v != int(v) for v in out):
        raise UsageError.bad(parameter, f"{value!r}: give whole numbers >= 1")
    return tuple(int(v) for v in out)


def serve_request(
    *,
    rates=None,
    find_max: bool = False,
    p99_ms: float | None = None,
    max_batch=8,
    max_wait_ms=2.0,
    duration_s: float = 10.0,
    warmup_s: float | None = None,
    drain_s: float = 5.0,
    arrival: str = "poisson",
    arrivals_file: str | Path | None = None,
    concurrency=None,
    seed: int = 0,
    url: str | None = None,
    min_requests: int = P99_BOUNDING_REQUESTS,
) -> ServeRequest:
    """Validate a serve request. ``rates`` (requests/s), ``max_batch``, ``max_wait_ms`` and ``concurrency``: one
    value, a sequence or comma-separated text; each (max_batch, max_wait_ms) pair is a policy. Times in s:
    ``duration_s`` of arrivals per load, its leading ``warmup_s`` left out of the statistics (None:
    :func:`default_warmup_s`), ``drain_s``. ``min_requests``: a load goes on past ``duration_s`` (at most
    :data:`MAX_STRETCH` times) until that many requests arrived after the warm-up (0: exactly ``duration_s``).

    Raises:
        UsageError: no load, or two (a rate, a concurrency, a file); an unreadable arrivals file, or one spanning
            over :data:`MAX_STRETCH` x ``duration_s`` (ms read as s); a search without ``p99_ms``; an unknown
            arrival process; non-positive times or rates; a warm-up not shorter than the duration; a load of more
            than :data:`~surrobench.execution.arrivals.MAX_ARRIVALS_PER_LOAD` arrivals, or a ``min_requests`` none
            could hold; all before anything is allocated or run.
    """
    if arrival not in ARRIVALS:
        choices = " or ".join(CHOSEN_ARRIVALS)
        detail = f"{arrival!r}: choose {choices} ({{arrivals_file}} replays a file, {{concurrency}} closes the loop)"
        raise UsageError.bad("arrival", detail, others=("arrivals_file", "concurrency"))
    given = [n for n, v in (("rates", rates), ("concurrency", concurrency), ("arrivals_file", arrivals_file)) if v]
    if len(given) > 1:
        detail = f"and {{{given[0]}}} both given: offer one load (rates, a concurrency or an arrivals file)"
        raise UsageError.bad(given[1], detail, others=(given[0],))
    arrival = "closed" if concurrency is not None else "replay" if arrivals_file is not None else arrival
    if find_max and p99_ms is None:
        detail = "needs {p99_ms}, the latency target the capacity is measured at"
        raise UsageError.bad("find_max", detail, others=("p99_ms",))
    if find_max and arrival not in CHOSEN_ARRIVALS:
        raise UsageError.bad("find_max", f"searches a rate: it needs {' or '.join(CHOSEN_ARRIVALS)} arrivals")
    for name, value in (("p99_ms", p99_ms), ("duration_s", duration_s), ("drain_s", drain_s)):
        if value is not None and not (0 < value < float("inf")):  # p99_ms None: no target
            raise UsageError.bad(name, f"{value}: must be a finite number > 0")
    if arrivals_file is not None and (span := replay_arrivals(arrivals_file)[-1]) > MAX_STRETCH * duration_s:
        detail = f"{str(arrivals_file)!r} spans {span:.6g} s, over {MAX_STRETCH:g}x {{duration_s}} {duration_s:g} "
        detail += "(the longest load): timestamps are in seconds"
        raise UsageError.bad("arrivals_file", detail, others=("duration_s",))
    if warmup_s is None:  # a replay's from its span: a burst shorter than a second keeps 3/4 of it measured
        warmup_s = default_warmup_s(span if arrivals_file is not None else duration_s)
    if not 0 <= warmup_s < duration_s:
        detail = f"{warmup_s}: must be >= 0 and shorter than {{duration_s}} {duration_s}"
        raise UsageError.bad("warmup_s", detail, others=("duration_s",))
    if isinstance(min_requests, bool) or not isinstance(min_requests, int) or min_requests < 0:
        raise UsageError.bad("min_requests", f"{min_requests!r}: give a whole number >= 0")
    if min_requests * _COUNT_MARGIN > MAX_ARRIVALS_PER_LOAD:
        most = int(MAX_ARRIVALS_PER_LOAD / _COUNT_MARGIN)
        detail = f"{min_requests}: at most {most:,} (one load holds at most {MAX_ARRIVALS_PER_LOAD:,} arrivals)"
        raise UsageError.bad("min_requests", detail)
    rate_list = _floats(rates, "rates", positive=True) if rates is not None else ()
    loads = rate_list or find_max or arrival in ("replay", "closed")
    if not loads:
        others = ("rates", "find_max", "p99_ms", "concurrency", "arrivals_file")
        detail = "(requests/s), {find_max} with {p99_ms}, {concurrency} or {arrivals_file}: give one load to offer"
        raise UsageError.bad("rates", detail, others=others)
    if url is not None:
        check_url(url)
        if arrival == "closed":
            raise UsageError.bad("url", "sends an open-loop schedule: drop {concurrency}", others=("concurrency",))
    policies = tuple(
        ServePolicy(b, w) for b in _ints(max_batch, "max_batch") for w in _floats(max_wait_ms, "max_wait_ms")
    )
    request = ServeRequest(
        rates=rate_list,
        concurrencies=_ints(concurrency, "concurrency") if concurrency is not None else (),
        arrival=arrival,
        arrivals_file=Path(arrivals_file) if arrivals_file is not None else None,
        policies=policies if url is None else (ServePolicy(1, 0.0),),
        duration_s=float(duration_s),
        warmup_s=float(warmup_s),
        drain_s=float(drain_s),
        target_p99_ms=p99_ms,
        find_max=find_max,
        seed=seed,
        url=url,
        min_requests=min_requests,
    )
    if request.arrival in ("poisson", "constant"):  # a rate of more than MAX_ARRIVALS_PER_LOAD arrivals is refused
        advice = f"at most {max_rate_rps(request):.6g} requests/s at {{duration_s}} {request.duration_s:g}"
        for rate in rate_list:
            check_load(rate, offered_duration_s(request, rate), advice)
    return request


def default_warmup_s(duration_s: float) -> float:
    """The warm-up when none is given, s: 1 s (enough for the batcher and the device to settle at the rates
    served in process), or a quarter of ``duration_s`` when that is shorter, so a short duration keeps three
    quarters of its arrivals measured."""
    return min(1.0, duration_s / 4)


def max_rate_rps(request: ServeRequest) -> float:
    """The highest rate (requests/s) whose load holds at most :data:`MAX_ARRIVALS_PER_LOAD` arrivals, ``max(rate x
    duration_s, rate x warmup_s + margin x min_requests)`` below the stretch cap: the lower of the two bounds."""
    by_duration = MAX_ARRIVALS_PER_LOAD / request.duration_s
    if request.warmup_s <= 0:
        return by_duration
    by_count = (MAX_ARRIVALS_PER_LOAD - _COUNT_MARGIN * request.min_requests) / request.warmup_s
    return min(by_duration, by_count)


#: A rate is offered for at most this many times ``duration_s`` to gather the requests its P99 needs.
MAX_STRETCH = 20.0
#: Margin over :data:`P99_BOUNDING_REQUESTS` for the spread of a Poisson count (its sd at 368 is ~19, 5%).
_COUNT_MARGIN = 1.2


def offered_duration_s(request: ServeRequest, rate_rps: float) -> float:
    """How long ``rate_rps`` is offered, s: ``duration_s``, or up to :data:`MAX_STRETCH` times longer until
    ``request.min_requests`` arrive after the warm-up (default
    :data:`~surrobench.analysis.serve_load.P99_BOUNDING_REQUESTS`: every judged P99 bounded, as MLPerf LoadGen's
    minimum query count; with :data:`_COUNT_MARGIN`)."""
    needed_s = request.warmup_s + _COUNT_MARGIN * request.min_requests / rate_rps if rate_rps > 0 else 0.0
    return min(max(request.duration_s, needed_s), MAX_STRETCH * request.duration_s)


def stretch_capped(request: ServeRequest, point: LoadPoint) -> bool:
    """Whether ``point``'s load (a rate or a concurrency) was cut at :data:`MAX_STRETCH` times ``duration_s``
    with fewer than ``min_requests`` requests arrived after the warm-up (counted, not expected)."""
    return point.arrival != "replay" and point.requests < request.min_requests


def stretch_notes(request: ServeRequest, points: list[LoadPoint]) -> list[str]:
    """One note on the loads (rates or concurrencies) offered longer than ``duration_s`` to gather ``min_requests``:
    how many, the longest (the warm-up, then its measured requests at ``offered_rps``), and those
    :func:`stretch_capped` (how many, the fewest requests, the way out: a longer ``duration_s``); none without one."""
    points = [p for p in points if p.arrival != "replay"]  # a replay lasts as its file does
    capped = [p for p in points if stretch_capped(request, p)]  # offered for the cap (one request: no arrival span)
    offered = [(MAX_STRETCH * request.duration_s, p) for p in capped]
    offered += [(request.warmup_s + p.requests / p.offered_rps, p) for p in points if p.offered_rps and p not in capped]
    longer = [(s, p) for s, p in offered if s > request.duration_s and not math.isclose(s, request.duration_s)]
    if not longer:
        return []
    longest_s, longest = max(longer, key=lambda sp: sp[0])
    note = (
        f"{len(longer)} of {len(points)} load(s) ran past the {request.duration_s:g} s asked, to measure min_requests "
        f"{request.min_requests} requests each: the longest, {longest.load()}, for {longest_s:.4g} s"
    )
    if capped:
        fewest = min(capped, key=lambda p: p.requests)
        note += (
            f"; {len(capped)} cut at {MAX_STRETCH:g}x the duration short of that (the fewest: {fewest.load()}, "
            f"{fewest.requests} requests): give a longer duration"
        )
    return [note]


def search_notes(
    request: ServeRequest, results: Iterable[PolicyResult], unloaded: dict[int, UnloadedLatency] | None = None
) -> tuple[str, ...]:
    """One note per case, each saying what it means: a policy whose batches ran slower under load than unloaded
    (:func:`~surrobench.analysis.capacity.slowdown_under_load`, the worst load named); a search that passed at
    :func:`max_rate_rps`; failing loads just above the target over a range of rates (``NEAR_TARGET``,
    ``FLAT_TAIL_STEP``); one whose rates below its capacity failed; else a batch-1 request after the longest idle
    probed missing the target (a capacity within its loads' noise is said in its headline)."""
    top, results, notes, sparse = max_rate_rps(request), tuple(results), (), False
    for r in results:
        slow = [(s, p) for p in r.points if (s := slowdown_under_load(p, unloaded or {}))]
        if slow:
            (ratio, size), p = max(slow, key=lambda x: x[0][0])
            notes += (
                f"{r.policy.label() if r.policy else 'endpoint'}: under load its batches ran slower than unloaded, "
                f"up to {ratio:.2g}x batch {size}'s back-to-back time (at {p.load()}; {len(slow)} of "
                f"{len(r.points)} loads): service times that change under load are not predicted",
            )
    for r, c in ((r, r.capacity) for r in results if r.capacity is not None):
        name, below = r.policy.label() if r.policy else "endpoint", [s for s in c.steps if s.rate_rps < c.capacity_rps]
        if c.failing_rps is None and c.capacity_rps >= top:
            notes += (
                f"{name}: the search passed at {rate_text(top)}, the most one load of {request.duration_s:g} s "
                f"may offer ({MAX_ARRIVALS_PER_LOAD:,} arrivals): the capacity is at least that",
            )
        near = [s for s in c.steps if s.rate_rps > c.capacity_rps and not s.passed and s.p99_ms is not None]
        near = [s for s in near if s.p99_ms <= NEAR_TARGET * request.target_p99_ms]
        if near and (hi := max(s.rate_rps for s in near)) >= FLAT_TAIL_STEP * (lo := min(s.rate_rps for s in near)):
            p99 = sorted(s.p99_ms for s in near)
            notes += (
                f"{name}: {len(near)} loads asked {rate_text(lo)} to {rate_text(hi)} missed the target by under "
                f"{NEAR_TARGET - 1:.0%} (P99 {p99[0]:.3g}-{p99[-1]:.3g} ms), a tail just above it over {hi / lo:.2g}x "
                f"the rate: what passes hangs on the target (P99 <= {p99[-1]:.3g} ms may allow {rate_text(hi)})",
            )
        if failed := sorted((s.rate_rps, s.p99_ms or math.inf) for s in below if not s.passed):
            sparse, worst = True, max(p for _, p in failed)
            notes += (
                f"{name}: rates below the capacity failed ({rate_text(failed[0][0])} to {rate_text(failed[-1][0])}"
                f", P99 up to {worst:.3g} ms): the target holds only under enough load",
            )
    one, found = (unloaded or {}).get(1), any(r.capacity is not None and r.capacity.capacity_rps > 0 for r in results)
    if found and not sparse and one is not None and (one.idle_p99_ms or 0.0) > request.target_p99_ms:
        notes += (
            f"rates sparse enough to leave the device idle {MAX_GAP_S * 1e3:g} ms miss the target too, below the "
            f"capacity: a request after that idle took P99 {one.idle_p99_ms:.3g} ms unloaded",
        )
    return notes


def _arrivals(request: ServeRequest, rate: float | None) -> tuple[np.ndarray, float | None]:
    """The arrival times (s) of one load and the schedule's length, s (None for a replay)."""
    if request.arrival == "replay":
        return replay_arrivals(request.arrivals_file), None
    duration, cap = offered_duration_s(request, rate), MAX_STRETCH * request.duration_s
    if request.arrival == "constant":
        return constant_arrivals(rate, duration), duration
    times = poisson_arrivals(rate, duration, request.seed)
    while (missing := request.min_requests - int((times >= request.warmup_s).sum())) > 0 and duration < cap:
        duration = min(duration + _COUNT_MARGIN * missing / rate, cap)  # a Poisson count fell short: offer longer
        times = poisson_arrivals(rate, duration, request.seed)
    return times, duration


def serve_policy(
    request: ServeRequest,
    policy: ServePolicy,
    service: Service,
    start_rps: float,
    clock_factory=WallClock,
    on_point: Callable[[LoadPoint], None] = lambda point: None,
    unloaded: dict[int, UnloadedLatency] | None = None,
) -> PolicyResult:
    """The loads of ``request`` offered to ``service`` under ``policy`` (``clock_factory()``: a fresh clock per
    load); ``on_point(point)`` per load point. A peak search given ``unloaded`` answers an infeasible target at
    once, else brackets the predicted capacity, or searches up from the sparse rate where none is predicted, never
    below it (:mod:`surrobench.analysis.capacity`); without it (an endpoint) it doubles or halves from
    ``request.rates[0]`` or ``start_rps`` (else unused)."""
    common = dict(max_batch=policy.max_batch, warmup_s=request.warmup_s, target_p99_ms=request.target_p99_ms)

    def open_load(rate: float | None) -> LoadPoint:
        arrivals, duration = _arrivals(request, rate)
        if request.url is not None:
            trace = http_open_loop(request.url, arrivals, request.drain_s)
        else:
            trace = serve_open_loop(arrivals, service, policy, clock_factory(), request.drain_s)
        window = None if duration is None else duration - request.warmup_s
        point = load_point(trace, arrival=request.arrival, target_rps=rate, window_s=window, **common)
        on_point(point)
        return point

    if request.arrival == "closed":
        stretch = dict(
            min_requests=request.min_requests,
            warmup_s=request.warmup_s,
            max_duration_s=MAX_STRETCH * request.duration_s,
            max_requests=MAX_ARRIVALS_PER_LOAD,
        )
        points = []
        for c in request.concurrencies:
            trace = serve_closed_loop(c, request.duration_s, service, policy, clock_factory(), **stretch)
            points.append(load_point(trace, arrival="closed", concurrency=c, **common))
            on_point(points[-1])
        return PolicyResult(policy, tuple(points))
    if request.arrival == "replay":
        return PolicyResult(policy, (open_load(None),))
    if request.find_max:
        target = request.target_p99_ms
        predicted, factor, sparse = None, 2.0, 0.0
        start = request.rates[0] if request.rates else start_rps
        if unloaded is not None:
            why = infeasible_reason(unloaded, target)
            if why is not None:
                every_rate_fails = Capacity(target, 0.0, 0.0, (), predicted_rps=0.0, infeasible=why)
                return PolicyResult(policy if request.url is None else None, (), every_rate_fails)
            if request.url is None:
                predicted = predict_capacity(unloaded, policy, target, request.seed, request.arrival)
                sparse = sparse_rate(unloaded)
                if not request.rates:  # none simulated to pass: from the sparse end
                    start, factor = (predicted, PREDICTED_STEP) if predicted else (sparse, factor)
        began = time.monotonic()
        capacity, points = find_capacity(
            open_load, target, start, max_rps=max_rate_rps(request), factor=factor, min_rps=sparse
        )
        capacity = replace(capacity, predicted_rps=predicted, search_s=time.monotonic() - began)
        capacity = replace(capacity, infeasible=no_rate_found(target, capacity, sparse))
        return PolicyResult(policy if request.url is None else None, tuple(points), capacity)
    return PolicyResult(policy if request.url is None else None, tuple(open_load(r) for r in request.rates))


_SERVE_KEYS = tuple(k for k in inspect.signature(serve_request).parameters if k != "seed")  # seed: the sweep's too


def _one_config(plan, request: ServeRequest) -> None:
    """Refuse a plan of several configs, and a largest max batch whose inputs do not fit (the padded batch the
    service allocates, checked as a sweep checks its batches: :func:`~surrobench.execution.sweep.check_input_size`)."""
    req, cfg, largest = plan.request, plan.configs[0], max(p.max_batch for p in request.policies)
    many = [f for f, v in (("model", req.models), ("precision", req.precisions), ("mode", req.modes)) if len(v) > 1]
    if many or len(plan.configs) != 1:
        flag = many[0] if many else "shape"
        raise UsageError(f"serve measures one config: give one --{flag} (run one serve per config to compare them)")
    if request.url is None:
        free = available_bytes(cfg.device)
        check_input_size(cfg.model, plan.surrogates[cfg.model], cfg.shape, largest, 1, free, batch_name="max_batch")


def planned_points(request: ServeRequest) -> int | None:
    """How many load points ``request`` measures: per policy one per rate, concurrency or replay; None for a
    peak search (its rates depend on what it measures)."""
    if request.find_max:
        return None
    per_policy = {"closed": len(request.concurrencies), "replay": 1}.get(request.arrival, len(request.rates))
    return per_policy * len(request.policies)


@dataclass
class _Progress:
    """What a serve run has measured: ``done`` the policies finished, ``policy`` the one measured since ``done``
    held ``started`` policies, its load points so far (``points``); once appended to ``done``, it counts there."""

    done: list[PolicyResult]
    base: ServeRecord  # the record as begun, with the unloaded latency measured so far
    policy: ServePolicy | None = None
    points: list[LoadPoint] | None = None
    started: int = 0

    def start(self, policy: ServePolicy | None) -> None:
        self.policy, self.points, self.started = policy, [], len(self.done)

    def cut(self) -> bool:
        """Whether a policy is being measured (begun, its result not yet in ``done``)."""
        return self.points is not None and len(self.done) == self.started

    def record(self, record: ServeRecord) -> ServeRecord:
        """``record`` with the policies finished and the one being measured, as far as it got."""
        current = [PolicyResult(self.policy, tuple(self.points))] if self.cut() and self.points else []
        return replace(record, policies=(*self.done, *current))


@contextlib.contextmanager
def _stored(store, record: ServeRecord, command: str | None, total: int | None) -> Iterator[_Progress]:
    """The run row first; the record with the policies measured, ``complete``, or on Ctrl-C ``interrupted`` with
    every load point that finished (:class:`~surrobench.errors.Interrupted`), as on a UsageError met mid-run
    (:class:`~surrobench.errors.Stopped`)."""
    begin_serve(store, record, command)
    progress = _Progress([], base=record)

    def kept(why: str) -> ServeRecord:  # the record so far, stored ``interrupted``, its last note ``why``
        cut = progress.record(progress.base)
        notes = tuple(n for p in cut.policies for point in p.points for n in load_warnings(point))
        if progress.cut():
            what = progress.policy.label() if progress.policy is not None else "the endpoint"
            notes += (f"{why}: {what} cut short after {len(progress.points)} load point(s)",)
        cut = replace(cut, env={**cut.env, "interrupted": True}, notes=notes)
        save_serve(store, cut, "interrupted")
        return cut

    try:
        yield progress
    except KeyboardInterrupt:
        cut = kept("interrupted")  # partial: every load point that finished; total None for a peak search
        of = f" of {total}" if total is not None else ""
        raise Interrupted(f"interrupted: {cut.n_points}{of} load point(s) stored as run {cut.run_id}", cut) from None
    except StoreWriteError as exc:  # every load point measured is in the record, stored or not
        cut = progress.record(replace(record, env=unsaved_env(record.env, exc, total)))
        mark_unsaved(store, record.run_id)
        raise Unsaved(exc, cut.to_json(), record.run_id, cut.n_points, what="serve run", unit="load point") from None
    except UsageError as exc:  # met mid-run (an endpoint that failed every request, a model that raised)
        cut = kept(f"stopped by {exc}")
        raise Stopped(exc, cut, f"; {cut.n_points} load point(s) stored as run {cut.run_id}") from None


def _add_unloaded(progress: _Progress, unloaded: dict[int, UnloadedLatency], measured: dict) -> None:
    """Keep the unloaded latency just ``measured`` in ``unloaded`` and in the record as begun."""
    unloaded.update(measured)
    progress.base = replace(progress.base, unloaded=tuple(unloaded[k] for k in sorted(unloaded)))


def serve(
    model,
    *,
    db: str | Path | None = None,
    command: str | None = None,
    on_point: Callable[[ServePolicy | None, LoadPoint], None] | None = None,
    on_start: Callable[[int | None], None] | None = None,
    **options,
) -> ServeRecord:
    """Offer requests to ``model`` (as for :func:`~surrobench.api.benchmark.benchmark`) and return the serve record,
    stored in ``db`` when given (after each load point, the run ``running`` until the end). ``options``: the keywords of
    :func:`serve_request` and of :func:`~surrobench.api.benchmark.sweep_request` for the one config served; a request is
    one batch-1 input. ``on_point(policy, point)`` per load point (``policy`` None for an endpoint), ``on_start(total)``
    before the first (:func:`planned_points`). A policy whose output held NaN/Inf is ``nonfinite``
    (:class:`~surrobench.records.serve.PolicyResult`, a note), the run ``complete``, the other policies served.

    Raises:
        UsageError: bad input (:func:`serve_request`, :func:`~surrobench.api.benchmark.sweep_plan`), more than
            one config.
        Interrupted: Ctrl-C (or SIGTERM, SIGHUP): ``partial`` the record of the load points that finished, stored
            ``interrupted`` (``env.interrupted`` true, a note naming the policy cut); the message ``interrupted: 1 of
            3 load point(s) stored as run R``.
        Unsaved: a write to ``db`` failed; it carries the serve JSON of every load point that finished.
        Stopped: a UsageError mid-run (an endpoint failing every request of a rate, a model that raised); as above.
    """
    serve_opts = {k: options.pop(k) for k in list(options) if k in _SERVE_KEYS}
    request = serve_request(**serve_opts, seed=options.get("seed", 0))
    plan = sweep_plan(model, caller=serve, batches=1, iters=1, **options)
    _one_config(plan, request)
    if request.url is not None:
        check_reachable(request.url)  # an endpoint that is down is refused before the run is stored
    cfg = plan.configs[0]
    workload = {
        "model": cfg.model,
        "shape_label": cfg.shape.label(),
        "precision": cfg.precision,
        "mode": cfg.mode,
        "device": cfg.device,
        **{name: getattr(cfg, name) for name in EXEC_SETTINGS},  # every setting, as it was served
        "request_shape": None,
        "service_ms": None,
    }
    record = ServeRecord(
        run_id=new_run_id(),
        created=created_now(),
        tag=plan.request.tag,
        env={**run_environment(plan.request), "command_kind": "serve"},
        workload=workload,
        url=request.url,
        arrival=request.arrival,
        duration_s=request.duration_s,
        warmup_s=request.warmup_s,
        seed=request.seed,
        target_p99_ms=request.target_p99_ms,
        policies=(),
        find_max=request.find_max,
    )
    prepared = prepare_model(plan.surrogates[cfg.model], cfg.device, cfg.seed) if request.url is None else None
    total = planned_points(request)
    if on_start is not None:
        on_start(total)
    unloaded: dict[int, UnloadedLatency] = {}
    budget_s = request.unloaded_budget_s
    # other processes' CPUs over the policies' measurements, as run's; none for an endpoint (its server is one of them)
    measured: list[tuple] = []
    with open_store(db) as store, _stored(store, record, command, total) as progress:
        done = progress.done
        model_notes: tuple[str, ...] = ()  # the forward's checks (execution.serve_step.ServiceChecks)

        def point_done(point: LoadPoint) -> None:
            progress.points.append(point)
            save_serve(store, progress.record(progress.base), state=None)  # a killed run keeps its load points
            if on_point is not None:
                on_point(progress.policy, point)

        for policy in request.policies:
            progress.start(policy if request.url is None else None)
            if request.url is not None:
                if not unloaded:  # before any load: the endpoint's own unloaded latency (batch 1)
                    _add_unloaded(progress, unloaded, http_unloaded(request.url, budget_s))
                start = START_FRACTION * 1e3 / unloaded[1].back_to_back_p50_ms  # one request at a time
                done.append(serve_policy(request, policy, lambda k: 0.0, start, on_point=point_done, unloaded=unloaded))
            else:
                try:
                    with model_service(cfg, prepared, policy.max_batch, cfg.warmup) as (service, info):
                        began = cpu_times()  # its steps built: torch.compile's workers are other processes
                        missing = tuple(k for k in info.sizes if k not in unloaded)
                        if missing:  # before any load of the policy: its sizes' unloaded latency (kept), saturated
                            _add_unloaded(progress, unloaded, unloaded_latency(service, missing, budget_s))
                            if request.find_max and not infeasible_reason(unloaded, request.target_p99_ms):
                                probed = saturated_cycles(service, {k: unloaded[k] for k in missing})
                                _add_unloaded(progress, unloaded, probed)
                                unprobed = [str(k) for k in missing if probed[k].saturated_ms is None]
                                why = f"past the {UNLOADED_BUDGET_S:g} s probe budget, loop ms -: their loop time not "
                                why += "charged; no batch full: the loop's own time charged"
                                model_notes += tuple(listed(f"batch sizes with no saturated cycle ({why})", unprobed))
                        service_ms = {str(k): u.back_to_back_p50_ms for k, u in sorted(unloaded.items())}
                        shapes = {"request_shape": list(info.request_shape), "request_inputs": inputs_json(info.inputs)}
                        workload.update(shapes, service_ms=service_ms, grad_mode=prepared.grad_mode)
                        done.append(
                            serve_policy(
                                request,
                                policy,
                                service,
                                0.0,
                                on_point=lambda p: (info.checks.point_done(), point_done(p)),
                                unloaded={k: unloaded[k] for k in padded_sizes(policy.max_batch)},
                            )
                        )
                        measured.append((began, cpu_times()))
                except NonfiniteOutputError as exc:  # a first output NaN/Inf: not served, as run's status nonfinite
                    done.append(PolicyResult(policy, (), nonfinite=exc.found))
                    model_notes += (f"{cfg.label()}, {policy.label()}: nonfinite, not served: {exc}",)
                else:
                    done[-1] = replace(done[-1], nonfinite=info.checks.nonfinite)
                    model_notes += info.checks.notes()
        points = [point for p in done for point in p.points]
        notes = (*(n for point in points for n in load_warnings(point)), *stretch_notes(request, points))
        notes += search_notes(request, done, unloaded) + model_notes
        notes += tuple(listed(NO_GRAD, [cfg.label()] if workload.get(GRAD_MODE_KEY) == "no_grad" else []))
        workload.update(other_cpus=other_cpus(*measured), usable_cpus=usable_cpus())
        busy = busy_host_warning(*host_load(), cfg.threads or torch.get_num_threads(), [workload])
        notes += (busy,) if busy else ()
        record = replace(progress.base, workload=workload, policies=tuple(done), notes=notes)
        save_serve(store, record)
    return record
