"""serve: the peak search on a planted service, a tiny model served and stored, JSON, the page, HTTP mode."""

from __future__ import annotations

from dataclasses import replace
import importlib.util
import json
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from synthetic import PlantedService, serve_record

from surrobench.api.serve import find_capacity, serve, serve_policy, serve_request
from surrobench.errors import Interrupted, UsageError
from surrobench.cli.options import usage_line
from surrobench.records.serve import ServePolicy, serve_from_json
from surrobench.report.html import serve_page
from surrobench.results.serve_store import load_serve
from surrobench.results.store import SCHEMA_VERSION, ResultStore

ROOT = Path(__file__).resolve().parents[2]


def test_peak_search_brackets_the_planted_service_rate():
    # constant arrivals, 1 ms per request, batch 1: the latency is 1 ms below 1,000 rps and grows without
    # bound above it, so the capacity at P99 <= 3 ms is 1,000 rps
    service = PlantedService(1.0, 0.0)
    request = serve_request(
        find_max=True, p99_ms=3.0, max_batch=1, max_wait_ms=0, duration_s=4.0, warmup_s=0.5, arrival="constant"
    )
    result = serve_policy(request, ServePolicy(1, 0.0), service, start_rps=300.0, clock_factory=service.new_clock)
    c = result.capacity
    assert c.capacity_rps <= 1000.0 < c.failing_rps
    assert (c.failing_rps - c.capacity_rps) / c.capacity_rps <= 0.05
    assert [s.phase for s in c.steps[:3]] == ["bound", "bound", "bound"]  # 300, 600, 1200
    assert all(s.passed == (s.rate_rps <= 1000.0) for s in c.steps)
    assert len(result.points) == len(c.steps)


def test_batching_raises_the_planted_capacity():
    # a batch of k costs 2 + 0.1 k ms: batch 1 serves < 476 rps, batch 8 up to 8 / 2.8 ms = 2,857 rps
    found = {}
    for max_batch in (1, 8):
        service = PlantedService(2.0, 0.1)
        request = serve_request(
            find_max=True, p99_ms=20.0, max_batch=max_batch, max_wait_ms=1.0, duration_s=3.0, warmup_s=0.5
        )
        found[max_batch] = serve_policy(
            request, ServePolicy(max_batch, 1.0), service, 200.0, service.new_clock
        ).capacity
    assert found[1].capacity_rps < 1000 / 2.1
    assert found[8].capacity_rps > 2 * found[1].capacity_rps
    assert found[8].capacity_rps < 8 / 2.8e-3


def test_find_capacity_halves_when_the_start_fails():
    def measure(rate):
        from types import SimpleNamespace

        return SimpleNamespace(
            p99_ms=1.0 if rate <= 100 else rate / 5, passed=rate <= 100, target_rps=rate, completed=1
        )

    capacity, points = find_capacity(measure, 10.0, 1000.0)
    assert capacity.steps[0].passed is False and capacity.capacity_rps <= 100 < capacity.failing_rps


def test_bad_requests_are_usage_errors():
    with pytest.raises(UsageError, match="^find_max needs p99_ms, the latency target") as needs:
        serve_request(find_max=True)
    assert usage_line(needs.value).startswith("--find-max needs --p99-ms, the latency target")  # the CLI's words
    with pytest.raises(UsageError, match=r"^rates \(requests/s\), find_max with p99_ms, concurrency or arrivals_file"):
        serve_request()
    with pytest.raises(UsageError, match="^warmup_s 1.0: must be >= 0 and shorter than duration_s 1.0"):
        serve_request(rates=10, duration_s=1.0, warmup_s=1.0)
    with pytest.raises(UsageError, match="one config"):
        serve(nn.Conv2d(3, 1, 1), rates=10, shapes="8,16", device="cpu", threads=1)


def test_tiny_model_served_stored_and_rendered(tmp_path):
    db = tmp_path / "r.db"
    record = serve(
        nn.Conv2d(3, 1, 1),
        rates="20",
        max_batch="1,2",
        max_wait_ms=1,
        duration_s=0.6,
        min_requests=0,
        warmup_s=0.1,
        shapes="8",
        device="cpu",
        threads=1,
        warmup=1,
        db=db,
        p99_ms=1000.0,
    )
    assert [p.policy.max_batch for p in record.policies] == [1, 2]
    assert record.created.endswith("+00:00")  # created in UTC, as every run (records.run)
    assert record.workload["request_shape"] == [1, 3, 8, 8]
    assert set(record.workload["service_ms"]) == {"1", "2"}
    point = record.policies[0].points[0]
    assert point.requests > 0 and point.dropped == 0 and point.passed is True
    assert point.queue_share + point.compute_share == pytest.approx(1.0)
    doc = json.loads(json.dumps(record.to_json()))
    assert doc["schema"] == "surrobench/serve-v2" and doc["find_max"] is False  # loads offered, no capacity searched
    assert serve_from_json(doc) == record
    with ResultStore(db) as store:
        assert load_serve(store, record.run_id) == record
        assert store.run_state(record.run_id) == "complete"
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 7
    page = serve_page(record)
    assert "data:image/png;base64," in page and "<script" not in page
    from surrobench.report.serve_tables import serve_tables

    unloaded, narrow = serve_tables(record, width=100)[
        :2
    ]  # the unloaded latency first; the rates, P99, drops and verdict stay; others named
    headers = [str(c.header) for c in narrow.columns]
    assert {"offered rps", "P99 ms [95% CI]", "dropped", "pass"} <= set(headers) and "gen" not in headers
    assert [str(c.header) for c in unloaded.columns][:3] == ["batch", "isolated P50 ms", "isolated P99 ms"]
    assert "gen" in str(narrow.caption)


def _example_server():
    spec = importlib.util.spec_from_file_location("_example_serve_http", ROOT / "examples" / "serve_http.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_http_mode_against_the_example_server():
    pytest.importorskip("httpx")
    server = _example_server().make_server(nn.Conv2d(3, 1, 1), (torch.randn(1, 3, 8, 8),), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        record = serve(
            "fno2d",
            url=url,
            rates=40,
            duration_s=0.75,
            warmup_s=0.1,
            drain_s=5.0,
            min_requests=0,
            shapes="8",
            device="cpu",
        )
        # the endpoint's isolated P99 over the target: answered before any load
        infeasible = serve("fno2d", url=url, find_max=True, p99_ms=1e-3, duration_s=0.5, shapes="8", device="cpu")
    finally:
        server.shutdown()
        server.server_close()
    (result,) = record.policies
    point = result.points[0]
    assert result.policy is None and record.url == url
    assert [u.batch for u in record.unloaded] == [1] and record.unloaded[0].isolated_p50_ms > 0
    assert point.mean_batch is None and point.device_busy is None and point.compute_share is None
    (cut,) = infeasible.policies
    assert cut.points == () and cut.capacity.infeasible.startswith("no rate meets P99 <= 0.001 ms")
    assert point.dropped == 0 and point.requests > 10
    assert point.percentile(0.5).value_ms > 0
    assert serve_from_json(json.loads(json.dumps(record.to_json()))) == record


def test_capacity_comparison_of_planted_services():
    from dataclasses import replace

    from surrobench.records.serve import Capacity, PolicyResult
    from surrobench.results.serve_store import compare_capacity

    base = serve_from_json(serve_record())
    slow, fast = _searched_record("slow", 2.0), _searched_record("fast", 1.0)
    cmp = compare_capacity(slow, fast)
    assert cmp.verdict == "higher" and cmp.ratio == pytest.approx(2.0, rel=0.1)
    assert compare_capacity(fast, slow).verdict == "lower"
    assert compare_capacity(slow, slow).verdict == "same"
    # a search that never failed is a lower bound only: above it, BASE may be faster or slower than NEW
    open_base = replace(base, policies=(PolicyResult(ServePolicy(1, 0.0), (), Capacity(5.0, 150.0, None, ())),))
    assert compare_capacity(open_base, fast).verdict == "inconclusive"
    assert compare_capacity(open_base, fast).ratio_interval[0] is None  # new_lo / base_hi, base_hi unknown
    with pytest.raises(UsageError, match="two runs of serve with find_max"):
        compare_capacity(replace(base, policies=(PolicyResult(ServePolicy(1, 0.0), ()),)), fast)


def test_a_serve_comparison_names_the_settings_that_differ_and_why_base_has_no_ratio():
    # a fresh-user trial compared a serve run at torch's default threads, which met no rate at its target, with one
    # at threads=1: "NEW / BASE capacity - [63.39, -]: higher", and neither the table nor the JSON named the threads
    from dataclasses import replace

    from surrobench.api.compare import ComparedServeRuns
    from surrobench.records.serve import Capacity, PolicyResult
    from surrobench.report.serve_tables import capacity_line
    from surrobench.results.serve_store import CapacityComparison, compare_capacity

    none_met = (PolicyResult(ServePolicy(1, 0.0), (), Capacity(5.0, 0.0, 9.6, (), infeasible="no rate meets it")),)
    base = replace(_searched_record("base", 2.0), policies=none_met)
    new = _searched_record("new", 1.0)
    new = replace(new, workload={**new.workload, "threads": 1})
    cmp = compare_capacity(base, new)
    assert cmp.settings_differ == ("eager", "eager threads=1") and cmp.ratio is None and cmp.verdict == "higher"
    doc = json.loads(json.dumps(cmp.to_json()))
    assert doc["settings_differ"] == ["eager", "eager threads=1"]
    old = {k: v for k, v in doc.items() if k not in ("schema", "settings_differ")}  # a document written before it
    assert CapacityComparison.from_json(old).settings_differ is None
    line = capacity_line(ComparedServeRuns(base, new, cmp))
    assert "settings differ: BASE eager, NEW eager threads=1" in line and "BASE met no rate" in line
    assert compare_capacity(new, new).settings_differ is None


def test_a_searched_capacity_is_the_rate_its_passing_load_offered(tmp_path):
    # a trial's serve --p99-ms 20 headlined "capacity 260.1 rps (first failing 266.6)", the rates asked, where both
    # loads offered 267.1: a Poisson load offers its own sample of the rate asked, and the capacity is what it offered
    from surrobench.results.serve_store import begin_serve, save_serve

    record = _searched_record("p", 2.0, arrival="poisson", duration_s=1.0, min_requests=0)
    best, c = record.best(), record.best().capacity
    offered = {p.target_rps: p.offered_rps for p in best.points}
    assert best.capacity_offered_rps() == (offered[c.capacity_rps], offered[c.failing_rps])
    assert offered[c.capacity_rps] != c.capacity_rps  # the asked rate stays the search's, in capacity and its steps
    doc = json.loads(json.dumps(record.to_json()))
    assert doc["policies"][0]["capacity_offered_rps"] == list(best.capacity_offered_rps())
    assert doc["policies"][0]["capacity"]["capacity_rps"] == c.capacity_rps and serve_from_json(doc) == record
    with ResultStore(tmp_path / "r.db") as store:
        begin_serve(store, record, None)
        save_serve(store, record)
        row = store.conn.execute("SELECT capacity_rps, failing_rps FROM serve_runs").fetchone()
    assert tuple(row) == (c.capacity_rps, c.failing_rps)  # the columns keep the asked rates they always held


def test_a_passing_load_that_offered_more_than_the_failing_one_is_noise_not_a_higher_capacity():
    """A review's case: the passing load offered 267.1 rps, the failing one 265.0 (two Poisson samples); against a
    capacity offered at 272.0 that is 1.018x, under the rule's 2%. The inverted bracket is put in order and counts as
    widened by noise: compare says inconclusive, not higher."""
    from surrobench.records.serve import Capacity, LoadPoint, Percentile, PolicyResult
    from surrobench.results.serve_store import judge_capacities

    def load(asked, offered, p99, ok):
        pcs = tuple(Percentile(q, p99, (p99 * 0.98, p99 * 1.02), 10) for q in (0.5, 0.9, 0.95, 0.99))
        return LoadPoint(
            "poisson", asked, None, offered, offered, 1000, 10, 0, 0, pcs, p99, p99, *[None] * 5, 0.0, 0.0, passed=ok
        )

    def result(passing, failing):
        points = (load(*passing, 4.0, True), load(*failing, 6.0, False))
        return PolicyResult(ServePolicy(1, 0.0), points, Capacity(5.0, passing[0], failing[0], ()))

    inverted, higher = result((260.1, 267.1), (266.6, 265.0)), result((270.0, 272.0), (290.0, 291.0))
    assert inverted.noise_bracket(5.0) == (265.0, 267.1) and inverted.capacity_unresolved() is not None
    noise, verdict = judge_capacities(inverted, higher, 5.0)[1:]
    assert verdict == "inconclusive" and "base" in noise


def test_capacities_within_their_loads_noise_are_inconclusive():
    from surrobench.report.serve_tables import capacity_line
    from surrobench.api.compare import ComparedServeRuns
    from surrobench.records.serve import Capacity, PolicyResult
    from surrobench.results.serve_store import compare_capacity, judge_capacities

    # the same 2 ms service twice, short Poisson loads: too few requests to bound any P99 from above, so each
    # capacity's passing load may truly fail; the two search brackets, [137.5, 144) and [150, 156), do not overlap
    short = dict(arrival="poisson", min_requests=0)
    base, new = _searched_record("a", 2.0, duration_s=1.0, **short), _searched_record("b", 2.0, duration_s=0.5, **short)
    brackets = [(r.best().capacity.capacity_rps, r.best().capacity.failing_rps) for r in (base, new)]
    alone = [PolicyResult(ServePolicy(1, 0.0), (), Capacity(5.0, *b, ())) for b in brackets]
    offered = [r.best().capacity_offered_rps() for r in (base, new)]  # what the compare judges: the rates offered
    assert judge_capacities(*alone, 5.0)[2] == "higher"  # what the brackets alone, no load measured, would claim
    cmp = compare_capacity(base, new)
    assert cmp.verdict == "inconclusive" and (cmp.base_rps, cmp.new_rps) == tuple(offered)
    assert set(cmp.noise_rps) == {"base", "new"} and cmp.noise_rps["new"][0] == 0.0 == cmp.noise_rps["base"][0]
    assert cmp.ratio_interval[1] is None  # no pass with an upper bound on its P99: NEW / 0 has no upper end
    assert cmp.noise_rps["new"][1] > offered[1][1]  # its failing end moved up to a load failing beyond its noise
    line = capacity_line(ComparedServeRuns(base, new, cmp))  # the verdict, each side judged by its noise bracket
    assert ": inconclusive" in line and all(f"{k.upper()}'s capacity" in line for k in cmp.noise_rps)
    assert new.best().capacity_unresolved() is not None  # said in its headline
    # loads long enough to bound the P99 at the bracket's ends: judged by the search's brackets
    firm = _searched_record("c", 1.0, duration_s=1.0, **short)
    assert firm.best().noise_bracket(5.0) == firm.best().capacity_offered_rps()
    assert compare_capacity(base, firm).noise_rps.keys() == {"base"}


def _searched_record(run_id: str, ms: float, **load):
    """A serve record of a 1-request batcher over a planted ``ms`` service, searched at P99 <= 5 ms (``load``: the
    request's arrival, duration_s, min_requests instead of a constant rate for 2 s)."""
    from dataclasses import replace

    service = PlantedService(ms, 0.0)
    load = {"duration_s": 2.0, "arrival": "constant", **load}
    request = serve_request(find_max=True, p99_ms=5.0, max_batch=1, max_wait_ms=0, warmup_s=0.2, **load)
    result = serve_policy(request, ServePolicy(1, 0.0), service, 100.0, service.new_clock)
    return replace(serve_from_json(serve_record()), run_id=run_id, policies=(result,))


@pytest.fixture
def serve_db(tmp_path):
    """A database with two serve runs (2 ms and 1 ms planted services) and one ordinary run."""
    from synthetic import config, latency_samples, run

    from surrobench.results.serve_store import begin_serve, save_serve

    db = tmp_path / "r.db"
    with ResultStore(db) as store:
        for record in (_searched_record("serve-slow", 2.0), _searched_record("serve-fast", 1.0)):
            begin_serve(store, record, None)
            save_serve(store, record)
        ordinary = run("plain-1", [config(latency_samples(1.0, 0.01, seed=1))])
        store.begin_run(ordinary)
        store.add_result(ordinary.run_id, ordinary.results[0])
        store.finish_run(ordinary.run_id)
    return db


def test_compare_of_two_serve_runs_compares_their_capacity(serve_db, tmp_path, capsys):
    from conftest import run_cli

    from surrobench.api.compare import ComparedServeRuns, compare, compare_pair

    pair = compare_pair("serve-slow", "serve-fast", db=serve_db)
    assert isinstance(pair, ComparedServeRuns)
    assert pair.capacity.verdict == "higher" and pair.capacity.ratio == pytest.approx(2.0, rel=0.1)
    assert compare("serve-fast", "serve-slow", db=serve_db).verdict == "lower"
    out, md = tmp_path / "c.json", tmp_path / "c.md"
    argv = ["compare", "serve-slow", "serve-fast", "--db", str(serve_db), "--json", str(out), "--markdown", str(md)]
    assert run_cli(argv) == 0
    assert "capacity at P99" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["schema"] == "surrobench/compare-serve-v1" and doc["verdict"] == "higher"
    assert (doc["base_run_id"], doc["new_run_id"]) == ("serve-slow", "serve-fast")
    base_lo, base_hi = doc["base_rps"]
    assert base_lo <= 1000 / 2.0 < base_hi  # the 2 ms service's rate lies in its bracket
    assert doc["base_policy"] == {"max_batch": 1, "max_wait_ms": 0.0}
    assert md.read_text().count("| serve-") == 2


def test_compare_of_a_serve_run_and_an_ordinary_run_is_refused(serve_db, capsys):
    from conftest import run_cli

    from surrobench.api.compare import compare_pair

    with pytest.raises(UsageError, match="NEW is a serve run and BASE"):
        compare_pair("plain-1", "serve-fast", db=serve_db)
    assert run_cli(["compare", "serve-slow", "plain-1", "--db", str(serve_db)]) == 2
    err = capsys.readouterr().err
    assert "BASE is a serve run" in err and "Traceback" not in err
    assert run_cli(["compare", "serve-slow", "serve-fast", "--db", str(serve_db), "--fail-on-regression"]) == 2


def test_report_of_serve_runs_draws_the_curve_and_the_capacities(serve_db):
    import re

    from surrobench.api.report import build_report
    from surrobench.report.html import report_page

    built = build_report(["serve-slow", "serve-fast"], db=serve_db)
    assert built.runs == () and [r.run_id for r in built.serve_runs] == ["serve-slow", "serve-fast"]
    assert built.serve_comparison.capacity.verdict == "higher"
    page = report_page(built)
    assert len(re.findall(r'<img alt="latency vs throughput" src="data:image/png;base64,', page)) == 2
    for record in built.serve_runs:
        capacity = record.best().capacity
        assert f"capacity {capacity.capacity_rps:.1f} rps" in page
        assert re.search(rf"<td[^>]*>{capacity.steps[-1].rate_rps:.1f}</td>", page)  # the search's last step
    assert "P99 &lt;= 5 ms" in page and ": higher</p>" in page  # the target, escaped; the verdict
    assert "<script" not in page
    mixed = build_report(["serve-slow", "plain-1"], db=serve_db)
    assert [r.run_id for r in mixed.runs] == ["plain-1"] and mixed.serve_comparison is None
    assert "Serve run serve-slow" in report_page(mixed)


def test_a_rate_whose_requests_all_fail_fails_the_search_step_instead_of_ending_it():
    from types import SimpleNamespace

    from surrobench.analysis.serve_load import NothingCompleted

    def measure(rate):
        if rate > 500:  # far past capacity: nothing completes within the drain time
            raise NothingCompleted("no request arriving after the warm-up completed")
        return SimpleNamespace(
            p99_ms=1.0 if rate <= 100 else rate / 5, passed=rate <= 100, target_rps=rate, completed=1
        )

    capacity, points = find_capacity(measure, 10.0, 1000.0)
    first = capacity.steps[0]
    assert first.rate_rps == 1000.0 and first.p99_ms is None and first.passed is False
    assert capacity.capacity_rps <= 100 < capacity.failing_rps
    assert len(points) == len(capacity.steps) - 1


def test_a_low_rate_is_offered_long_enough_to_bound_its_p99():
    # 20 rps for 2 s would leave ~30 requests after the warm-up: the rate is offered until its P99 has an
    # upper bound (368 requests), and the point carries no unbounded-P99 warning
    from surrobench.analysis.serve_load import P99_BOUNDING_REQUESTS, bounding_requests, load_warnings
    from surrobench.api.serve import offered_duration_s

    assert P99_BOUNDING_REQUESTS == 368 and 0.99**368 < 0.025 <= 0.99**367 and bounding_requests(0.5) == 6
    service = PlantedService(1.0, 0.0)
    request = serve_request(rates=[20.0], max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5, arrival="constant")
    assert offered_duration_s(request, 20.0) > 2.0 and offered_duration_s(request, 5000.0) == 2.0
    (point,) = serve_policy(request, ServePolicy(1, 0.0), service, 20.0, service.new_clock).points
    assert point.requests >= P99_BOUNDING_REQUESTS
    assert point.percentile(0.99).ci95_ms[1] is not None and not load_warnings(point)
    # the stretch is capped: 0.1 rps would need an hour
    assert offered_duration_s(request, 0.1) == 40.0
    with pytest.raises(UsageError) as bad:
        serve_request(rates=[20.0], min_requests=-1)
    assert bad.value.parameter == "min_requests"


def test_each_load_point_is_stored_as_it_finishes_and_ctrl_c_keeps_them(tmp_path, monkeypatch):
    """The record so far is stored after each load point (the run still ``running``, so a kill keeps them); Ctrl-C
    in the second policy keeps the first policy whole and the second's points so far."""
    from surrobench.api import serve as api_serve

    db, calls, seen = tmp_path / "r.db", [], []
    measured = api_serve.load_point

    def fourth_interrupts(*args, **kwargs):
        calls.append(kwargs["max_batch"])
        if len(calls) == 4:
            with ResultStore(db, read_only=True) as store:
                (run,) = store.list_runs()
                seen.append((run.state, [len(p.points) for p in load_serve(store, run.run_id).policies]))
            raise KeyboardInterrupt
        return measured(*args, **kwargs)

    monkeypatch.setattr(api_serve, "load_point", fourth_interrupts)
    points = []
    options = dict(rates="20,40", max_batch="1,2", duration_s=0.3, min_requests=0, warmup_s=0.1, shapes="8")
    with pytest.raises(Interrupted, match=r"interrupted: 3 of 4 load point\(s\) stored as run ") as cut:
        serve(
            nn.Conv2d(3, 1, 1),
            device="cpu",
            threads=1,
            warmup=1,
            db=db,
            on_point=lambda *p: points.append(p),
            **options,
        )
    assert seen == [("running", [2, 1])]  # stored as they finished
    record = cut.value.partial
    assert [(p.policy.max_batch, len(p.points)) for p in record.policies] == [(1, 2), (2, 1)]
    assert record.env["interrupted"] is True
    assert [u.batch for u in record.unloaded] == [1, 2]  # measured before the loads, kept
    assert [(policy.max_batch, point.target_rps) for policy, point in points] == [(1, 20.0), (1, 40.0), (2, 20.0)]
    assert record.notes[-1] == "interrupted: batch<=2 wait<=2ms cut short after 1 load point(s)"
    with ResultStore(db) as store:
        assert store.run_state(record.run_id) == "interrupted" and load_serve(store, record.run_id) == record


def test_a_rate_far_past_capacity_is_a_failing_point_with_lower_bounds():
    # 1 s per request at 200 rps: every measured request is still waiting when the drain ends
    from surrobench.report.serve_tables import COLUMNS, point_cells

    service = PlantedService(1000.0)
    request = serve_request(
        rates=200,
        max_batch=2,
        max_wait_ms=0,
        duration_s=2.0,
        warmup_s=0.5,
        drain_s=0.5,
        min_requests=0,
        arrival="constant",
    )
    (point,) = serve_policy(request, ServePolicy(2, 0.0), service, 200.0, service.new_clock).points
    assert point.requests == 300 and point.completed == 0 and point.dropped >= 300
    assert point.passed is False and point.achieved_rps == 0.0 and point.max_ms is None and point.mean_ms is None
    assert all(p.lower_bound and p.value_ms >= 500.0 for p in point.percentiles)  # waited at least the drain
    cells = dict(zip(COLUMNS, point_cells(point)))
    assert cells["P99 ms [95% CI]"].startswith(">") and cells["max ms"] == "-"


def test_the_search_goes_on_past_a_rate_that_completes_nothing():
    service = PlantedService(10.0)
    request = serve_request(
        find_max=True,
        p99_ms=50.0,
        max_batch=1,
        max_wait_ms=0,
        duration_s=2.0,
        warmup_s=0.5,
        drain_s=0.2,
        min_requests=0,
        arrival="constant",
    )
    result = serve_policy(request, ServePolicy(1, 0.0), service, 5000.0, service.new_clock)
    c = result.capacity
    assert c.steps[0].rate_rps == 5000.0 and c.steps[0].p99_ms is None and c.steps[0].passed is False
    assert c.capacity_rps <= 100.0 < c.failing_rps
    assert len(result.points) == len(c.steps) and result.points[-1].completed == 0  # sorted by rate: 5000 last


class _Sleepy(nn.Module):
    """A convolution that sleeps ``seconds`` per call: a service far slower than the rates offered to it."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.conv, self.seconds = nn.Conv2d(3, 1, 1), seconds

    def forward(self, x):
        import time

        time.sleep(self.seconds)
        return self.conv(x)


def test_serve_far_past_capacity_finishes_and_stores_the_failing_point(tmp_path):
    """200 requests a second at a 20 ms service (50 a second at most): the 60 requests of the 0.3 s warm-up come
    first, and the 1.0 s until the drain ends serves at most 51, one at a time: no measured request completes."""
    db = tmp_path / "r.db"
    options = dict(rates=200, max_batch=1, duration_s=0.6, warmup_s=0.3, drain_s=0.1, min_requests=0)
    record = serve(_Sleepy(0.02), arrival="constant", shapes="8", device="cpu", threads=1, warmup=1, db=db, **options)
    (point,) = record.policies[0].points
    assert point.completed == 0 and point.passed is False and point.percentile(0.99).lower_bound
    assert [u.batch for u in record.unloaded] == [1]  # the unloaded stage is kept
    assert serve_from_json(json.loads(json.dumps(record.to_json()))) == record
    with ResultStore(db) as store:
        assert store.run_state(record.run_id) == "complete" and load_serve(store, record.run_id) == record


def test_an_error_mid_run_keeps_the_record_so_far(tmp_path, monkeypatch):
    from surrobench.analysis.serve_load import NothingCompleted
    from surrobench.api import serve as api_serve
    from surrobench.errors import Stopped

    db, calls = tmp_path / "r.db", []
    measured = api_serve.load_point

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise NothingCompleted("no request completed: 40 x HTTP 503")
        return measured(*args, **kwargs)

    monkeypatch.setattr(api_serve, "load_point", second_fails)
    options = dict(rates="20,40", max_batch=1, duration_s=0.3, min_requests=0, warmup_s=0.1, shapes="8")
    with pytest.raises(
        Stopped, match=r"^no request completed: 40 x HTTP 503; 1 load point\(s\) stored as run "
    ) as stopped:
        serve(nn.Conv2d(3, 1, 1), device="cpu", threads=1, warmup=1, db=db, **options)
    record = stopped.value.partial
    assert [len(p.points) for p in record.policies] == [1] and record.unloaded
    assert record.notes[-1].startswith("stopped by no request completed: 40 x HTTP 503: batch<=1")
    with ResultStore(db) as store:
        assert store.run_state(record.run_id) == "interrupted" and load_serve(store, record.run_id) == record


def test_a_search_that_no_rate_passes_answers_so_with_the_unloaded_latency():
    from surrobench.records.serve import ServeRecord, UnloadedLatency
    from surrobench.report.serve_tables import best_line

    service = PlantedService(100.0)  # 100 ms a request: no rate meets P99 <= 50 ms
    request = serve_request(
        find_max=True, p99_ms=50.0, max_batch=1, max_wait_ms=0, duration_s=2.0, warmup_s=0.5, min_requests=0
    )
    result = serve_policy(request, ServePolicy(1, 0.0), service, 10.0, service.new_clock)
    assert result.capacity.capacity_rps == 0.0 and not any(s.passed for s in result.capacity.steps)
    unloaded = (UnloadedLatency(1, 1.0, (100.0,) * 10, (100.0,) * 10),)
    record = ServeRecord(
        "r", "2026-12-06T00:00:00+00:00", None, {}, {}, None, "poisson", 2.0, 0.5, 0, 50.0, (result,), (), unloaded
    )
    # the tail stopped falling with the rate, and the rates above it queued: the search ended, and says why
    assert result.capacity.infeasible is not None and best_line(record) == result.capacity.infeasible
    cut = replace(record, policies=(replace(result, capacity=replace(result.capacity, infeasible=None)),))
    lowest = min(s.rate_rps for s in result.capacity.steps)  # a search cut short: the rates it tried, unloaded
    assert best_line(cut) == (
        f"no rate meets P99 <= 50 ms: every rate tried failed, down to {lowest:.3g} rps "
        "(unloaded batch 1: isolated P99 100 ms, back to back 100 ms median)"
    )


def test_the_unloaded_tables_gap_column_has_a_legend_naming_its_cap():
    """A fresh-user trial read 50.0 in ``gap ms`` for batch 8 beside 1.3-7.3 for the others, unexplained: 50 ms is
    the longest idle probed (``MAX_GAP_S``), the value where no gap slowed a batch; every renderer says so."""
    from surrobench.execution.batcher import MAX_GAP_S
    from surrobench.records.serve import ServeRecord, UnloadedLatency
    from surrobench.report.html import serve_page
    from surrobench.report.serve_tables import GAP_NOTE, serve_markdown, serve_tables

    unloaded = tuple(UnloadedLatency(k, gap, (2.0 * k,) * 10, (2.0 * k,) * 10) for k, gap in ((1, 7.3), (8, 50.0)))
    record = ServeRecord("r", "2026-12-06T00:00:00+00:00", None, {}, {}, None, "poisson", 2.0, 0.5, 0, 50.0, (), ())
    record = replace(record, unloaded=unloaded)
    assert f"{MAX_GAP_S * 1e3:g} ms" in GAP_NOTE and GAP_NOTE.startswith("gap ms: ")
    (table,) = serve_tables(record, width=200)
    assert "gap ms" in [str(c.header) for c in table.columns] and str(table.caption) == GAP_NOTE
    assert GAP_NOTE in serve_markdown(record) and "the longest gap probed" in serve_page(record)
    assert serve_tables(replace(record, unloaded=()), width=200) == []  # no unloaded table, no legend


def test_low_percentiles_among_the_dropped_are_marked_lower_bounds_too():
    from surrobench.analysis.serve_load import load_point
    from surrobench.execution.batcher import ServeTrace
    from surrobench.report.serve_tables import COLUMNS, point_cells

    # 100 requests, the last 10 dropped: P95 and P99 fall among them, P50 does not
    arrivals = np.linspace(0.0, 1.0, 100)
    done = np.where(np.arange(100) < 90, arrivals + 0.01, np.nan)
    trace = ServeTrace(arrivals, arrivals, done, elapsed_s=2.0)
    point = load_point(trace, arrival="poisson", max_batch=1, warmup_s=0.0, target_rps=100.0)
    assert [p.lower_bound for p in point.percentiles] == [False, True, True]
    cells = dict(zip(COLUMNS, point_cells(point)))
    assert not cells["P50 ms"].startswith(">") and cells["P95 ms"].startswith(">")
    assert cells["P99 ms [95% CI]"].startswith(">")


def test_achieved_and_offered_rates_share_one_window():
    from surrobench.analysis.serve_load import load_point
    from surrobench.execution.batcher import ServeTrace

    # 9 measured arrivals in a 1 s window after a 1 s warm-up, the first 0.1 s into it, each served in 1 ms: every
    # request completed, so the load achieved what it offered (over the first arrival's span: 11.2 rps)
    arrivals = np.concatenate([[0.5], np.linspace(1.1, 1.9, 9)])
    trace = ServeTrace(arrivals, arrivals, arrivals + 0.001, elapsed_s=2.0)
    point = load_point(trace, arrival="poisson", max_batch=1, warmup_s=1.0, target_rps=9.0, window_s=1.0)
    assert point.offered_rps == pytest.approx(9.0) and point.achieved_rps == pytest.approx(point.offered_rps)
    late = ServeTrace(arrivals, arrivals, arrivals + 0.5, elapsed_s=2.5)  # completions spill past the window
    assert load_point(late, arrival="poisson", max_batch=1, warmup_s=1.0, window_s=1.0).achieved_rps < 9.0


def test_a_load_whose_queue_grows_fails_however_generous_the_target():
    from surrobench.analysis.serve_load import MAX_BACKLOG_GROWTH, load_point
    from surrobench.execution.batcher import ServeTrace

    def fifo(rate, service_s):  # one server, 2 s of arrivals at ``rate``, each served in ``service_s``
        arrivals, done, free = np.arange(0.0, 2.0, 1.0 / rate), [], 0.0
        for a in arrivals:
            free = max(a, free) + service_s
            done.append(free)
        starts = np.asarray(done) - service_s
        trace = ServeTrace(arrivals, starts, np.asarray(done), elapsed_s=max(done))
        return load_point(trace, arrival="constant", max_batch=1, warmup_s=0.5, target_p99_ms=1000.0, window_s=1.5)

    over = fifo(100.0, 0.012)  # serves 83 rps of the 100 offered: the queue grows 0.2 s a second, P99 ~0.4 s
    assert over.p99_ms < 1000.0 and over.dropped == 0 and not over.passed
    assert over.backlog_growth == pytest.approx(0.2, abs=0.01) and over.backlog_growth > MAX_BACKLOG_GROWTH
    under = fifo(50.0, 0.012)  # sustained: no growth, passes
    assert under.passed and abs(under.backlog_growth) < 1e-9


def test_every_point_carries_the_asked_rate_beside_the_offered_one():
    from surrobench.analysis.serve_load import load_warnings
    from surrobench.records.serve import LoadPoint
    from surrobench.report.serve_tables import COLUMNS, point_cells

    service = PlantedService(1.0)
    request = serve_request(rates="50,100", max_batch=1, max_wait_ms=0, duration_s=4.0, warmup_s=0.5)
    points = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points
    for point in points:  # seed 0 offers 44.8 rps at 50: below 95% of the Poisson counts, noted
        lo, hi = point.offered_interval_rps
        noted = any("Poisson interval" in n for n in load_warnings(point))
        assert lo < point.target_rps < hi and (lo <= point.offered_rps <= hi) is not noted
        assert LoadPoint.from_json(json.loads(json.dumps(point.to_json()))) == point
        cells = dict(zip(COLUMNS, point_cells(point)))
        assert cells["asked rps"] == f"{point.target_rps:.1f}" and cells["offered rps"] == f"{point.offered_rps:.1f}"


def test_a_serve_run_has_no_configs_to_diagnose(serve_db):
    from conftest import run_cli

    from surrobench.api.diagnose import diagnose

    with pytest.raises(UsageError, match="^run serve-slow .*no configs to diagnose"):
        diagnose(run="serve-slow", db=serve_db)
    assert run_cli(["diagnose", "--run", "serve-slow", "--db", str(serve_db)]) == 2
    with pytest.raises(UsageError) as info:  # the workload's keywords do not apply to a stored run
        diagnose(run="plain-1", db=serve_db, iters=30)
    assert info.value.others == ("trace", "run", "iters")
    assert usage_line(info.value).startswith("--run diagnoses a stored run, so --iters does not apply")


def test_an_unknown_arrival_lists_only_the_processes_chosen_by_name(tmp_path):
    from conftest import run_cli

    with pytest.raises(UsageError) as bad:
        serve_request(rates=10, arrival="weird")
    assert bad.value.parameter == "arrival" and "closed" not in str(bad.value)
    assert usage_line(bad.value).startswith("--arrival 'weird': choose poisson or constant (--arrivals replays")
    argv = ["serve", "--model", "fno2d", "--shape", "16", "--device", "cpu", "--rate", "10", "--arrival", "weird"]
    assert run_cli([*argv, "--db", str(tmp_path / "r.db")]) == 2


def test_an_interrupted_search_shows_the_bracket_of_the_rates_it_tried():
    from dataclasses import replace

    from surrobench.records.serve import Capacity, LoadPoint, Percentile, PolicyResult, ServeRecord
    from surrobench.report.serve_tables import policy_title

    point = LoadPoint(
        "poisson", 100.0, None, 99.0, 98.5, 500, 20, 0, 3, (Percentile(0.99, 4.2, (3.9, None), 5),), 5.1, 2.0,
        0.1, 0.9, 1.5, 2.0, 0.6, 0.01, 0.2, True, 497, 0.99, {},
    )  # fmt: skip
    tried = [(1700.0, True), (2260.0, False), (1870.0, True), (1500.0, False)]  # the last: a noisy, lower failure
    loads = tuple(replace(point, target_rps=r, offered_rps=r + 10.0, passed=ok) for r, ok in tried)
    cut = PolicyResult(ServePolicy(4, 2.0), loads)
    assert cut.bracket() == (1880.0, 2270.0)  # the rates the loads asked at 1870 and 2260 offered
    assert replace(cut, points=cut.points[:1]).bracket() == (1710.0, None)  # no failing rate yet
    assert replace(cut, points=(replace(point, passed=None),)).bracket() is None  # no target: nothing judged
    record = ServeRecord(
        "s1", "2026-12-06T00:00:00+00:00", None, {"interrupted": True}, {"model": "m", "shape_label": "8",
        "precision": "fp32", "mode": "eager", "device": "cpu"}, None, "poisson", 1.0, 0.25, 0, 5.0, (cut,),
    )  # fmt: skip
    title = policy_title(record, cut)  # each P99's interval (3.9, open) holds 5 ms: unresolved, as a finished search
    assert ": cut short, capacity in [1880.0, 2270.0) rps offered at P99 <= 5 ms; unresolved within the loads'" in title
    done = replace(record, env={})  # a finished run's fixed rates: no bracket claimed
    assert "cut short" not in policy_title(done, cut)
    # a capacity measured where the simulation passed no rate: "predicted: no rate", not "predicted 0 (-100% ...)"
    found = Capacity(10.0, 352.1, 363.1, (), predicted_rps=0.0, search_s=54.0)
    title = policy_title(done, replace(cut, capacity=found))
    assert "predicted: no rate" in title and "%" not in title
    predicted = replace(cut, capacity=replace(found, predicted_rps=300.0))
    assert predicted.prediction_error() == pytest.approx(300.0 / 357.6 - 1) and "-16%" in policy_title(done, predicted)


def test_the_capacity_headline_keeps_one_basis_and_says_an_unresolved_boundary_at_once():
    """A fresh-user trial read "capacity 3.25 rps offered ... (first failing 3.18) ... unresolved within the loads'
    noise" at the end of a long line, and "-7% off the middle of 36.1-37.8 rps asked" beside offered rates: the
    headline is in offered rates alone (its prediction judged against their middle) and an inverted bracket is said
    unresolved right after it."""
    from dataclasses import replace

    from surrobench.records.serve import Capacity, LoadPoint, Percentile, PolicyResult, ServeRecord
    from surrobench.report.serve_tables import policy_title

    point = LoadPoint(
        "poisson", 100.0, None, 99.0, 98.5, 500, 20, 0, 3, (Percentile(0.99, 140.0, (120.0, 145.0), 5),), 5.1, 2.0,
        0.1, 0.9, 1.5, 2.0, 0.6, 0.01, 0.2, True, 497, 0.99, {},
    )  # fmt: skip
    tried = [(3.1, 3.25, True), (3.3, 3.18, False)]  # asked 3.1 passed offering 3.25; asked 3.3 failed offering 3.18
    loads = tuple(replace(point, target_rps=r, offered_rps=o, passed=ok) for r, o, ok in tried)
    found = Capacity(150.0, 3.1, 3.3, (), predicted_rps=3.38, search_s=40.0)
    result = PolicyResult(ServePolicy(1, 0.0), loads, found)
    record = ServeRecord(
        "s1", "2026-12-07T00:00:00+00:00", None, {}, {"model": "m", "shape_label": "8",
        "precision": "fp32", "mode": "eager", "device": "cpu"}, None, "poisson", 1.0, 0.25, 0, 150.0, (result,),
    )  # fmt: skip
    assert result.capacity_offered_rps() == (3.25, 3.18)
    assert result.prediction_error() == pytest.approx(3.38 / ((3.25 + 3.18) / 2) - 1)  # offered, not asked (3.2)
    title = policy_title(record, result)
    assert "asked" not in title and title.index("unresolved within the loads' noise") < title.index("predicted")


def test_a_search_cut_short_whose_passing_load_offered_more_says_so_as_a_finished_one_does():
    """A fresh-user trial's Ctrl-C: asked 115 passed (offered 124.5), asked 126 failed (offered 124.1) read
    "capacity in [124.5, 124.1)" with no note; a finished search's overlap note is read from the same ends."""
    from dataclasses import replace

    from surrobench.records.serve import LoadPoint, Percentile, PolicyResult, ServeRecord
    from surrobench.report.serve_tables import policy_title

    point = LoadPoint(
        "poisson", 100.0, None, 99.0, 98.5, 500, 20, 0, 3, (Percentile(0.99, 34.6, (32.9, 37.8), 5),), 5.1, 2.0,
        0.1, 0.9, 1.5, 2.0, 0.6, 0.01, 0.2, True, 497, 0.99, {},
    )  # fmt: skip
    tried = [(115.0, 124.5, True), (126.0, 124.1, False)]
    cut = PolicyResult(None, tuple(replace(point, target_rps=r, offered_rps=o, passed=ok) for r, o, ok in tried))
    record = ServeRecord(
        "s1", "2026-12-06T00:00:00+00:00", None, {"interrupted": True}, {"model": "m", "shape_label": "8",
        "precision": "fp32", "mode": "eager", "device": "cpu"}, None, "poisson", 1.0, 0.25, 0, 200.0, (cut,),
    )  # fmt: skip
    assert cut.capacity_unresolved(200.0) == "the passing load offered no less than the failing one"
    assert cut.capacity_unresolved() is None  # no capacity and no target given: a fixed-rate run claims no bracket
    title = policy_title(record, cut)
    assert "cut short, capacity in [124.5, 124.1) rps" in title
    assert title.endswith("; unresolved within the loads' noise: the passing load offered no less than the failing one")
    doc = json.loads(json.dumps(record.to_json()))  # the JSON carries the fact the headline reads (it was null)
    assert doc["policies"][0]["capacity_unresolved"] == "the passing load offered no less than the failing one"
    doc["policies"][0]["capacity_unresolved"] = None  # as written before: derived, ignored on read
    assert serve_from_json(doc) == record and policy_title(serve_from_json(doc), cut) == title
    assert replace(record, env={}).to_json()["policies"][0]["capacity_unresolved"] is None  # fixed rates: no bracket
    held = replace(cut, points=(cut.points[0], replace(cut.points[1], offered_rps=130.0)))
    why = held.capacity_unresolved(35.0)  # resolved by rates, within the noise of its P99 at 35 ms
    assert "offered no less" not in why and "interval at 124 rps offered holds the target" in why


def test_a_max_batch_whose_inputs_do_not_fit_is_refused_before_anything_is_allocated(tmp_path):
    from surrobench.errors import UsageError
    from surrobench.results.store import ResultStore

    db = tmp_path / "r.db"
    with pytest.raises(UsageError) as refused:  # a padded batch of 10^8 128² fields: about 18 TiB of inputs
        serve("fno2d", shapes="128", device="cpu", rates=[10.0], max_batch=10**8, duration_s=1.0, db=db)
    assert {"shapes", "max_batch"} <= set(refused.value.others)
    with ResultStore(db) as store:
        assert store.conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_a_load_without_a_search_reads_as_what_it_achieved_not_as_a_capacity():
    """One offered load (a rate, with or without a target) measures its achieved rate, goodput and latency; only a
    peak search measures a capacity, and a run cut short claims no capacity bracket from rates it was only asked."""
    from surrobench.analysis.serve_load import load_point
    from surrobench.execution.batcher import ServeTrace
    from surrobench.records.serve import ServeRecord
    from surrobench.report.serve_tables import best_line, policy_title

    service = PlantedService(1.0)  # 1 ms a request at 200 rps: every request within 5 ms
    request = serve_request(rates=200, p99_ms=5.0, max_batch=1, max_wait_ms=0, duration_s=3.0, warmup_s=0.5)
    result = serve_policy(request, ServePolicy(1, 0.0), service, 0.0, service.new_clock)
    (point,) = result.points
    assert result.capacity is None and point.target_rps == 200.0 and point.passed
    assert point.slo_attainment == 1.0 and point.goodput_rps == pytest.approx(point.achieved_rps)
    arrivals = np.concatenate([[0.5], np.linspace(1.1, 1.9, 9)])  # completions spill 0.5 s past the window
    spill = load_point(ServeTrace(arrivals, arrivals, arrivals + 0.5, elapsed_s=2.5), arrival="poisson", max_batch=1,
                       warmup_s=1.0, window_s=1.0, target_p99_ms=1000.0)  # fmt: skip
    assert spill.achieved_rps < spill.offered_rps and spill.goodput_rps == pytest.approx(spill.achieved_rps)
    workload = {"model": "m", "shape_label": "8", "precision": "fp32", "mode": "eager", "device": "cpu"}
    record = ServeRecord(
        "r", "2026-12-06T00:00:00+00:00", None, {}, workload, None, "poisson", 3.0, 0.5, 0, 5.0, (result,),
        find_max=False,
    )  # fmt: skip
    doc = json.loads(json.dumps(record.to_json()))
    assert doc["find_max"] is False and doc["best_policy"] is None and doc["policies"][0]["capacity"] is None
    assert doc["policies"][0]["points"][0]["goodput_rps"] == pytest.approx(point.achieved_rps)
    assert serve_from_json(doc) == record
    del doc["find_max"]  # written before it: unknown, and a run cut short keeps its old reading
    assert serve_from_json(doc).find_max is None
    line = best_line(record)
    assert line.startswith("one load of 200 rps asked, no capacity searched") and "capacity in" not in line
    no_target = replace(
        record, target_p99_ms=None, policies=(replace(result, points=(replace(point, slo_attainment=None),)),)
    )
    assert no_target.policies[0].points[0].goodput_rps is None and "goodput" not in best_line(no_target)
    cut = replace(record, env={"interrupted": True})
    assert "capacity" not in policy_title(cut, result)  # asked rates, not a search's bracket
    title = policy_title(replace(cut, find_max=None), result)
    assert "cut short" in title and result.bracket() == (point.offered_rps, None)  # the rate its load offered
    closed = serve_request(concurrency=2, max_batch=1, max_wait_ms=0, duration_s=1.0, warmup_s=0.25)
    (loop,) = serve_policy(closed, ServePolicy(1, 0.0), service, 0.0, service.new_clock).points
    assert loop.load() == "concurrency 2" and loop.goodput_rps is None
    assert replace(loop, concurrency=None, arrival="replay").load() == "the replay"


def test_a_few_requests_whose_p99_interval_lies_above_the_estimate_still_draw():
    from surrobench.records.serve import LoadPoint, Percentile, PolicyResult, ServeRecord
    from surrobench.report.plots import latency_throughput

    # two requests: the interpolated P99 is below the slowest, the interval's lower side ([x_(2), -))
    point = LoadPoint(
        "replay", None, None, 2.0, 1.98, 2, 1, 0, 0, (Percentile(0.5, 8.1, (None, None), 1),
        Percentile(0.99, 8.62, (8.63, None), 0)), 8.63, 8.4, 0.25, 0.75, 1.0, 1.0, 0.01, 0.0, 0.0, True, 2, 1.0,
    )  # fmt: skip
    record = ServeRecord(
        "r", "2026-12-06T00:00:00+00:00", None, {}, {}, None, "replay", 10.0, 1.0, 0, 50.0,
        (PolicyResult(ServePolicy(8, 2.0), (point,)),), find_max=False,
    )  # fmt: skip
    assert latency_throughput(record) is not None


def test_a_load_where_nothing_arrived_after_the_warm_up_names_the_duration():
    from surrobench.analysis.serve_load import NothingCompleted, load_point
    from surrobench.execution.batcher import ServeTrace

    arrivals = np.asarray([0.1])  # one arrival, inside the 0.25 s warm-up: none measured
    trace = ServeTrace(arrivals, arrivals, arrivals + 0.001, elapsed_s=1.0)
    with pytest.raises(NothingCompleted) as none:
        load_point(trace, arrival="poisson", max_batch=1, warmup_s=0.25, target_rps=0.001)
    assert none.value.others == ("warmup_s", "duration_s")
    assert usage_line(none.value).endswith("shorten --warmup-s or lengthen --duration-s")  # the CLI's words


def test_a_two_input_model_is_titled_by_every_input_of_one_request(tmp_path):
    record = serve(
        "deeponet",
        rates="20",
        max_batch="1",
        duration_s=0.3,
        min_requests=0,
        warmup_s=0.05,
        shapes="64",
        device="cpu",
        threads=1,
        warmup=1,
    )
    assert record.workload["request_inputs"] == [
        {"shape": [64, 2], "dtype": "float32"},
        {"shape": [1, 100], "dtype": "float32"},
    ]
    assert record.label() == "deeponet 64x2,1x100 fp32 eager on cpu"
    older = {k: v for k, v in record.workload.items() if k != "request_inputs"}  # a record written before them
    assert replace(record, workload=older).label() == "deeponet 64 fp32 eager on cpu"
