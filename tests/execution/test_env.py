"""The environment's thread count under its real name, and the busy-host warning."""

from __future__ import annotations

import os
import re
from types import SimpleNamespace

import pytest
import torch

from synthetic import config

from surrobench.execution.env import busy_host_warning, fingerprint, sweep_warnings
from surrobench.execution.host_facts import busy_others


def test_fingerprint_names_cpus_and_threads_apart():
    env = fingerprint("cpu")
    assert env["cpu_count"] == os.cpu_count() and env["torch_threads"] == torch.get_num_threads()


def _figures(line: str) -> list[str]:
    """The first three numbers of a busy-host line: the reading (CPUs or load), the CPUs it is over, our threads."""
    return re.findall(r"(\d+(?:\.\d+)?) ", line)[:3]


def test_busy_host_warning_compares_load_with_cores():
    host = {"usable_cpus": 2}  # no CPUs of others read: a 1-minute load over the host's 2 CPUs
    assert busy_others(host, 1.5) is None and busy_host_warning(1.5, 2, 2) is None  # 1.5 of 2: may be ours
    assert busy_others(host, None) is None and busy_host_warning(None, 2, 2) is None  # no load average on this OS
    assert busy_others(host, 7.9) == pytest.approx(6.4)  # the load less three quarters of the CPUs
    text = busy_host_warning(7.9, 2, 2)
    assert _figures(text) == ["7.9", "2", "2"] and "--" not in text  # no flag: the library prints it too


def test_the_busy_host_rule_reads_the_cpus_other_processes_kept_busy_before_the_load_average():
    timed = [SimpleNamespace(extra={"other_cpus": others, "usable_cpus": 2}) for others in (0.98, 0.2, None)]
    assert [busy_others(r.extra) for r in timed] == [0.98, None, None]  # over a quarter of 2 CPUs: busy
    assert busy_host_warning(1.03, 2, 1) is None  # the load average counts our thread: 0.03 others
    assert busy_host_warning(1.6, 2, 1) is None  # a minute after a 2-thread run of ours: its load, not others'
    text = busy_host_warning(
        1.03, 2, 1, (r.extra for r in timed)
    )  # measured while timed: the most, of 2 CPUs, for our 1 thread
    assert _figures(text) == ["1.0", "2", "1"]
    assert busy_host_warning(7.9, 2, 2, (r.extra for r in timed[1:])) is None  # measured quiet: the load was ours


def test_a_pinned_configs_others_are_counted_against_its_usable_cpus_not_the_hosts():
    """1.0 CPU of others on a config pinned to 2 of an 8-CPU host: busy (over a quarter of 2), though 1.0 of 8 is
    not; the line names the 2 CPUs the reading counted."""
    pinned = SimpleNamespace(extra={"other_cpus": 1.0, "usable_cpus": 2})
    assert busy_others(pinned.extra) == 1.0 and busy_others({"other_cpus": 1.0, "usable_cpus": 8}) is None
    assert _figures(busy_host_warning(None, 8, 1, [pinned.extra])) == ["1.0", "2", "1"]


def test_no_busy_host_warning_where_nothing_was_timed(monkeypatch):
    """A fresh-user trial: a model that raises was timed nowhere, yet run, optimize and diagnose warned "timings are
    noisy" on a busy host; a config that was timed still gets the warning."""
    env = {"load_avg_1m": 7.9, "cpu_count": 2, "torch_threads": 2}  # the run's, as stored
    failed = config((), status="error")
    assert not [w for w in sweep_warnings([failed], env) if w.startswith("busy host")]
    assert [w for w in sweep_warnings([failed, config([1.0, 1.1, 1.0])], env) if w.startswith("busy host")]


def test_too_few_iterations_are_a_run_warning_that_show_rebuilds_from_the_stored_run(tmp_path):
    """The CLI printed "--iters 3 (< 50) ..." before the run and stored nothing, so ``show`` lacked it: now it is
    one of the run's warnings, rebuilt from the stored warm-up and iterations per round (``iters`` sums the rounds);
    an optimization's baselines, whose rounds it sizes itself (no ``rounds`` in their env), get none."""
    from surrobench.api.run import measure
    from surrobench.execution.config import low_iterations_note
    from surrobench.results.store import ResultStore

    torch.set_num_threads(1)
    done = measure("pinn-mlp", db=tmp_path / "r.db", shapes="8", device="cpu", warmup=1, iters=3, rounds=2)
    with ResultStore(tmp_path / "r.db") as store:
        stored = store.load_run(done.run.run_id)
    note = low_iterations_note(1, 3)
    assert note in done.warnings and sweep_warnings(list(stored.results), stored.env) == list(done.warnings)
    assert stored.results[0].iters == 6 and note not in sweep_warnings(list(stored.results), {})
