"""The evidence row a busy host's profile adds to its op-level verdicts (:func:`surrobench.analysis.evidence_checks.
qualify`) carries the reading the problem is named for: other processes' busy CPUs, against the share of the usable
CPUs that makes a host busy; the step ratio is in its text, and is the value only where the step is off."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic import config, latency_samples

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.evidence_checks import EvidenceCheck, check_evidence, qualify
from surrobench.execution.host_facts import BUSY_SHARE
from surrobench.records.findings import Evidence, Finding
from surrobench.records.ops import OpStat, OpTable

LABEL = "fno2d 1x3x64x64 b1 fp32 eager"


def _check(profiled_ms: float) -> EvidenceCheck:
    result = config(latency_samples(5.0, 0.0), extra={"other_cpus": 1.2, "usable_cpus": 2})
    table = OpTable((OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 1.0, 10.0),), "cpu", 10.0, 1, "profiler")
    return check_evidence(ConfigEvidence(label=LABEL, result=result, op_table=table, profiled_step_ms=profiled_ms))


def _row(check: EvidenceCheck) -> Evidence:
    finding = Finding("fragmented_ops", "high", "many small ops", (Evidence("profiler", "x"),), "fuse", 1.0, LABEL)
    return qualify([finding], {LABEL: check})[0].evidence[-1]


def test_a_busy_hosts_row_holds_the_busy_cpus_and_its_limit_not_the_step_ratio():
    check = _check(profiled_ms=7.5)  # 1.5x: within the profiler's overhead, the host alone is the problem
    assert check.problems == ("busy_host",) and (check.other_cpus, check.usable_cpus) == (1.2, 2)
    row = _row(check)
    assert (row.value, row.unit) == (pytest.approx(1.2), "CPUs")
    assert f"{BUSY_SHARE * 2:.2g}" in row.text and "1.50x" in row.text  # its limit, and the step ratio beside it
    assert EvidenceCheck.from_json(check.to_json()) == check


def test_a_step_off_the_timed_one_keeps_the_step_ratio_as_the_value():
    check = _check(profiled_ms=50.0)
    assert set(check.problems) == {"step_mismatch", "busy_host"}
    assert (_row(check).value, _row(check).unit) == (pytest.approx(10.0), "x")


def test_a_check_stored_before_the_reading_still_gives_its_reason():
    stored = replace(_check(profiled_ms=7.5), other_cpus=None, usable_cpus=None)
    assert stored.reason() and stored.verdict == "unreliable"
