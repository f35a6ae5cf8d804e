"""The host's floor under a kernel-side remedy's gain (surrobench.analysis.diagnose)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from synthetic import config, latency_samples

from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.diagnose import HostFloor, cap_at_host_floor, host_floors
from surrobench.analysis.timeline import TraceFacts
from surrobench.records.findings import Clause, Evidence, Finding
from surrobench.records.run import HOST_SUBMIT_KEY

LABEL = "pinn-mlp 1x65536x3 b1 fp32 eager"


def _facts(model_syncs: float = 0.0) -> TraceFacts:
    return TraceFacts(
        steps=3,
        step_ms=0.9,
        gpu_busy_ms=0.6,
        busy_share=0.9,
        launch_gap_ms=0.05,
        model_syncs=model_syncs,
        sync_op="",
        model_sync_gap_ms=0.0,
        h2d_ms=0.0,
        h2d_bytes=0.0,
        h2d_pageable_share=0.0,
        stream_waits=0.0,
    )


def _evidence(*, device="cuda", host_ms=0.53, syncs=0.0, facts=True) -> ConfigEvidence:
    result = replace(config(latency_samples(0.72, 0.0), extra={HOST_SUBMIT_KEY: host_ms}), device=device)
    return ConfigEvidence(label=LABEL, result=result, facts=_facts(syncs) if facts else None)


def _finding(gain_ms, *remedies, stacked=False) -> Finding:
    clause = Clause("run the matmuls on the tensor cores", remedies, stacked=stacked)
    ev = (Evidence("profiler", "GEMMs on the FMA pipe", 0.75, "fraction"),)
    return Finding("compute_bound", "high", "gemm on the FMA pipe", ev, (clause,), gain_ms, LABEL, "measured (ncu)")


def test_a_precision_gain_above_the_host_floor_is_capped_and_says_why():
    floors = host_floors([_evidence()])
    assert floors[LABEL].kernel_side_ms == pytest.approx(0.72 - 0.53)
    (capped,) = cap_at_host_floor([_finding(0.39, "tf32", "fp16", "bf16")], floors)
    assert capped.estimated_gain_ms == pytest.approx(0.19)
    assert capped.evidence[-1].source == "run" and capped.evidence[-1].value == pytest.approx(0.19)
    assert capped.evidence[:-1] == _finding(0.39, "tf32").evidence


def test_remedies_that_cut_the_hosts_work_are_not_capped():
    floors = host_floors([_evidence()])
    for finding in (
        _finding(0.39, "tf32", "compile"),
        _finding(0.39, "cudagraph", "fp16", stacked=True),
        _finding(0.39),  # advice without a remedy
        _finding(0.10, "tf32"),  # below the floor already
        _finding(None, "tf32"),
    ):
        assert cap_at_host_floor([finding], floors) == [finding]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"device": "cpu"},  # the host is the device
        {"syncs": 2.0},  # the model waits for the GPU inside its forward: submission time holds kernel time
        {"facts": False},  # no trace: whether it syncs is unknown
        {"host_ms": None},  # recorded before the submission time was measured
    ],
)
def test_no_floor_where_the_submission_time_is_not_the_hosts_floor(kwargs):
    assert host_floors([_evidence(**kwargs)]) == {}


def test_a_floor_at_or_above_the_latency_leaves_no_kernel_side_gain():
    assert HostFloor(0.7, 0.9).kernel_side_ms == 0.0
    assert HostFloor.from_json(HostFloor(0.7, 0.5).to_json()) == HostFloor(0.7, 0.5)
    with pytest.raises(ValueError, match="host_submit_ms"):
        HostFloor(0.7, float("nan"))
