"""compare of two serve runs where one answered its target infeasible at once (no load offered): its capacity was
not measured, so its row and its JSON bracket say "-" / None; 0 stays for a search whose loads all failed."""

from __future__ import annotations

import json
from dataclasses import replace

from synthetic import serve_record

from surrobench.api.compare import ComparedServeRuns
from surrobench.records.serve import Capacity, PolicyResult, ServePolicy, serve_from_json
from surrobench.report.serve_tables import CAPACITY_COLUMNS, capacity_line, capacity_rows
from surrobench.results.serve_store import CapacityComparison, compare_capacity


def _record(run_id: str, capacity: Capacity):
    return replace(
        serve_from_json(serve_record()), run_id=run_id, policies=(PolicyResult(ServePolicy(1, 0.0), (), capacity),)
    )


def _cells(pair: ComparedServeRuns) -> dict[str, tuple[str, str]]:
    capacity, failing = CAPACITY_COLUMNS.index("capacity rps"), CAPACITY_COLUMNS.index("first failing rps")
    return {row[0]: (row[capacity], row[failing]) for row in capacity_rows(pair)}


def test_a_target_answered_infeasible_at_once_has_no_measured_capacity():
    at_once = _record("at-once", Capacity(5.0, 0.0, 0.0, (), predicted_rps=0.0, infeasible="no rate meets it"))
    failed = _record("failed", Capacity(5.0, 0.0, 9.6, (), infeasible="every rate tried failed"))
    searched = _record("searched", Capacity(5.0, 150.0, 160.0, ()))
    cmp = compare_capacity(at_once, searched)
    assert cmp.base_rps == (None, None) and cmp.new_rps == (150.0, 160.0) and cmp.ratio is None
    doc = json.loads(json.dumps(cmp.to_json()))
    assert doc["base_rps"] == [None, None] and CapacityComparison.from_json(doc) == cmp
    assert _cells(ComparedServeRuns(at_once, searched, cmp)) == {"BASE": ("-", "-"), "NEW": ("150.0", "160.0")}
    # loads offered, none met the target: a measured 0
    cmp = compare_capacity(failed, searched)
    assert cmp.base_rps == (0.0, 9.6) and _cells(ComparedServeRuns(failed, searched, cmp))["BASE"] == ("0.0", "9.6")
    assert compare_capacity(searched, at_once).new_rps == (None, None)


def test_the_ratio_line_names_the_side_that_offered_no_load():
    at_once = _record("at-once", Capacity(5.0, 0.0, 0.0, (), predicted_rps=0.0, infeasible="no rate meets it"))
    searched = _record("searched", Capacity(5.0, 150.0, 160.0, ()))
    for base, new, side in ((at_once, searched, "BASE"), (searched, at_once, "NEW")):
        line = capacity_line(ComparedServeRuns(base, new, compare_capacity(base, new)))
        assert f"({side} offered no load" in line
