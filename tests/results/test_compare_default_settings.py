"""compare of an optimize baseline run (stored without the run-wide settings in its env) against a plain run: a
setting left to its default on one side is that default, as the record holds it (its configs' settings, the thread
count torch ran with), not a difference; one set apart from the other side's default still is."""

from __future__ import annotations

from dataclasses import replace

from synthetic import SERVE_WORKLOAD, config, latency_samples, run
from test_serve_unmeasured_capacity import _record

from surrobench.records.serve import Capacity
from surrobench.results.serve_store import compare_capacity

from surrobench.records.config import SETTINGS_NOTE
from surrobench.results.compare import compare_runs
from surrobench.results.store import ResultStore

RAN = {"cudnn_benchmark": False, "matmul_allow_tf32": False, "cudnn_allow_tf32": False}
#: what a plain run's env holds (execution.sweep.run_environment) and optimize's baseline run's lacks
RUN_WIDE = {"cudnn_benchmark": False, "rounds": 1, "tf32_by_precision": {"fp32": False}}


def _stored(tmp_path, base_extra: dict, new_threads: int, db: str = "r.db"):
    samples = latency_samples(1.0, 0.01)
    base = run(
        "base",
        [config(samples, extra={**RAN, **base_extra})],
        tag="optimize:baseline",
        env={"cpu_count": 4, "torch_threads": 2},
    )
    plain = config(samples, extra={**RAN, "torch_threads": new_threads})
    new = run("new", [plain], env={"cpu_count": 4, "torch_threads": new_threads, **RUN_WIDE})
    with ResultStore(tmp_path / db) as store:
        for record in (base, new):
            store.begin_run(record)
            store.add_result(record.run_id, record.results[0])
            store.finish_run(record.run_id)
        return compare_runs(store.load_run("base"), store.load_run("new"))


def _settings_notes(cmp) -> list[str]:
    prefix = SETTINGS_NOTE.split("{")[0]
    return [n for c in cmp.configs for n in c.notes if n.startswith(prefix)]


def test_none_against_the_default_the_record_holds_is_no_difference(tmp_path):
    cmp = _stored(tmp_path, {"threads": 2, "torch_threads": 2}, new_threads=2)
    assert not {d.key for d in cmp.env_diff} & {"rounds", "cudnn_benchmark", "tf32_by_precision.fp32"}
    assert _settings_notes(cmp) == []  # threads=2 against a default of 2


def test_a_setting_apart_from_the_other_sides_default_is_a_difference(tmp_path):
    cmp = _stored(tmp_path, {"threads": 2, "torch_threads": 2}, new_threads=4)
    assert _settings_notes(cmp) == [SETTINGS_NOTE.format("eager threads=2", "eager")]
    both_default = _stored(tmp_path, {"torch_threads": 2}, new_threads=4, db="d.db")  # None on both: the hosts differ
    assert _settings_notes(both_default) == []


def test_a_mode_apart_is_a_difference_in_run_and_serve_compare(tmp_path):
    """Eager against compile with ``--ignore mode`` (the table then pairs them) keeps the settings note, and a serve
    comparison of the two modes names them (``settings_differ``)."""
    samples = latency_samples(1.0, 0.01)
    base = run("eager", [config(samples, extra=dict(RAN))])
    new = run("compiled", [replace(config(samples, extra=dict(RAN)), mode="compile")])
    cmp = compare_runs(base, new, ignore_fields=("mode",))
    assert _settings_notes(cmp) == [SETTINGS_NOTE.format("eager", "compile")]
    eager = _record("eager", Capacity(5.0, 150.0, 160.0, ()))
    compiled = replace(
        _record("compiled", Capacity(5.0, 300.0, 320.0, ())), workload={**SERVE_WORKLOAD, "mode": "compile"}
    )
    assert compare_capacity(eager, compiled).settings_differ == ("eager", "compile")
