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
