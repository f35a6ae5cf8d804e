"""serve's limits, checked before anything runs: the arrivals one load may hold, the default warm-up, the
rates and counts it takes; the closed loop's min_requests, and the note when a load was stretched to its cap."""

from __future__ import annotations

from dataclasses import replace
import tracemalloc

import pytest
from torch import nn

from synthetic import PlantedService

from surrobench.api.serve import (
    MAX_STRETCH,
    find_capacity,
    max_rate_rps,
    offered_duration_s,
    serve,
    serve_policy,
    serve_request,
    stretch_capped,
    stretch_notes,
)
from surrobench.errors import UsageError
from surrobench.execution.arrivals import MAX_ARRIVALS_PER_LOAD, constant_arrivals, poisson_arrivals
from surrobench.records.serve import ServePolicy


@pytest.mark.parametrize("rate", [1e12, 1e7])
def test_a_rate_past_the_arrival_bound_is_refused_before_anything_is_allocated(rate):
    tracemalloc.start()
    try:
        with pytest.raises(UsageError) as bad:
            serve(nn.Conv2d(3, 1, 1), rates=rate, duration_s=0.5, warmup_s=0.1, shapes="8", device="cpu", threads=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert bad.value.parameter == "rates" and bad.value.others == ("duration_s",)
    assert peak < 50e6  # the trial's 1e12 asked numpy for 3.64 TiB, 1e7 took 850 MB
    with pytest.raises(UsageError) as direct:
        poisson_arrivals(rate, 0.5, 0)
    assert direct.value.parameter == "rates"
    with pytest.raises(UsageError):
        constant_arrivals(rate, 0.5)


def test_the_bound_counts_the_offered_duration_and_max_rate_is_the_highest_allowed():
    request = serve_request(rates=100, duration_s=0.5, warmup_s=0.1)
    top = max_rate_rps(request)
    assert top == MAX_ARRIVALS_PER_LOAD / 0.5
    serve_request(rates=top, duration_s=0.5, warmup_s=0.1)  # at the bound: allowed
    with pytest.raises(UsageError):
        serve_request(rates=top * 1.01, duration_s=0.5, warmup_s=0.1)
    # 1e5 rps x 1 s is 1e5 arrivals, but min_requests stretches the load to 10.1 s: 1.01e6 arrivals
    stretched = dict(duration_s=1.0, warmup_s=0.5, min_requests=800_000)
    with pytest.raises(UsageError) as bad:
        serve_request(rates=1e5, **stretched)
    assert bad.value.parameter == "rates"
    request = serve_request(rates=max_rate_rps(serve_request(rates=1, **stretched)), **stretched)
    (rate,) = request.rates
    assert rate * offered_duration_s(request, rate) <= MAX_ARRIVALS_PER_LOAD * (1 + 1e-9)
    # a min_requests no load could hold
    with pytest.raises(UsageError) as count:
        serve_request(rates=10, min_requests=MAX_ARRIVALS_PER_LOAD)
    assert count.value.parameter == "min_requests"
    # replay and closed loop have no rate to bound
    assert serve_request(concurrency=4, duration_s=0.5).concurrencies == (4,)


def test_the_search_offers_no_rate_past_the_bound():
    def measure(rate):
        from types import SimpleNamespace

        return SimpleNamespace(p99_ms=1.0, passed=True, target_rps=rate, completed=1)  # passes everything

    capacity, points = find_capacity(measure, 10.0, 3000.0, max_rps=10_000.0)
    assert max(s.rate_rps for s in capacity.steps) == 10_000.0
    assert capacity.capacity_rps == 10_000.0 and capacity.failing_rps is None
    assert [s.rate_rps for s in capacity.steps] == [3000.0, 6000.0, 10_000.0]
    started_above, _ = find_capacity(measure, 10.0, 1e9, max_rps=10_000.0)
    assert [s.rate_rps for s in started_above.steps] == [10_000.0]


def test_the_default_warm_up_fits_a_short_duration():
    assert serve_request(rates=10, duration_s=1).warmup_s == 0.25
    assert serve_request(rates=10).warmup_s == 1.0  # duration 10 s
    assert serve_request(rates=10, duration_s=1, warmup_s=0).warmup_s == 0.0
    with pytest.raises(UsageError) as bad:
        serve_request(rates=10, duration_s=1, warmup_s=1)
    assert bad.value.parameter == "warmup_s"


@pytest.mark.parametrize("rates", [-5, 0, "10,0", float("inf")])
def test_a_rate_must_be_above_zero(rates):
    with pytest.raises(UsageError) as bad:
        serve_request(rates=rates)
    assert bad.value.parameter == "rates" and "> 0" in bad.value.detail and ">= 0" not in bad.value.detail


def test_wait_and_concurrency_keep_their_own_lower_bounds():
    assert serve_request(rates=10, max_wait_ms=0).policies == (ServePolicy(8, 0.0),)
    for value in (-1, 0, 1.5, float("inf")):
        with pytest.raises(UsageError) as bad:
            serve_request(concurrency=value)
        assert bad.value.parameter == "concurrency" and ">= 1" in bad.value.detail
    with pytest.raises(UsageError) as wait:
        serve_request(rates=10, max_wait_ms=-1)
    assert wait.value.parameter == "max_wait_ms" and ">= 0" in wait.value.detail


def test_the_closed_loop_runs_until_min_requests_arrived():
    # concurrency 2 over a 10 ms service: 200 requests/s, ~80 after a 0.1 s warm-up of a 0.5 s duration
    service = PlantedService(10.0)
    common = dict(concurrency=2, max_batch=2, max_wait_ms=0, duration_s=0.5, warmup_s=0.1)
    short = serve_policy(serve_request(**common, min_requests=0), ServePolicy(2, 0.0), service, 0, service.new_clock)
    assert short.points[0].requests < 100
    request = serve_request(**common, min_requests=500)
    (point,) = serve_policy(request, ServePolicy(2, 0.0), service, 0, service.new_clock).points
    assert 500 <= point.requests < 510 and not stretch_capped(request, point)
    assert len(stretch_notes(request, [point])) == 1  # stretched past the 0.5 s asked, not capped: said all the same
    # 5,000 would need 25 s; the cap is 20 x 0.5 s: stopped there, and a note says why
    request = serve_request(**common, min_requests=5000)
    (point,) = serve_policy(request, ServePolicy(2, 0.0), service, 0, service.new_clock).points
    assert point.requests < 5000 and service.clock.now() <= MAX_STRETCH * 0.5 + 0.05
    assert stretch_capped(request, point) and len(stretch_notes(request, [point])) == 1
    # a 6 s step: one request measured by the cap has no arrival span (offered_rps 0); still said, with the way out
    one = replace(point, requests=1, offered_rps=0.0)
    assert stretch_capped(request, one) and len(stretch_notes(request, [one])) == 1


def test_an_open_loop_rate_capped_short_of_min_requests_is_noted():
    service = PlantedService(1.0)
    request = serve_request(rates="2,2000", max_batch=1, max_wait_ms=0, duration_s=1.0, warmup_s=0.1)
    low, high = serve_policy(request, ServePolicy(1, 0.0), service, 0, service.new_clock).points
    assert offered_duration_s(request, 2.0) == MAX_STRETCH * 1.0  # 368 requests at 2 rps need ~220 s
    assert stretch_capped(request, low) and not stretch_capped(request, high)
    assert len(stretch_notes(request, [low])) == 1 and stretch_notes(request, [high]) == []
    # judged by the count that arrived, not the time expected for it: a Poisson count that reached it is no shortfall
    assert not stretch_capped(request, replace(low, requests=request.min_requests)) and request.min_requests > 0
    unstretched = serve_request(rates=2, duration_s=1.0, min_requests=0)
    assert not stretch_capped(unstretched, low)


def test_an_open_loop_rate_stretched_short_of_its_cap_is_noted_once():
    service = PlantedService(1.0)
    request = serve_request(rates="200,2000", max_batch=1, max_wait_ms=0, duration_s=1.0, warmup_s=0.1)
    stretched, plain = serve_policy(request, ServePolicy(1, 0.0), service, 0, service.new_clock).points
    assert 1.0 < offered_duration_s(request, 200.0) < MAX_STRETCH * 1.0  # 368 requests at 200 rps need ~2.3 s
    assert not stretch_capped(request, stretched) and len(stretch_notes(request, [stretched])) == 1
    assert offered_duration_s(request, 2000.0) == 1.0 and stretch_notes(request, [plain]) == []


def test_a_search_says_its_stretched_loads_once():
    # a find-max search printed one "offered for N s" line per load it stretched, capped or not
    service = PlantedService(1.0)
    request = serve_request(rates="2,3,200,300,2000", max_batch=1, max_wait_ms=0, duration_s=1.0, warmup_s=0.1)
    points = serve_policy(request, ServePolicy(1, 0.0), service, 0, service.new_clock).points
    assert [stretch_capped(request, p) for p in points] == [True, True, False, False, False]
    assert sum(bool(stretch_notes(request, [p])) for p in points) == 4  # each alone is said
    assert len(stretch_notes(request, list(points))) == 1  # together, once
    assert stretch_notes(request, [points[-1]]) == []  # offered for the duration asked: nothing to say


def test_the_record_carries_the_stretch_note():
    record = serve(
        nn.Conv2d(3, 1, 1),
        rates=40,
        max_batch=1,
        max_wait_ms=0,
        duration_s=0.05,  # stretched at most to 1 s: ~40 requests of the 368
        shapes="8",
        device="cpu",
        threads=1,
        warmup=1,
    )
    (point,) = record.policies[0].points
    request = serve_request(rates=40, max_batch=1, max_wait_ms=0, duration_s=0.05)
    assert record.warmup_s == pytest.approx(0.0125)  # a quarter of the duration, not the 1 s that would refuse it
    assert stretch_capped(request, point)
    assert set(stretch_notes(request, [point])) <= set(record.notes)
