"""An optimization not finished is listed and shown as its writer stands: ``running`` while its process lives,
``abandoned`` once it is gone, ``interrupted`` where Ctrl-C or a signal ended it. A fresh-user trial's ``history``
and ``show`` called a live optimization "interrupted (Ctrl-C or a signal)" while its process still ran."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import run_cli
from surrobench.api.compare import history, load, optimization_state
from surrobench.results.optimize import ConfigOptimization, OptimizeReport
from surrobench.results.optimize_store import add_optimization
from surrobench.results.store import ResultStore
from synthetic import config, latency_samples, run


def _stored(db, baseline_state: str | None, **owner) -> str:
    """An optimization stored as optimize stores its progress (``interrupted`` until its last write), its baseline
    run begun by this process (alive), ``owner`` columns set over it, then finished ``baseline_state`` (None: not)."""
    base = config(latency_samples(2.0, 0.01))
    baseline = run("20261201-103000-base", [base], created="2026-12-01T10:30:00+00:00", tag="t:baseline")
    report = OptimizeReport(
        "20261201-103000-opti", "2026-12-01T10:30:00+00:00", {"device_name": "cpu-x"}, 0.01, 60.0, 2,
        baseline.run_id, None, (ConfigOptimization(baseline=base, candidates=()),), interrupted=True,
    )  # fmt: skip
    with ResultStore(db) as store:
        store.begin_run(baseline)
        store.add_result(baseline.run_id, base)
        for column, value in owner.items():
            store.conn.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (value, baseline.run_id))
        store.conn.commit()
        if baseline_state is not None:
            store.finish_run(baseline.run_id, baseline_state)
        add_optimization(store, report.to_json())
    return report.optimize_id


def _ended_pid() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


@pytest.mark.parametrize(
    "baseline_state, owner, state",
    [
        (None, {}, "running"),  # this process writes it: alive
        (None, {"pid": "ended"}, "abandoned"),  # its writer died (SIGKILL) with nothing marked
        ("interrupted", {}, "interrupted"),  # Ctrl-C: optimize marked its runs and stored the report
    ],
)
def test_an_unfinished_optimization_reads_as_its_process_stands(tmp_path, capsys, baseline_state, owner, state):
    db = tmp_path / "r.db"
    owner = {k: _ended_pid() if v == "ended" else v for k, v in owner.items()}
    optimize_id = _stored(db, baseline_state, **owner)
    (listed,) = [r for r in history(db) if r.kind == "optimize"]
    assert listed.state == state
    assert optimization_state(load(optimize_id, db), db) == state  # one call, as the CLI's, not the whole history
    assert run_cli(["show", optimize_id, "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the terminal's wrapping undone
    said = {"running": "still running (", "abandoned": "abandoned (", "interrupted": "interrupted (Ctrl-C"}
    assert [s for s, words in said.items() if words in out] == [state]  # the words of its state, no other's


def test_a_finished_optimization_is_complete_and_one_without_its_database_interrupted(tmp_path):
    db = tmp_path / "r.db"
    doc = load(_stored(db, "interrupted"), db)
    assert optimization_state(doc | {"interrupted": False}, db) == "complete"
    assert optimization_state(doc, tmp_path / "none.db") == "interrupted"  # no database: nothing says it runs


def test_show_reads_its_own_optimization_not_every_stored_one(tmp_path, capsys):
    """``show`` of a running optimization read the whole history, so another stored row it cannot read (a newer
    version's) failed it; the state of one optimization is read from its own baseline run alone."""
    db = tmp_path / "r.db"
    optimize_id = _stored(db, None)
    with ResultStore(db) as store:
        newer = '{"schema": "surrobench/optimize-v9"}'
        row = ("20261202-000000-next", "2026-12-02T00:00:00+00:00", "20261201-103000-base", None, newer)
        store.conn.execute("INSERT INTO optimizations VALUES (?, ?, ?, ?, ?)", row)
        store.conn.commit()
    assert run_cli(["show", optimize_id, "--db", str(db)]) == 0
    assert "still running (" in " ".join(capsys.readouterr().out.split())
