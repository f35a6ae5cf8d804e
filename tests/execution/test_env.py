"""The environment's thread count under its real name, and the busy-host warning."""

from __future__ import annotations

import os

import torch

from surrobench.execution.env import busy_host_warning, fingerprint


def test_fingerprint_names_cpus_and_threads_apart():
    env = fingerprint("cpu")
    assert env["cpu_count"] == os.cpu_count() and env["torch_threads"] == torch.get_num_threads()


def test_busy_host_warning_compares_load_with_cores():
    assert busy_host_warning(1.5, 2, 2) is None
    assert busy_host_warning(None, 2, 2) is None  # no load average on this OS
    text = busy_host_warning(7.9, 2, 2)
    assert (
        "load average 7.9 on 2 CPU(s)" in text and "1 thread," in text and "--" not in text
    )  # no flag: the library prints it too


def test_the_busy_host_rule_reads_the_cpus_other_processes_kept_busy_before_the_load_average():
    from types import SimpleNamespace

    from surrobench.execution.host_facts import busy_others

    timed = [SimpleNamespace(extra={"other_cpus": others}) for others in (0.98, 0.2, None)]
    assert busy_host_warning(1.03, 2, 1) is None  # the load average counts our thread: 0.03 others
    assert busy_host_warning(1.6, 2, 1) is None  # a minute after a 2-thread run of ours: its load, not others'
    text = busy_host_warning(1.03, 2, 1, timed)  # measured while timed: half the CPUs at most
    assert "0.98" not in text and "1.0 of 2 CPU(s)" in text
    assert busy_host_warning(7.9, 2, 2, timed[1:]) is None  # measured quiet: the load was ours
    assert busy_others(0.98, 2) == 0.98 and busy_others(0.0, 2) is None and busy_others(None, 2) is None
