"""Capacity you can plan on: the unloaded latency first, an infeasible target answered without a load, the
prediction against the simulated truth, the capacity objective of optimize, and the fresh-user trial's items, on
planted services (virtual clock) and a tiny model."""

from __future__ import annotations

import json
import math
from dataclasses import replace
import socket
from types import SimpleNamespace

import numpy as np
import pytest
from torch import nn

from conftest import run_cli
from synthetic import PlantedService

from surrobench.analysis import capacity as capacity_module
from surrobench.analysis.accuracy import AccuracyVerdict
from surrobench.analysis.capacity import find_capacity, flat_tail, no_rate_found, predict_capacity, sparse_rate
from surrobench.analysis.serve_load import load_point, load_warnings
from surrobench.api import serve as serve_module
from surrobench.api.capacity import Evaluated, capacity_search
from surrobench.api.serve import search_notes, serve, serve_policy, serve_request
from surrobench.errors import Interrupted, UsageError
from surrobench.execution import batcher as batcher_module
from surrobench.execution.arrivals import poisson_arrivals
from surrobench.execution.batcher import ServeTrace, VirtualClock, saturated_cycles, serve_open_loop, unloaded_latency
from surrobench.execution.remedies import Remedy
from surrobench.records.schemas import SERVE_V1
from surrobench.records.serve import (
    Capacity,
    CapacityOptimization,
    PolicyResult,
    ServePolicy,
    ServeRecord,
    UnloadedLatency,
    padded_sizes,
    serve_from_json,
)
from surrobench.report.optimize import capacity_lines
from surrobench.report.serve_tables import COLUMNS, point_cells, sections
from surrobench.results.store import ResultStore


class CostlyClock(VirtualClock):
    """A virtual clock each read of which costs ``read_s``: a batcher loop with its own time, planted. Its times
    keep to a 2**-30 s grid, so equal planted durations measure equal however late (no float rounding)."""

    def __init__(self, read_s: float) -> None:
        super().__init__()
        self.read_s = read_s

    def now(self) -> float:
        self.advance(self.read_s)
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += round(seconds * 2**30) / 2**30

    def sleep_until(self, t: float) -> None:
        super().sleep_until(math.ceil(t * 2**30) / 2**30)  # never before t


class IdleService:
    """A batch of k takes ``(a_ms + b_ms k) x factor`` ms of virtual time, ``slow`` times that when the service
    was idle ``idle_ms`` or more since its last batch ended (the trial's isolated request), ``deep`` times that
    after 40 ms or more (a device clocked down), and a lognormal jitter of ``jitter`` (seeded); each clock read
    costs ``read_ms`` (:class:`CostlyClock`)."""

    def __init__(self, a_ms, b_ms, *, slow=1.0, idle_ms=5.0, deep=1.0, factor=1.0, jitter=0.0, seed=0, read_ms=0.0):
        self.a, self.b, self.slow, self.idle_s, self.factor, self.jitter = (
            a_ms,
            b_ms,
            slow,
            idle_ms / 1e3,
            factor,
            jitter,
        )
        self.rng, self.read_s, self.deep = np.random.default_rng(seed), read_ms / 1e3, deep
        self.new_clock()

    def new_clock(self) -> VirtualClock:
        self.clock, self.last_end = CostlyClock(self.read_s), -1.0
        return self.clock

    def __call__(self, k: int) -> float:
        ms = (self.a + self.b * k) * self.factor
        idle_s = self.clock.now() - self.last_end
        ms *= (self.slow if idle_s >= self.idle_s else 1.0) * (self.deep if idle_s >= 0.04 else 1.0)
        if self.jitter:
            ms *= float(self.rng.lognormal(0.0, self.jitter))
        self.clock.advance(ms / 1e3)
        self.last_end = self.clock.now()
        return ms / 1e3


def _unloaded(service: IdleService, max_batch: int):
    """As serve measures a feasible target's: the unloaded latency, then the saturated cycles."""
    return saturated_cycles(
        service, unloaded_latency(service, padded_sizes(max_batch), clock=service.clock), clock=service.clock
    )


def test_the_unloaded_latency_is_measured_isolated_and_back_to_back():
    service = IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0)
    unloaded = _unloaded(service, 4)
    assert sorted(unloaded) == [1, 2, 4]
    one = unloaded[1]
    assert one.back_to_back_p50_ms == pytest.approx(2.1) and one.isolated_p99_ms == pytest.approx(4.2)
    assert one.gap_ms >= 3.0 and len(one.isolated_ms) >= 10 and len(one.back_to_back_ms) >= 10
    assert unloaded[4].back_to_back_p50_ms == pytest.approx(2.4)
    assert all(u.loop_ms == pytest.approx(0.0, abs=1e-9) for u in unloaded.values())  # a loop of no time
    assert all(u.loaded_excess_ms == pytest.approx(0.0, abs=1e-9) for u in unloaded.values())  # nor any load
    assert unloaded[4].saturated_ms == pytest.approx(2.4)


def test_an_infeasible_target_is_answered_without_a_search(monkeypatch):
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    # back to back a request takes 2.1 ms, but an isolated one 4.2 ms: no rate meets P99 <= 3 ms
    service = IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0)
    unloaded = _unloaded(service, 8)
    request = serve_request(find_max=True, p99_ms=3.0, max_batch=8, max_wait_ms=1.0, duration_s=2.0)
    calls = []
    result = serve_policy(
        request, ServePolicy(8, 1.0), lambda k: calls.append(k), 100.0, VirtualClock, unloaded=unloaded
    )
    c = result.capacity
    assert calls == [] and result.points == () and c.steps == ()
    assert (c.capacity_rps, c.failing_rps) == (0.0, 0.0) and c.predicted_rps == 0.0 and "4.2 ms" in c.infeasible
    assert result.capacity_offered_rps() == (0.0, 0.0) and result.capacity_unresolved() is None
    feasible = serve_request(find_max=True, p99_ms=5.0, max_batch=8, max_wait_ms=1.0, duration_s=2.0)
    assert serve_policy(feasible, ServePolicy(8, 1.0), service, 100.0, service.new_clock, unloaded=unloaded).points


def test_the_prediction_is_within_ten_percent_of_the_simulated_truth():
    # a jittery service, slower after an idle spell; the truth: the batcher's own search over it on a virtual
    # clock, with long loads (30 s: 6-s loads' P99 near the capacity spread the truth 0.88-1.16x over jitter seeds)
    policy, target = ServePolicy(4, 1.0), 12.0
    service = IdleService(2.0, 0.5, slow=1.5, idle_ms=8.0, jitter=0.1)
    predicted = predict_capacity(_unloaded(service, 4), policy, target)
    request = serve_request(find_max=True, p99_ms=target, max_batch=4, max_wait_ms=1.0, duration_s=30.0, warmup_s=1.0)
    truth = serve_policy(request, policy, service, predicted / 2, service.new_clock).capacity
    middle = (truth.capacity_rps + truth.failing_rps) / 2
    assert predicted == pytest.approx(middle, rel=0.10)


def test_the_loops_own_time_is_measured_and_charged():
    # each clock read of the loop costs 0.07 ms beside batches of 1.25-2 ms: the loop's time per batch, measured
    # saturated, is charged in the simulation; uncharged, the capacity is over-predicted (no max wait: the loop
    # wakes only when idle, so its time is per batch; 0.05 ms over-predicted by 6-13% over jitter seeds 0-7)
    policy, target = ServePolicy(4, 0.0), 12.0
    service = IdleService(1.0, 0.25, jitter=0.1, read_ms=0.07)
    unloaded = _unloaded(service, 4)
    assert all(u.loop_ms > 0.2 for u in unloaded.values())
    predicted = predict_capacity(unloaded, policy, target)
    blind = {k: replace(u, loop_ms=0.0, saturated_ms=None) for k, u in unloaded.items()}
    blind = predict_capacity(blind, policy, target)
    request = serve_request(find_max=True, p99_ms=target, max_batch=4, max_wait_ms=0.0, duration_s=30.0, warmup_s=1.0)
    truth = serve_policy(request, policy, service, predicted / 2, service.new_clock).capacity
    middle = (truth.capacity_rps + truth.failing_rps) / 2
    assert predicted == pytest.approx(middle, rel=0.10) and blind > 1.1 * middle


class LoadedService(IdleService):
    """:class:`IdleService` whose batches take ``loaded`` times as long once a load through the batcher has run
    ``after_ms`` (``began``: when :func:`marking` saw it start): a loaded cycle longer than its samples."""

    def __init__(self, *args, loaded: float, after_ms: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.loaded, self.after_s, self.began = loaded, after_ms / 1e3, None

    def __call__(self, k: int) -> float:
        sustained = self.began is not None and self.clock.now() - self.began >= self.after_s
        self.factor = self.loaded if sustained else 1.0
        return super().__call__(k)


def marking(monkeypatch, service: LoadedService) -> None:
    """Every load of ``service`` through the batcher (the saturated probe's, the search's) marks its start."""

    def serve(arrivals, served, *args, real=batcher_module.serve_open_loop, **kwargs):
        service.began = service.clock.now() if served is service else None
        try:
            return real(arrivals, served, *args, **kwargs)
        finally:
            service.began = None

    for module in (batcher_module, serve_module):
        monkeypatch.setattr(module, "serve_open_loop", serve)


def test_a_loaded_cycle_longer_than_the_samples_is_measured_and_charged(monkeypatch):
    # batches of 1.25-2 ms, 1.2x as long once a load has run 80 ms: longer than the back-to-back samples and the
    # short backlogs measured before (67 ms each: predicted from them, 21% over), within the saturated probe's
    # 0.1-s warm-up (its cycle 1.2x): the back-to-back draws are charged their excess, and the prediction holds
    policy, target = ServePolicy(4, 1.0), 12.0
    service = LoadedService(1.0, 0.25, jitter=0.1, loaded=1.2, after_ms=80.0)
    marking(monkeypatch, service)
    unloaded = _unloaded(service, 4)
    for u in unloaded.values():
        fast = 1.0 + 0.25 * u.batch
        assert (
            u.saturated_ms == pytest.approx(1.2 * fast, rel=0.02) and np.median(u.back_to_back_ms[:100]) < 1.05 * fast
        )
        assert np.mean(u.back_to_back_ms) + u.loaded_excess_ms == pytest.approx(u.saturated_ms)
    predicted = predict_capacity(unloaded, policy, target)
    request = serve_request(find_max=True, p99_ms=target, max_batch=4, max_wait_ms=1.0, duration_s=30.0, warmup_s=1.0)
    truth = serve_policy(request, policy, service, predicted / 2, service.new_clock).capacity
    middle = (truth.capacity_rps + truth.failing_rps) / 2
    assert predicted == pytest.approx(middle, rel=0.10)


def test_a_serve_record_measured_before_the_saturated_cycle_reads_and_is_charged_its_loop_time():
    # a stored serve-v2 record of before the probe: its unloaded sizes without saturated_ms; read back, each
    # back-to-back batch is charged its loop_ms as then, and it predicts as it did
    unloaded = {k: UnloadedLatency(k, 50.0, (2.0 + k,) * 20, (1.5 + k,) * 20, 0.2) for k in (1, 2, 4)}
    doc = ServeRecord(
        "r", "", None, {}, {}, None, "poisson", 1.0, 0.1, 0, 12.0, (), (), tuple(unloaded.values())
    ).to_json()
    for u in doc["unloaded"]:
        del u["saturated_ms"]
    record = serve_from_json(doc)
    assert {u.batch: u for u in record.unloaded} == unloaded
    assert all(u.saturated_ms is None and u.loaded_excess_ms == 0.2 for u in record.unloaded)
    charged = {k: replace(u, saturated_ms=1.5 + k + 0.2) for k, u in unloaded.items()}  # the same charge, measured
    policy = ServePolicy(4, 1.0)
    assert predict_capacity(unloaded, policy, 12.0) == predict_capacity(charged, policy, 12.0) > 0


class DriftingService(IdleService):
    """:class:`IdleService` whose batches take ``after`` times as long from its ``calls``-th call on: a service
    that drifts between the short back-to-back run and the saturated load measured after it."""

    def __init__(self, *args, calls: int, after: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls, self.after, self.count = calls, after, 0

    def __call__(self, k: int) -> float:
        self.count += 1
        self.factor = self.after if self.count > self.calls else 1.0
        return super().__call__(k)


def test_the_loop_time_is_its_own_and_the_back_to_back_charge_adds_up_to_the_saturated_cycle():
    # batches of 1 ms, 1.5 ms once the saturated load runs; each clock read of the loop 0.01 ms: the loop's time
    # (charged after an idle batch and each wake) is its own in the saturated window (a few reads), never the 0.5 ms
    # the service drifted between the windows; the saturated batches stand among the back-to-back samples, and the
    # back-to-back draws are charged what makes their mean the saturated cycle
    service = DriftingService(1.0, 0.0, calls=101, after=1.5, read_ms=0.01)
    (one,) = saturated_cycles(service, unloaded_latency(service, (1,), 3.0, service.clock), service.clock).values()
    assert 0.0 < one.loop_ms < 0.1 and one.saturated_ms == pytest.approx(
        max(one.back_to_back_ms) + one.loop_ms, abs=1e-3
    )
    assert min(one.back_to_back_ms) < 1.1 and max(one.back_to_back_ms) > 1.4
    assert np.mean(one.back_to_back_ms) + one.loaded_excess_ms == pytest.approx(one.saturated_ms)


def test_the_saturated_probe_counts_full_batches_only_within_its_budget():
    # batches of 0.1 ms whatever their size: size 1024's arrivals (capped at MAX_ARRIVALS_PER_LOAD a probe) never fill
    # it, so no batch of its probe counts: no saturated cycle (only its loop's own time charged), no partial
    # batch among its back-to-back samples
    clock = VirtualClock()

    def service(k: int) -> float:
        clock.advance(1e-4)
        return 1e-4

    big = UnloadedLatency(1024, 1.0, (0.1,) * 10, (0.1,) * 10)
    (got,) = saturated_cycles(service, {1024: big}, clock).values()
    assert got.saturated_ms is None and got.back_to_back_ms == big.back_to_back_ms and got.loop_ms >= 0.0
    # a budget of 0.5 s: size 1's probe (0.4 s) runs, size 2's (0.4 s more) is left as it was: its loop time not
    # measured (None, in the JSON null; it read 0 ms, as if measured) and charged nothing; an old record's 0 reads
    small = {k: UnloadedLatency(k, 1.0, (0.1,) * 10, (0.1,) * 10) for k in (1, 2)}
    clock.t = 0.0  # a fresh probe's clock
    probed = saturated_cycles(service, small, clock, budget_s=0.5)
    assert probed[1].saturated_ms == pytest.approx(0.1) and probed[2] == small[2]
    assert probed[1].loop_ms is not None and probed[2].loop_ms is None and probed[2].loaded_excess_ms == 0.0
    assert probed[2].to_json()["loop_ms"] is None and UnloadedLatency.from_json(probed[2].to_json()) == probed[2]
    assert UnloadedLatency.from_json({**probed[2].to_json(), "loop_ms": 0.0}).loop_ms == 0.0


def test_a_warm_up_is_spread_over_every_batch_size_not_charged_to_the_first():
    # the first 360 batches take twice as long (a warm-up: clocks, allocator, autotuning); sampled one size after
    # another, batch 1 would take them all (its back-to-back P50 2.2 ms against 1.1); sampled in interleaved rounds,
    # every size meets some and no size's P50 carries them
    service = DriftingService(2.0, 0.2, calls=360, after=0.5)
    for k, u in _unloaded(service, 4).items():
        fast = 1.0 + 0.1 * k
        assert u.back_to_back_p50_ms == pytest.approx(fast) and u.isolated_p50_ms == pytest.approx(fast)
        assert max(u.back_to_back_ms) == pytest.approx(2 * fast)


def test_the_idle_threshold_is_measured_not_guessed():
    # slower from 3 ms of idle on: the isolated samples are taken at the shortest idle found to slow a batch
    unloaded = _unloaded(IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0), 2)
    assert all(3.0 <= u.gap_ms <= 3.3 for u in unloaded.values())
    assert unloaded[1].isolated_p50_ms == pytest.approx(4.2) and unloaded[1].back_to_back_p99_ms == pytest.approx(2.1)
    # idle never slows it: no threshold within the longest gap probed, isolated as fast as back to back
    same = _unloaded(IdleService(2.0, 0.1), 1)[1]
    assert same.gap_ms == pytest.approx(batcher_module.MAX_GAP_S * 1e3)
    assert same.isolated_p99_ms == pytest.approx(same.back_to_back_p50_ms)


def test_a_longer_idle_than_the_threshold_is_sampled_and_simulated(monkeypatch):
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    # 1.2x slower after 3 ms of idle, 3.6x after 40 ms (a device clocked down): the isolated samples at the
    # threshold pass P99 <= 10 ms, the samples after the longest gap probed do not, and the sparse rates the
    # simulation tries meet that idle often
    service = IdleService(4.0, 0.1, slow=1.2, idle_ms=3.0, deep=3.0)
    one = _unloaded(service, 1)[1]
    assert one.isolated_p99_ms == pytest.approx(4.92) and min(one.idle_ms) == pytest.approx(14.76)
    assert UnloadedLatency.from_json(one.to_json()) == one
    assert UnloadedLatency.from_json({k: v for k, v in one.to_json().items() if k != "idle_ms"}).idle_ms == ()
    policy = ServePolicy(1, 0.0)
    assert predict_capacity({1: one}, policy, 10.0) == 0.0
    assert predict_capacity({1: replace(one, idle_ms=())}, policy, 10.0) > 0.0  # blind to the longer idle
    # a batching service under load is seldom idle 40 ms: its prediction is the same with or without them
    busy = _unloaded(IdleService(3.0, 0.1, slow=1.3, idle_ms=3.0, deep=3.0), 4)
    blind = {k: replace(u, idle_ms=()) for k, u in busy.items()}
    assert predict_capacity(busy, ServePolicy(4, 1.0), 9.0) == predict_capacity(blind, ServePolicy(4, 1.0), 9.0) > 0


def test_a_target_no_simulated_rate_meets_is_searched_upward_from_a_failing_sparse_load(monkeypatch):
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    # requests after 40 ms of idle take 14.8 ms, over 10: they fail the sparse load; the rates above it fail too
    # (P99 15-17 ms up to 150 rps, then a queue): the search looks above once the sparse load fails, and stops
    # where the P99 exceeds the sparse one's
    service = IdleService(4.0, 0.1, slow=1.2, idle_ms=3.0, deep=3.0)
    unloaded = _unloaded(service, 1)
    request = serve_request(find_max=True, p99_ms=10.0, max_batch=1, max_wait_ms=0.0, duration_s=2.0, warmup_s=0.2)
    result = serve_policy(request, ServePolicy(1, 0.0), service, 100.0, service.new_clock, unloaded=unloaded)
    c = result.capacity
    assert c.predicted_rps == 0.0 and c.capacity_rps == 0.0 and c.infeasible is not None
    assert c.steps[0].rate_rps == pytest.approx(sparse_rate(unloaded)) and not any(s.passed for s in c.steps)
    assert 1 < len(c.steps) <= 5 and c.steps[-1].p99_ms > max(s.p99_ms for s in c.steps[:-1])


def test_slow_back_to_back_samples_leave_the_sparse_rates_to_the_search(monkeypatch):
    # the unloaded samples of a busy host: back to back and after a long idle 50 ms, isolated 5 ms; no simulated
    # rate passes P99 <= 20 ms, but the service under load takes 5 ms: the search from the sparse rate finds one
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    unloaded = {1: UnloadedLatency(1, 3.0, (5.0,) * 20, (50.0,) * 20, 0.0, (50.0,) * 20)}
    service = PlantedService(5.0)
    request = serve_request(find_max=True, p99_ms=20.0, max_batch=1, max_wait_ms=0.0, duration_s=2.0, warmup_s=0.2)
    assert predict_capacity(unloaded, ServePolicy(1, 0.0), 20.0) == 0.0
    result = serve_policy(request, ServePolicy(1, 0.0), service, 400.0, service.new_clock, unloaded=unloaded)
    c = result.capacity
    assert c.steps[0].rate_rps == pytest.approx(sparse_rate(unloaded)) == pytest.approx(20.0)
    assert 20.0 < c.capacity_rps < c.failing_rps <= 200.0 and c.infeasible is None  # the 5 ms service saturates at 200


def test_a_capacity_above_failing_sparse_rates_says_so():
    # 1.2x slower after 3 ms of idle, 24x after 40 ms: the search finds a capacity at P99 <= 30 ms, and the sparse
    # rates below it fail; the note says so, from the samples taken after that idle
    service = IdleService(2.0, 0.1, slow=1.2, idle_ms=3.0, deep=20.0)
    unloaded = _unloaded(service, 1)
    request = serve_request(find_max=True, p99_ms=30.0, max_batch=1, max_wait_ms=0.0, duration_s=2.0, warmup_s=0.2)
    result = serve_policy(request, ServePolicy(1, 0.0), service, 100.0, service.new_clock, unloaded=unloaded)
    assert result.capacity.capacity_rps > 0 and unloaded[1].idle_p99_ms > 30.0
    assert len(search_notes(request, (result,), unloaded)) == 1
    assert search_notes(request, (result,), _unloaded(IdleService(2.0, 0.1, slow=1.2, idle_ms=3.0), 1)) == ()


def test_no_rate_below_the_sparse_one_is_measured_and_a_passing_start_there_is_searched_upward():
    def measure(rate):  # above 300 rps a queue: the P99 grows with the rate
        p99 = 1.0 if rate <= 300 else rate / 10
        return SimpleNamespace(p99_ms=p99, passed=rate <= 300, target_rps=rate, completed=1)

    found, _ = find_capacity(measure, 10.0, 100.0, min_rps=100.0)
    assert found.capacity_rps <= 300 < found.failing_rps and len(found.steps) > 2
    cut, _ = find_capacity(measure, 10.0, 1000.0, min_rps=1000.0)  # a failing start at the floor looks above
    assert [s.rate_rps for s in cut.steps] == [1000.0, 2000.0, 4000.0] and cut.capacity_rps == 0.0
    floored, _ = find_capacity(measure, 10.0, 1000.0, min_rps=700.0)  # halving from 1,000 stops at 700
    assert [s.rate_rps for s in floored.steps] == [1000.0, 700.0] and floored.capacity_rps == 0.0
    low, _ = find_capacity(measure, 10.0, 0.5, min_rps=100.0)  # a start asked below the floor (--rate 0.5) starts there
    assert low.steps[0].rate_rps == 100.0 and low.capacity_rps == found.capacity_rps


def test_a_failing_sparse_start_looks_above_where_the_target_holds_only_under_load():
    # the eager AFNO on an H100 (docs/benchmarks/h200-capacity.md): P99 19 ms at its sparse 17 rps, 14-16 ms up to
    # 350 rps, 8.8-9.4 ms from 700 to 1,300 rps, a queue above; no rate simulated to pass, so the search starts at
    # the sparse rate: a failing load there must not end it
    def measure(rate):
        p99 = 19.0 if rate < 30 else 15.0 if rate < 600 else 9.0 if rate <= 1300 else rate / 100
        return SimpleNamespace(p99_ms=p99, passed=p99 <= 10.0, target_rps=rate, completed=1)

    found, _ = find_capacity(measure, 10.0, 17.0, min_rps=17.0)
    assert 1300 * 0.95 <= found.capacity_rps <= 1300 < found.failing_rps
    assert no_rate_found(10.0, found, 17.0) is None

    def queue(rate):  # a queue from the start: the sparse load fails, and every rate above it worse
        return SimpleNamespace(p99_ms=10.0 + rate, passed=False, target_rps=rate, completed=1)

    none, _ = find_capacity(queue, 10.0, 17.0, min_rps=17.0)
    assert [s.rate_rps for s in none.steps] == [17.0, 34.0, 68.0] and none.capacity_rps == 0.0  # P99 78 > 2 x 27 ms
    assert no_rate_found(10.0, none, 17.0) is not None


def _truth(service: IdleService, policy: ServePolicy, target: float, requests: int = 8000) -> float:
    """The planted service's own capacity: the batcher over it on a virtual clock, rates tried downward from the
    full-batch bound in steps of 3% until one passes (not a search that assumes the passing rates reach down to
    zero); the middle of that step."""
    full = (service.a + service.b * policy.max_batch) * service.factor
    rate, failing = policy.max_batch / (full / 1e3), None
    while rate > 1.0:
        trace = serve_open_loop(
            poisson_arrivals(rate, requests / rate, 1), service, policy, service.new_clock(), requests / rate
        )
        common = dict(arrival="poisson", max_batch=policy.max_batch, target_rps=rate, target_p99_ms=target)
        if load_point(trace, warmup_s=0.1 * requests / rate, **common).passed:
            return rate if failing is None else (rate + failing) / 2
        failing, rate = rate, rate * 0.97
    return 0.0


@pytest.mark.parametrize(
    "service, target",
    [
        # an isolated batch takes 3x a back-to-back one; under load the device is seldom idle 1.5 ms
        (IdleService(0.5, 0.1, slow=3.0, idle_ms=1.5, jitter=0.1), 4.0),
        # a request served alone after the 1 ms wait misses 5 ms (1 + 4.1 ms), at every sparse rate and still at
        # half the full-batch bound; a saturated device serves back to back and passes: the passing rates do not
        # reach down to zero, and halving from half the bound finds none
        (IdleService(1.0, 0.02, slow=4.0, idle_ms=1.0, jitter=0.03), 5.0),
    ],
    ids=["busy", "sparse-fails"],
)
def test_the_prediction_follows_the_idle_the_load_leaves(service, target):
    policy = ServePolicy(8, 1.0)
    predicted = predict_capacity(_unloaded(service, 8), policy, target)
    assert predicted == pytest.approx(_truth(service, policy, target), rel=0.10)


def test_the_search_brackets_around_the_prediction_in_few_loads():
    service = IdleService(1.0, 0.0)
    request = serve_request(
        find_max=True, p99_ms=3.0, max_batch=1, max_wait_ms=0, duration_s=4.0, warmup_s=0.5, arrival="constant"
    )
    result = serve_policy(
        request, ServePolicy(1, 0.0), service, 300.0, service.new_clock, unloaded=_unloaded(service, 1)
    )
    c = result.capacity
    assert c.predicted_rps == pytest.approx(1000.0, rel=0.05) and c.capacity_rps <= 1000.0 + 1e-6 < c.failing_rps
    assert c.steps[0].rate_rps == c.predicted_rps and len(c.steps) <= 4  # no halving from half the bound
    assert abs(result.prediction_error()) < 0.05 and c.search_s is not None


def test_find_capacity_widens_its_steps_from_a_prediction():
    def measure(rate):
        from types import SimpleNamespace

        return SimpleNamespace(p99_ms=1.0, passed=rate <= 500, target_rps=rate, completed=1)

    capacity, _ = find_capacity(measure, 10.0, 100.0, factor=1.1)
    rates = [s.rate_rps for s in capacity.steps if s.phase == "bound"]
    assert rates[:4] == pytest.approx([100.0, 110.0, 133.1, 194.87], rel=1e-3)  # x1.1, x1.21, x1.4641, then x2
    assert capacity.capacity_rps <= 500 < capacity.failing_rps


def _remedy(name: str, field: str) -> Remedy:
    return Remedy(name, ((field, name),), ("cpu",), name, ())


def test_the_capacity_objective_picks_the_policy_and_remedy_the_planted_service_makes_best(monkeypatch):
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    # each remedy scales the service time; "wrong" is fastest but changes the output; "fast" and "fast2" stack
    factors = {"fast": 0.5, "fast2": 0.8, "slow": 1.5, "wrong": 0.2}
    remedies = [
        _remedy("fast", "precision"),
        _remedy("fast2", "mode"),
        _remedy("slow", "threads"),
        _remedy("wrong", "channels_last"),
    ]
    policies = (ServePolicy(1, 1.0), ServePolicy(8, 1.0))
    target = 8.0
    request = serve_request(find_max=True, p99_ms=target, max_batch=8, max_wait_ms=1.0, duration_s=2.0, warmup_s=0.5)

    def planted(recipe) -> IdleService:
        return IdleService(3.0, 0.2, factor=float(np.prod([factors[n] for n in recipe.names])), jitter=0.02)

    def evaluate(recipe):
        ok = "wrong" not in recipe.names
        verdict = AccuracyVerdict(ok, "rel_l2", "planted", 0.0 if ok else 0.5, 0.0)
        return Evaluated({"recipe": recipe.name}, verdict, _unloaded(planted(recipe), 8))

    def verify(recipe, settings, policy):
        service = planted(recipe)
        result = serve_policy(request, policy, service, 100.0, service.new_clock, unloaded=_unloaded(service, 8))
        return f"run-{recipe.name}", result

    found = capacity_search(remedies, policies, target, evaluate, verify)
    by_name = {c.recipe: c for c in found.candidates}
    assert by_name["wrong"].accurate is False and by_name["slow"].service_faster is False
    assert found.top == "fast+fast2" and found.recipe == "fast+fast2" and found.verdict == "higher"
    assert by_name["fast+fast2"].best_policy == ServePolicy(8, 1.0)  # a 3 ms fixed cost: batching wins
    assert found.top_run_id == "run-fast+fast2" and found.top_rps[0] > 1.5 * found.baseline_rps[0]
    assert json.loads(json.dumps(found.to_json()))["schema"] == "surrobench/capacity-v1"


def _planted_search(remedies: list[Remedy], planted) -> tuple:
    """:func:`capacity_search` over ``remedies`` on the services ``planted(recipe)`` (each accurate; P99 <= 8 ms,
    batches of 1 or 8 waiting 1 ms), each verified on its own service: (the search, its candidates by recipe)."""
    policies = (ServePolicy(1, 1.0), ServePolicy(8, 1.0))
    request = serve_request(find_max=True, p99_ms=8.0, max_batch=8, max_wait_ms=1.0, duration_s=2.0, warmup_s=0.5)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(planted(recipe), 8))

    def verify(recipe, settings, policy):
        service = planted(recipe)
        result = serve_policy(request, policy, service, 100.0, service.new_clock, unloaded=_unloaded(service, 8))
        return recipe.name, result

    found = capacity_search(remedies, policies, 8.0, evaluate, verify)
    return found, {c.recipe: c for c in found.candidates}


def test_a_remedy_that_speeds_the_full_batch_is_stacked_though_it_loses_alone(monkeypatch):
    # "graph" cuts the fixed cost of a batch, "tf32" the cost per request; tf32 alone carries a slow isolated tail
    # (its isolated request misses the target: predicted 0), yet its full batch is faster and graph+tf32 is best
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    remedies = [_remedy("graph", "mode"), _remedy("tf32", "precision")]

    def planted(recipe) -> IdleService:
        a = 2.0 * (0.3 if "graph" in recipe.names else 1.0)
        b = 0.6 * (0.3 if "tf32" in recipe.names else 1.0)
        slow = 5.0 if list(recipe.names) == ["tf32"] else 1.0
        return IdleService(a, b, slow=slow, idle_ms=3.0, jitter=0.02)

    found, by_name = _planted_search(remedies, planted)
    assert by_name["tf32"].best_predicted_rps < by_name["baseline"].best_predicted_rps
    assert by_name["graph+tf32"].best_predicted_rps > by_name["graph"].best_predicted_rps
    assert found.top == "graph+tf32" and found.recipe == "graph+tf32" and found.verdict == "higher"


def test_a_remedy_that_helps_only_on_top_of_the_lead_is_stacked(monkeypatch):
    # "tf32" changes nothing alone (an eager step bound by its fixed cost: its full batch is no faster), but under
    # "graph" the cost per request is what is left, and tf32 cuts it: graph+tf32 is best
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    remedies = [_remedy("tf32", "precision"), _remedy("graph", "mode")]

    def planted(recipe) -> IdleService:
        graph = "graph" in recipe.names
        b = 0.6 * (0.3 if graph and "tf32" in recipe.names else 1.0)
        return IdleService(2.0 * (0.3 if graph else 1.0), b, jitter=0.02)

    found, by_name = _planted_search(remedies, planted)
    assert not by_name["tf32"].service_faster  # alone, not faster than the baseline by the paired rule
    assert by_name["graph+tf32"].service_faster and found.top == "graph+tf32" and found.recipe == "graph+tf32"


def test_a_stack_is_tried_when_no_remedy_wins_alone(monkeypatch):
    # the H100's U-Net (docs/benchmarks/h200-capacity.md, 2026-12-07): "graph" cuts the fixed cost, predicted higher,
    # but its full batch is within the paired rule of the baseline's; "tf32" cuts the per-request cost but its
    # isolated request misses the target (predicted 0): neither wins alone, graph+tf32 is best; before, the baseline
    # was kept
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    remedies = [_remedy("graph", "mode"), _remedy("tf32", "precision")]

    def planted(recipe) -> IdleService:
        graph, tf32 = "graph" in recipe.names, "tf32" in recipe.names
        a, b = (1.2, 0.1925) if graph else (2.0, 0.1)  # batch 8: 2.74 ms against 2.8, within the paired rule
        slow = 5.0 if list(recipe.names) == ["tf32"] else 1.0
        return IdleService(a, b * (0.3 if tf32 else 1.0), slow=slow, idle_ms=3.0, jitter=0.02)

    found, by_name = _planted_search(remedies, planted)
    assert not by_name["graph"].service_faster and by_name["tf32"].best_predicted_rps == 0.0
    assert by_name["graph"].best_predicted_rps > by_name["baseline"].best_predicted_rps
    assert found.top == "graph+tf32" and found.recipe == "graph+tf32" and found.verdict == "higher"


def test_the_back_to_back_samples_are_always_four_equal_rounds_for_the_paired_rule():
    # the paired rule's split (records.paired.split_rounds) of the samples in order, the remainder left off the end
    from surrobench.api.capacity import PAIRED_ROUNDS, _rounds

    samples = tuple(float(v) for v in range(1, 16))
    assert _rounds(samples[:10]) == ((1.0, 2.0), (3.0, 4.0), (5.0, 6.0), (7.0, 8.0))
    assert _rounds(samples) == tuple(samples[i : i + 3] for i in range(0, 12, 3))
    assert len(_rounds(samples[:8])) == PAIRED_ROUNDS and sum(map(len, _rounds(samples[:8]))) == 8


def test_batch_one_policies_are_predicted_once(monkeypatch):
    # a batch of one never waits: its waits are one policy, simulated once per candidate
    from surrobench.api import capacity as api_capacity
    from surrobench.records.serve import Capacity

    calls = []
    monkeypatch.setattr(api_capacity, "predict_capacity", lambda u, p, *a: calls.append(p) or 100.0 * p.max_batch)
    service = IdleService(2.0, 0.1)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(service, 8))

    policies = (ServePolicy(1, 0.5), ServePolicy(1, 2.0), ServePolicy(8, 1.0))
    verified = PolicyResult(policies[2], (), Capacity(50.0, 800.0, 900.0, ()))
    found = capacity_search([], policies, 50.0, evaluate, lambda *_: ("run", verified))
    assert sorted(p.max_batch for p in calls) == [1, 8]
    assert found.candidates[0].predicted_rps == {
        "batch<=1 wait<=0.5ms": 100.0,
        "batch<=1 wait<=2ms": 100.0,
        "batch<=8 wait<=1ms": 800.0,
    }


def test_the_capacity_objective_answers_an_infeasible_target_without_a_load():
    service = IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(service, 1))

    def verify(*_):
        raise AssertionError("no load for an infeasible target")

    found = capacity_search([_remedy("fast", "precision")], (ServePolicy(1, 0.0),), 3.0, evaluate, verify)
    assert (
        found.infeasible
        and found.recipe == "baseline"
        and [c.recipe for c in found.candidates]
        == [
            "baseline",
            "fast",
        ]
    )


# -- the fresh-user trial's items ------------------------------------------------------------------------------


def _tiny(**options):
    common = dict(shapes="8", device="cpu", threads=1, warmup=1, duration_s=0.4, warmup_s=0.1, min_requests=0)
    return serve(nn.Conv2d(3, 1, 1), **{**common, **options})


def test_the_saturated_probe_runs_for_a_search_and_not_for_an_infeasible_target(monkeypatch):
    # a search measures each size's saturated cycle before predicting (the loads themselves left out here); a target
    # no rate meets is answered without it
    monkeypatch.setattr(
        serve_module, "find_capacity", lambda measure, target, *a, **k: (Capacity(target, 0, None, ()), [])
    )
    searched = _tiny(find_max=True, p99_ms=1000.0, max_batch=2)
    assert [u.batch for u in searched.unloaded] == [1, 2] and all(u.saturated_ms > 0 for u in searched.unloaded)
    infeasible = _tiny(find_max=True, p99_ms=1e-4, max_batch=2)
    assert infeasible.infeasible() and [u.saturated_ms for u in infeasible.unloaded] == [None, None]


def test_ctrl_c_in_the_saturated_probe_keeps_the_unloaded_samples_and_an_unprobed_size_is_said(monkeypatch):
    # the unloaded samples are in the record before the probe: Ctrl-C during it keeps them
    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(serve_module, "saturated_cycles", interrupted)
    with pytest.raises(Interrupted) as cut:
        _tiny(find_max=True, p99_ms=1000.0, max_batch=2)
    assert [u.batch for u in cut.value.partial.unloaded] == [1, 2]
    assert [u.saturated_ms for u in cut.value.partial.unloaded] == [None, None]
    # a probe budget that fits size 1 only: size 2 is named in a note, its cycle and loop time not measured ("-")
    monkeypatch.setattr(serve_module, "saturated_cycles", lambda s, u: saturated_cycles(s, u, budget_s=0.5))
    monkeypatch.setattr(
        serve_module, "find_capacity", lambda measure, target, *a, **k: (Capacity(target, 0, None, ()), [])
    )
    record = _tiny(find_max=True, p99_ms=1000.0, max_batch=2)
    assert [u.saturated_ms is None for u in record.unloaded] == [False, True]
    assert [u.loop_ms is None for u in record.unloaded] == [False, True]
    (note,) = [n for n in record.notes if n.startswith("batch sizes with no saturated cycle")]
    assert note.endswith(": 2") and "loop ms -: their loop time not charged" in note  # the sizes named
    assert [row[7] == "-" for row in sections(record)[0][2]] == [False, True]  # the loop ms column


def test_serve_warns_of_a_busy_host(monkeypatch):
    monkeypatch.setattr("surrobench.api.serve.host_load", lambda: (64.0, 2))
    monkeypatch.setattr("surrobench.api.serve.cpu_times", lambda: None)  # no /proc/stat: the load average read
    record = _tiny(rates=20, max_batch=1)
    assert any(n.startswith("busy host: 1-minute load average 64.0") for n in record.notes)
    assert record.unloaded and record.unloaded[0].batch == 1  # measured before the load


def test_too_few_requests_counts_completions_not_arrivals():
    arrivals = np.linspace(0.0, 1.0, 50)
    completion = arrivals + 0.001
    completion[::2] = np.nan  # half of them dropped
    trace = ServeTrace(
        arrivals, arrivals.copy(), completion, [1] * 25, list(arrivals[1::2]), list(completion[1::2]), [0.001] * 25
    )
    point = load_point(trace, arrival="poisson", max_batch=1, warmup_s=0.0, target_rps=50.0, target_p99_ms=5.0)
    assert point.requests == 50 and point.completed == 25 and point.slo_attainment == pytest.approx(0.5)
    # half dropped: the P99 falls among them (unbounded, a lower bound), which the drop's note says
    assert point.percentile(0.99).lower_bound and point.passed is False
    assert any(n.startswith("50 rps asked: 25 requests dropped") for n in load_warnings(point))
    done = arrivals + 0.001
    whole = ServeTrace(arrivals, arrivals.copy(), done, [1] * 50, list(arrivals), list(done), [0.001] * 50)
    few = load_point(whole, arrival="poisson", max_batch=1, warmup_s=0.0, target_rps=50.0)
    assert any(n.startswith("50 rps asked: 50 requests completed, too few") for n in load_warnings(few))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_closed_port_is_connection_refused_before_the_run_is_stored(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(UsageError, match="connection refused at 127.0.0.1"):
        serve("fno2d", url=f"http://127.0.0.1:{_closed_port()}/", rates=10, shapes="8", device="cpu", db=db)
    assert not db.exists()  # nothing stored: no abandoned run


def test_an_endpoint_that_refuses_every_request_names_the_error():
    pytest.importorskip("httpx")
    from surrobench.analysis.serve_load import NothingCompleted
    from surrobench.execution.http_load import http_open_loop

    trace = http_open_loop(f"http://127.0.0.1:{_closed_port()}/", np.array([0.0, 0.01]), 1.0)
    assert trace.errors == {"connection refused": 2} and not trace.server_seen
    with pytest.raises(NothingCompleted, match="no request completed: 2 x connection refused"):
        load_point(trace, arrival="poisson", max_batch=1, warmup_s=0.0, target_rps=10.0)


def test_an_endpoint_shows_unmeasured_columns_as_dashes():
    arrivals = np.linspace(0.0, 1.0, 20)
    trace = ServeTrace(arrivals, arrivals + 0.0001, arrivals + 0.01, server_seen=False)
    point = load_point(trace, arrival="poisson", max_batch=1, warmup_s=0.0, target_rps=20.0)
    assert point.mean_batch is None and point.device_busy is None
    assert point.queue_share is None and point.compute_share is None  # the server's queue is not compute
    cells = dict(zip(COLUMNS, point_cells(point)))
    assert [cells[c] for c in ("queue", "compute", "batch", "busy")] == ["-"] * 4


def test_a_bad_arrivals_file_is_refused_before_the_run_is_stored(tmp_path):
    bad, db = tmp_path / "a.txt", tmp_path / "r.db"
    bad.write_text("1.0\n0.5\n")
    with pytest.raises(UsageError, match="increasing"):
        _tiny(arrivals_file=bad, db=db)
    assert not db.exists()


def test_a_replay_longer_than_a_load_may_run_is_refused_as_a_unit_error(tmp_path, monkeypatch):
    """Timestamps in ms read as s would replay for 1,000 times as long: a span over MAX_STRETCH x duration_s is
    refused, naming both; a longer duration replays it. More arrivals than one load holds are refused too."""
    from surrobench.api.serve import MAX_STRETCH
    from surrobench.execution import arrivals

    ms = tmp_path / "ms.txt"
    ms.write_text("0\n250\n500\n")
    with pytest.raises(UsageError) as long:
        serve_request(arrivals_file=ms, duration_s=10.0)
    assert long.value.parameter == "arrivals_file" and long.value.others == ("duration_s",)
    assert serve_request(arrivals_file=ms, duration_s=500.0 / MAX_STRETCH).arrival == "replay"
    burst = tmp_path / "burst.txt"  # half a second of arrivals: a 1 s warm-up would leave none measured
    burst.write_text("".join(f"{i * 0.01}\n" for i in range(51)))
    assert serve_request(arrivals_file=burst).warmup_s == pytest.approx(0.5 / 4)
    monkeypatch.setattr(arrivals, "MAX_ARRIVALS_PER_LOAD", 2)
    with pytest.raises(UsageError) as many:
        arrivals.replay_arrivals(ms)
    assert many.value.parameter == "arrivals_file"


def test_conflicting_loads_are_refused_with_exit_2(capsys):
    with pytest.raises(UsageError, match=r"^concurrency and rates both given"):
        serve_request(rates=10, concurrency=4)
    assert run_cli(["serve", "--model", "fno2d", "--shape", "8", "--rate", "10", "--concurrency", "4"]) == 2
    err = capsys.readouterr().err
    assert "--concurrency" in err and "--rate" in err  # named by their flags


def test_rates_below_one_per_second_are_served():
    service = IdleService(100.0, 0.0)  # a slow 3-D model: 100 ms a request
    request = serve_request(rates=0.5, duration_s=20.0, warmup_s=1.0, min_requests=0, max_batch=1, max_wait_ms=0)
    (point,) = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points
    assert point.target_rps == 0.5 and point.completed == point.requests > 0
    assert dict(zip(COLUMNS, point_cells(point)))["offered rps"] == f"{point.offered_rps:.3g}"


def test_a_serve_v1_document_still_reads():
    service = IdleService(1.0, 0.0)
    request = serve_request(rates=100, duration_s=1.0, warmup_s=0.1, min_requests=0, p99_ms=5.0)
    point = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points[0]
    from dataclasses import asdict

    old = asdict(point)
    for key in ("completed", "slo_attainment", "errors"):
        del old[key]
    doc = {
        "schema": SERVE_V1,
        "run_id": "r",
        "created": "",
        "tag": None,
        "env": {},
        "workload": {},
        "url": None,
        "arrival": "poisson",
        "duration_s": 1.0,
        "warmup_s": 0.1,
        "seed": 0,
        "target_p99_ms": 5.0,
        "policies": [
            {
                "policy": {"max_batch": 1, "max_wait_ms": 0.0},
                "points": [old],
                "capacity": {"target_p99_ms": 5.0, "capacity_rps": 90.0, "failing_rps": 95.0, "steps": []},
            }
        ],
    }
    record = serve_from_json(doc)
    assert record.unloaded == () and record.policies[0].capacity.predicted_rps is None
    assert record.policies[0].points[0].completed is None


def test_the_objective_is_checked_before_anything_runs():
    from surrobench.api.optimize import optimize

    with pytest.raises(UsageError, match="^objective 'speed': choose latency, capacity"):
        optimize("fno2d", objective="speed")
    with pytest.raises(UsageError, match="^the capacity objective needs p99_ms"):
        optimize("fno2d", objective="capacity")
    with pytest.raises(UsageError, match="^p99_ms is the capacity objective's target"):
        optimize("fno2d", p99_ms=5.0)
    with pytest.raises(UsageError, match="^run is not taken by the capacity objective"):
        optimize(run="x", objective="capacity", p99_ms=5.0)


def test_a_remedy_that_makes_an_infeasible_target_feasible_is_recommended(monkeypatch):
    # eager's isolated request takes 4.2 ms, over P99 <= 3 ms; the remedy halves it: only the remedy is searched
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    request = serve_request(find_max=True, p99_ms=3.0, max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5)
    loads = []

    def planted(recipe) -> IdleService:
        return IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0, factor=0.5 if recipe.names else 1.0, jitter=0.02)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(planted(recipe), 1))

    def verify(recipe, settings, policy):
        service = planted(recipe)
        result = serve_policy(request, policy, service, 100.0, service.new_clock, unloaded=_unloaded(service, 1))
        loads.append(len(result.points))
        return recipe.name, result

    found = capacity_search([_remedy("fast", "precision")], (ServePolicy(1, 0.0),), 3.0, evaluate, verify)
    assert found.infeasible is None and found.baseline_rps == (0.0, 0.0) and loads[0] == 0 < loads[1]
    assert found.recipe == "fast" and found.verdict == "higher"


def test_a_baseline_the_check_under_load_finds_infeasible_carries_its_reason(monkeypatch):
    """A fresh-user trial: predicted 16.1 rps from a quiet unloaded measurement, then the verifying serve (on a busier
    host) answered "no rate meets P99 <= 100 ms"; the result read "0 rps (first failing 0)", ``infeasible`` null and
    no prediction note. Planted: the service the serve run measures is twice as slow as the one evaluated."""
    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    request = serve_request(find_max=True, p99_ms=3.0, max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(IdleService(1.0, 0.05), 1))

    def verify(recipe, settings, policy):
        service = IdleService(2.0, 0.1, slow=2.0, idle_ms=3.0)  # isolated 4.2 ms: over P99 <= 3 ms
        return "run-base", serve_policy(
            request, policy, service, 100.0, service.new_clock, unloaded=_unloaded(service, 1)
        )

    found = capacity_search([], (ServePolicy(1, 0.0),), 3.0, evaluate, verify)
    assert found.candidates[0].best_predicted_rps > 0 and found.baseline_rps == (0.0, 0.0)
    assert found.infeasible.startswith("no rate meets P99 <= 3 ms") and found.recipe == "baseline"
    assert [n.startswith("baseline: predicted") for n in found.notes] == [True]  # measured 0 of its prediction
    lines = capacity_lines(found)
    assert found.infeasible in lines and not any("first failing 0" in line for line in lines)


def test_the_optimize_command_refuses_capacity_options_without_the_objective(capsys):
    assert run_cli(["optimize", "--model", "fno2d", "--shape", "8", "--device", "cpu", "--max-batch", "4"]) == 2
    assert "--max-batch" in capsys.readouterr().err
    assert run_cli(["optimize", "--model", "fno2d", "--shape", "8", "--device", "cpu", "--objective", "capacity"]) == 2
    assert "needs --p99-ms" in capsys.readouterr().err


def test_capacity_verdicts_of_infeasible_brackets():
    from surrobench.results.serve_store import judge_capacities

    none, some = (PolicyResult(ServePolicy(1, 0.0), (), Capacity(5.0, *b, ())) for b in ((0.0, 0.0), (100.0, 105.0)))
    assert judge_capacities(none, some, 5.0)[2] == "higher"
    assert judge_capacities(some, none, 5.0)[2] == "lower"
    assert judge_capacities(none, none, 5.0)[2] == "same"
    # brackets that only touch (the trial's A/A pair: [37.5, 43.1) and [43.2, 47.5)) are no change: the ratio's lower
    # end, 1.002, does not clear the one rule's smallest effect of interest; one above it by more does
    low, touching, above = (
        PolicyResult(ServePolicy(1, 0.0), (), Capacity(40.0, *b, ()))
        for b in ((37.5, 43.1), (43.2, 47.5), (45.0, 47.5))
    )
    assert judge_capacities(low, touching, 40.0)[2] == judge_capacities(touching, low, 40.0)[2] == "same"
    assert judge_capacities(low, above, 40.0)[2] == "higher" and judge_capacities(above, low, 40.0)[2] == "lower"


def test_the_budget_bounds_the_candidates_and_a_prediction_the_load_disproves_is_a_note(monkeypatch):
    from surrobench.api import capacity as api_capacity
    from surrobench.records.serve import Capacity

    monkeypatch.setattr(api_capacity, "predict_capacity", lambda u, p, *a: 100.0)
    service = IdleService(2.0, 0.1)

    def evaluate(recipe):
        return Evaluated({}, AccuracyVerdict(True, "rel_l2", "", 0.0, 0.0), _unloaded(service, 8))

    remedies = [_remedy("graph", "mode"), _remedy("tf32", "precision")]
    policies = (ServePolicy(8, 1.0),)
    measured = Capacity(50.0, 800.0, 900.0, ())  # 8x the prediction
    verified = PolicyResult(policies[0], (), measured)
    found = capacity_search(remedies, policies, 50.0, evaluate, lambda *_: ("run", verified), budget_s=0.0)
    assert [c.recipe for c in found.candidates] == ["baseline"]
    skipped, disproved = found.notes
    assert skipped.endswith("graph, tf32") and "budget" in skipped
    assert disproved.startswith("baseline: predicted 100 rps, measured 800 rps")
    near = PolicyResult(policies[0], (), Capacity(50.0, 90.0, 95.0, ()))
    unbounded = capacity_search(remedies, policies, 50.0, evaluate, lambda *_: ("run", near))
    assert [c.recipe for c in unbounded.candidates] == ["baseline", "graph", "tf32"] and not unbounded.notes


def _cut_search(monkeypatch, cut: str, *, evaluating: bool = False):
    """The search of "fast" (half the service time, the top) and "wrong" (inaccurate) on planted services, Ctrl-C
    coming while the candidate ``cut`` is measured (``evaluating``) or while it is verified under load (the serve
    run "run-cut" stored interrupted); the baseline verifies as "run-base"."""
    from types import SimpleNamespace

    from surrobench.records.serve import Capacity

    monkeypatch.setattr(capacity_module, "SIMULATED_REQUESTS", 800)
    factors = {"fast": 0.5, "wrong": 0.2}

    def evaluate(recipe):
        if evaluating and recipe.name == cut:
            raise KeyboardInterrupt
        service = IdleService(3.0, 0.2, factor=float(np.prod([factors[n] for n in recipe.names])), jitter=0.02)
        verdict = AccuracyVerdict("wrong" not in recipe.names, "rel_l2", "", 0.0, 0.0)
        return Evaluated({}, verdict, _unloaded(service, 8))

    def verify(recipe, settings, policy):
        if recipe.name == cut:
            raise Interrupted("interrupted: 2 load point(s) stored as run run-cut", SimpleNamespace(run_id="run-cut"))
        return "run-base", PolicyResult(policy, (), Capacity(8.0, 300.0, 330.0, ()))

    remedies = [_remedy("fast", "precision"), _remedy("wrong", "channels_last")]
    with pytest.raises(Interrupted) as info:
        capacity_search(remedies, (ServePolicy(1, 1.0), ServePolicy(8, 1.0)), 8.0, evaluate, verify)
    return info.value


def test_ctrl_c_while_the_top_is_verified_keeps_the_candidates_and_the_baselines_capacity(monkeypatch):
    cut = _cut_search(monkeypatch, "fast")
    partial = cut.partial
    assert isinstance(partial, CapacityOptimization) and partial.top == "fast"
    assert [c.recipe for c in partial.candidates] == ["baseline", "fast", "wrong"]
    assert partial.baseline_run_id == "run-base" and partial.baseline_rps == (300.0, 330.0)
    assert partial.top_run_id is None and partial.verdict is None and partial.recipe is None
    assert "run-cut" in partial.notes[-1] and "run-cut" in str(cut) and "run-base" in str(cut)
    lines = capacity_lines(partial)  # the baseline's load, none of the top's
    assert [line.split(" measured under load: ")[0] for line in lines if "under load: " in line] == ["baseline"]
    assert any(line.endswith("300.0 rps (first failing 330.0) (serve run run-base)") for line in lines)


def test_ctrl_c_while_the_baseline_is_verified_keeps_the_candidates(monkeypatch):
    cut = _cut_search(monkeypatch, "baseline")
    partial = cut.partial
    assert [c.recipe for c in partial.candidates] == ["baseline", "fast", "wrong"] and partial.top == "fast"
    assert partial.baseline_rps is None and partial.baseline_run_id is None and partial.top_rps is None
    assert "run-cut" in partial.notes[-1] and "run-cut" in str(cut)


def test_ctrl_c_while_a_candidate_is_measured_keeps_those_measured(monkeypatch):
    partial = _cut_search(monkeypatch, "wrong", evaluating=True).partial
    assert [c.recipe for c in partial.candidates] == ["baseline", "fast"] and partial.baseline_rps is None
    assert partial.notes[-1].startswith("interrupted while measuring the candidates")
    assert partial.recipe is None  # nothing recommended: not the baseline by default
    assert CapacityOptimization.from_json(partial.to_json()).recipe is None


def test_the_capacity_objective_interrupted_writes_its_partial_document(tmp_path, capsys, monkeypatch):
    # Ctrl-C while the verifying serve runs: serve raises Interrupted with its own record, which optimize must not
    # pass on as its partial (the baseline alone searched, its serve cut before its first load point)
    from surrobench.api import capacity as api_capacity
    from surrobench.errors import EXIT_INTERRUPTED
    from surrobench.records.schemas import CAPACITY

    search = api_capacity.capacity_search

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(api_capacity, "capacity_search", lambda _, *args, **options: search([], *args, **options))
    monkeypatch.setattr("surrobench.api.serve.serve_policy", interrupted)
    out, db = tmp_path / "c.json", tmp_path / "r.db"
    args = ["--model", "pinn-mlp", "--shape", "64", "--device", "cpu", "--threads", "1", "--warmup", "1"]
    args += ["--objective", "capacity", "--p99-ms", "50", "--max-batch", "1", "--duration-s", "0.2"]
    code = run_cli(["optimize", *args, "--json", str(out), "--db", str(db)])
    captured = capsys.readouterr()
    assert code == EXIT_INTERRUPTED and "verifying the baseline" in captured.err  # the phase cut
    doc = json.loads(out.read_text())
    assert doc["schema"] == CAPACITY and [c["recipe"] for c in doc["candidates"]] == ["baseline"]
    assert doc["baseline_run_id"] is None and "capacity at P99 <= 50 ms" in captured.out
    with ResultStore(db) as store:  # the serve run cut, named by the note
        (run,) = store.list_runs()
        assert (run.kind, run.state) == ("serve", "interrupted") and run.run_id in doc["notes"][-1]


def _flat_then(busy):
    """The eager FNO on an H100 (every rate from 141 down to 36 rps failed, P99 5.3-6.6 ms, higher when sparser),
    with ``busy(rate)`` the P99 above 141 rps."""
    p99 = {141.0: 5.63, 128.2: 5.79}

    def measure(rate):
        got = busy(rate) if rate > 141.0 else p99.get(round(rate, 1), 5.34 if rate > 80 else 5.96)
        return SimpleNamespace(p99_ms=got, passed=got <= 5.0, target_rps=rate, completed=1)

    return measure


def test_a_tail_that_does_not_fall_with_the_rate_turns_the_search_upward():
    # a queue above 141 rps: the P99 grows with the rate, so no rate passes, and the reason says why
    found, _ = find_capacity(_flat_then(lambda r: 5.63 * r / 141.0), 5.0, 141.0, factor=1.1)
    rates = [round(s.rate_rps, 1) for s in found.steps]
    assert rates == [141.0, 128.2, 105.9, 72.4, 282.0, 564.0] and flat_tail(found.steps[:4])[0].rate_rps == 141.0
    assert found.capacity_rps == 0.0 and found.failing_rps == pytest.approx(72.4, abs=0.1)
    assert no_rate_found(5.0, replace(found, predicted_rps=141.0)) is not None
    # a busier device is faster (4.9 ms up to 1,200 rps, then a queue): the capacity lies above the failing tail
    busy, _ = find_capacity(_flat_then(lambda r: 4.9 if r <= 1200 else 5.63 * r / 1200), 5.0, 141.0, factor=1.1)
    assert 1200 * 0.95 <= busy.capacity_rps <= 1200 < busy.failing_rps and no_rate_found(5.0, busy) is None
    # ... and the rates measured below it failed: one note says the target holds only under load
    request = serve_request(find_max=True, p99_ms=5.0, max_batch=8, max_wait_ms=1.0)
    assert len(search_notes(request, (PolicyResult(ServePolicy(8, 1.0), (), busy),))) == 1
    assert search_notes(request, (PolicyResult(ServePolicy(8, 1.0), (), replace(busy, steps=busy.steps[5:])),)) == ()
    # a queue's tail falls with the load: the search goes down to a passing rate, no upward turn
    queue, _ = find_capacity(
        lambda r: SimpleNamespace(p99_ms=r / 20, passed=r <= 80, target_rps=r, completed=1), 5.0, 141.0, factor=1.1
    )
    assert 0 < queue.capacity_rps <= 80 and max(s.rate_rps for s in queue.steps) == 141.0


def test_a_candidate_that_meets_the_target_where_the_baseline_meets_it_nowhere_is_verified(monkeypatch):
    # the same median service, a tail past the target for the baseline only (threads contending on a busy host):
    # the median is not faster by the paired rule, yet only the candidate can meet the target at any rate
    from surrobench.api import capacity as api_capacity

    base = UnloadedLatency(1, 1.0, (2.0,) * 40, tuple([2.0] * 38 + [60.0, 60.0]))
    lean = UnloadedLatency(1, 1.0, (2.0,) * 40, (2.0,) * 40)
    monkeypatch.setattr(api_capacity, "predict_capacity", lambda u, *a: 0.0 if u[1] is base else 400.0)

    def evaluate(recipe):
        verdict = AccuracyVerdict(True, "rel_l2", "planted", 0.0, 0.0)
        return Evaluated({}, verdict, {1: lean if recipe.remedies else base})

    def verify(recipe, settings, policy):
        got = Capacity(50.0, 380.0, 420.0, ()) if recipe.remedies else Capacity(50.0, 0.0, 10.0, ())
        return f"run-{recipe.name}", PolicyResult(policy, (), got)

    found = capacity_search([_remedy("threads=1", "threads")], (ServePolicy(1, 0.0),), 50.0, evaluate, verify)
    (cand,) = [c for c in found.candidates if c.recipe == "threads=1"]
    assert cand.service_faster is False and found.top == "threads=1" and found.top_run_id == "run-threads=1"
    assert found.verdict == "higher" and found.recipe == "threads=1"

    # the recipe's passing load at 380 rps too short to bound its P99 from above: it may fail there, as the
    # baseline's [0, 10) may hold all of it: not higher (compare's one rule), the baseline recommended
    from surrobench.records.serve import Percentile

    service = PlantedService(1.0)
    request = serve_request(rates=[100], p99_ms=50.0, max_batch=1, max_wait_ms=0, duration_s=0.5, warmup_s=0.1)
    (measured,) = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points
    noisy = replace(measured, target_rps=380.0, passed=True, percentiles=(Percentile(0.99, 45.0, (40.0, None), 3),))

    def verify_noisy(recipe, settings, policy):
        run_id, result = verify(recipe, settings, policy)
        return run_id, replace(result, points=(noisy,)) if recipe.remedies else result

    found = capacity_search([_remedy("threads=1", "threads")], (ServePolicy(1, 0.0),), 50.0, evaluate, verify_noisy)
    assert found.verdict == "inconclusive" and found.recipe == "baseline"
    assert found.top_rps == (noisy.offered_rps, 420.0)  # the rate its passing load offered; no load kept at 420


def test_batches_slower_under_load_than_unloaded_are_named_once_per_policy():
    # the eager AFNO on an H100: 7.3 ms a request at 39.5 rps against 4.8 ms back to back unloaded (1.5x)
    from surrobench.analysis.capacity import SLOWER_UNDER_LOAD, slowdown_under_load

    service = PlantedService(1.0)  # 1 ms a request, every load at batch 1
    request = serve_request(rates=[100, 200], p99_ms=5.0, max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5)
    result = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock)
    honest = {1: UnloadedLatency(1, 1.0, (1.0,) * 5, (1.0,) * 5, 0.0)}
    assert [slowdown_under_load(p, honest) for p in result.points] == [None, None]
    fast = {
        1: UnloadedLatency(1, 1.0, (0.5,) * 5, (0.5,) * 5, 0.0),
        8: UnloadedLatency(8, 1.0, (1.0,) * 5, (1.0,) * 5, 0.0),
    }
    ratios = [slowdown_under_load(p, fast) for p in result.points]
    assert all(r is not None and r[1] == 1 and r[0] > SLOWER_UNDER_LOAD for r in ratios)
    assert len(search_notes(request, (result,), fast)) == 1 and search_notes(request, (result,), honest) == ()
    endpoint = replace(result.points[0], compute_share=None)  # an endpoint's service is not timed
    assert slowdown_under_load(endpoint, fast) is None


def test_a_capacity_whose_boundary_lies_within_the_loads_noise_is_unresolved():
    # a trial's multigrid net: capacity 18.0 rps at P99 <= 80 ms with the P99 there 69.2 [60.9, 94.0] ms; a trial's
    # serve --p99-ms 20: 260.1 rps asked offered 267.1 and passed, 266.6 asked offered 267.1 too and failed
    from surrobench.records.serve import Capacity, Percentile, PolicyResult, SearchStep

    service = PlantedService(1.0)  # about 1 ms a request: its P99 interval far below a 5 ms target
    request = serve_request(rates=[100, 200], p99_ms=5.0, max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5)
    points = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points
    steps = tuple(SearchStep(p.target_rps, p.p99_ms, p.target_rps == 100, "bound") for p in points)
    clear = PolicyResult(ServePolicy(1, 0.0), points, Capacity(5.0, 100.0, 200.0, steps))
    assert clear.capacity_offered_rps() == (points[0].offered_rps, points[1].offered_rps)
    assert clear.capacity_unresolved() is None and clear.to_json()["capacity_unresolved"] is None
    wide = replace(points[0], percentiles=(Percentile(0.99, 4.0, (3.0, 7.0), 5),))  # holds 5 ms
    assert replace(clear, points=(wide, points[1])).capacity_unresolved() is not None
    overlap = replace(clear, points=(points[0], replace(points[1], offered_rps=points[0].offered_rps)))
    assert overlap.to_json()["capacity_offered_rps"] == [points[0].offered_rps] * 2
    assert overlap.capacity_unresolved() is not None and overlap.to_json()["capacity_unresolved"] is not None
    assert search_notes(serve_request(find_max=True, p99_ms=5.0, max_batch=1, max_wait_ms=0), (overlap,)) == ()


def test_a_tail_just_above_the_target_over_a_range_of_rates_is_a_note():
    # the H100's tf32 U-Net (docs/benchmarks/h200-capacity.md, 2026-12-07): P99 5.5-5.7 ms against 5 ms from 270 to
    # 2,525 rps, passing at 236: a capacity that hangs on the target; a queue's tail (far above it) is no such note
    from surrobench.records.serve import Capacity, SearchStep

    tried = [(3361, 87.3), (3056, 22.3), (2525, 5.55), (1725, 5.64), (862, 5.53), (431, 5.47), (216, 4.79)]
    tried += [(323, 8.05), (270, 5.74), (243, 9.11), (229, 4.74), (236, 4.15)]
    steps = tuple(SearchStep(rate, p99, p99 <= 5.0, "bound") for rate, p99 in tried)
    request = serve_request(find_max=True, p99_ms=5.0, max_batch=8, max_wait_ms=1.0)
    plateau = PolicyResult(ServePolicy(8, 1.0), (), Capacity(5.0, 236.0, 243.0, steps))
    queue = PolicyResult(ServePolicy(8, 1.0), (), Capacity(5.0, 236.0, 243.0, steps[:2] + steps[6:7] + steps[-2:]))
    assert len(search_notes(request, (plateau,))) == 1 and search_notes(request, (queue,)) == ()
    one_near = replace(plateau.capacity, steps=steps[:3] + steps[-3:])  # one load near the target is no range
    assert search_notes(request, (replace(plateau, capacity=one_near),)) == ()


def test_one_slow_isolated_sample_of_ten_is_no_infeasible_verdict():
    """A fresh-user trial on a busy host: 10 isolated samples whose slowest took 217 ms answered "no rate meets
    P99 <= 40 ms" at once; the same command minutes later found 517 rps. The P99's 95% lower bound over 10 samples
    is their second largest."""
    from surrobench.analysis.capacity import infeasible_reason
    from surrobench.records.serve import UnloadedLatency

    def one(isolated):
        return {1: UnloadedLatency(1, 0.0, tuple(isolated), (5.0,) * 10)}

    assert infeasible_reason(one([5.0] * 9 + [217.0]), 40.0) is None
    assert infeasible_reason(one([5.0] * 8 + [60.0, 217.0]), 40.0).startswith("no rate meets P99 <= 40 ms")
