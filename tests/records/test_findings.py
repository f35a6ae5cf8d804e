"""A finding's action as clauses, each naming the remedies it suggests from the one remedy vocabulary."""

from __future__ import annotations

from dataclasses import replace

import pytest

from surrobench.execution.remedies import candidate_remedies
from surrobench.records.findings import Clause, Evidence, Finding
from surrobench.records.vocab import REMEDIES, remedy_id

EV = (Evidence("profiler", "x"),)


def test_the_remedy_vocabulary_is_the_catalogue_of_optimize():
    """Every candidate optimize can try is one id of the vocabulary, and every id is one optimize can try."""
    names = {r.name for device in ("cpu", "cuda") for r in candidate_remedies(device, thorough=True)}
    assert {remedy_id(n) for n in names} == set(REMEDIES)


def test_an_action_given_as_clauses_is_held_as_text_with_its_remedies():
    action = (Clause("replay as a CUDA graph", ("cudagraph",)), Clause("raise the batch"), Clause("or tf32", ("tf32",)))
    f = Finding("launch_bound", "high", "s", EV, action, 1.0, "cfg")
    assert f.action == "replay as a CUDA graph; raise the batch; or tf32" and f.clauses == action
    assert f.remedies == ("cudagraph", "tf32") and f.to_json()["remedies"] == ["cudagraph", "tf32"]
    assert replace(f, severity="low").remedies == ("cudagraph", "tf32")  # a copy keeps its clauses
    plain = replace(f, action="something else")  # new text, no clauses given: it suggests no remedy
    assert plain.remedies == () and plain.clauses == (Clause("something else"),)
    assert Finding("launch_bound", "high", "s", EV, "text").to_json()["remedies"] == []


def test_a_remedy_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="unknown remedy id"):
        Clause("go faster", ("warp",))
