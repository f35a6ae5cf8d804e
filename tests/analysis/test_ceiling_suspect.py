"""A measured rate above a calibrated ceiling: the ceiling is suspect, never a share over 100%."""

from __future__ import annotations

import re

import pytest
import torch
from synthetic import config, latency_samples

from surrobench.analysis.diagnose import diagnose_config
from surrobench.analysis.evidence import ConfigEvidence
from surrobench.analysis.op_flops import count_op_costs
from surrobench.analysis.roofline import ceiling_share, roofline
from surrobench.analysis.thresholds import DEFAULT_THRESHOLDS
from surrobench.records.ceilings import Ceilings
from surrobench.records.ops import OpStat, OpTable

N = 256
MM_TFLOPS = 2 * N**3 / 10e-6 / 1e12  # aten::mm in 10 us: 3.36 TFLOP/s
RELU_GBPS = 2 * N * N * 4 / 10e-6 / 1e9  # aten::relu reads and writes N*N floats in 10 us: 52 GB/s


def _evidence(ceilings: Ceilings, basis: str = "device") -> ConfigEvidence:
    """A 256x256 matmul then a relu, 10 us each per step, against ``ceilings`` (fp32)."""
    costs = count_op_costs(lambda: (torch.randn(N, N) @ torch.randn(N, N)).relu())
    table = OpTable(
        (
            OpStat("aten::mm", "gemm/matmul/einsum", 1, 10.0, 10.0, 0.5, 10.0),
            OpStat("aten::relu", "elementwise/activation", 1, 10.0, 10.0, 0.5, 10.0),
        ),
        basis,
        20.0,
        1,
        "profiler",
    )
    roof = roofline(table, costs, ceilings, "fp32")
    return ConfigEvidence(label="c", result=config(latency_samples(0.02, 0.001, seed=2)), op_table=table, roofline=roof)


def _percentages(findings) -> list[float]:
    texts = [f.summary for f in findings] + [e.text for f in findings for e in f.evidence]
    return [float(p) for t in texts for p in re.findall(r"(\d+(?:\.\d+)?)%", t)]


def test_ceiling_share_never_reads_over_100_percent():
    assert ceiling_share(0.42, "X", 1.25) == "42% of X"
    assert ceiling_share(1.1, "X", 1.25).startswith("100% of X")
    assert ceiling_share(12.5, "X", 1.25) == "12.5x X: the ceiling is suspect"


def test_planted_low_ceilings_are_suspect_with_their_ratio():
    # a calibration on a busy host: both ceilings 12.5x under what the ops measure
    low = Ceilings("dev", RELU_GBPS / 12.5, {"fp32": MM_TFLOPS / 12.5}, "2026-12-01T00:00:00+00:00")
    ev = _evidence(low)
    suspects = {s.ceiling: s for s in ev.roofline.suspect_ceilings(1.25, 0.10)}
    assert set(suspects) == {"copy", "matmul"}
    assert suspects["matmul"].ratio == pytest.approx(12.5) and suspects["matmul"].ops == ("aten::mm",)
    # the matmul moves more bytes than the relu in the same time: it is the fastest against the copy roof
    assert suspects["copy"].ops == ("aten::mm", "aten::relu")
    assert suspects["copy"].ratio == pytest.approx(12.5 * 1.5)

    findings = diagnose_config(ev)
    (suspect,) = [f for f in findings if f.kind == "ceiling_suspect"]
    assert sorted(e.value for e in suspect.evidence) == pytest.approx([12.5, 18.75])
    assert {e.unit for e in suspect.evidence} == {"ratio"}
    assert "surrobench calibrate" in suspect.action and "idle" in suspect.action and "cache" in suspect.action
    assert "compute_bound" not in [f.kind for f in findings]  # no verdict against the suspect peak
    assert all(p <= 100 for p in _percentages(findings))


def test_cpu_suspect_ceiling_names_the_cpu_calibration():
    low = Ceilings("cpu", 1000.0, {"fp32": MM_TFLOPS / 3}, "2026-12-01T00:00:00+00:00")  # only the peak
    (suspect,) = [f for f in diagnose_config(_evidence(low, basis="cpu")) if f.kind == "ceiling_suspect"]
    assert "calibrate --device cpu" in suspect.action and "cache" not in suspect.action
    assert [e.value for e in suspect.evidence] == pytest.approx([3.0])


def test_sound_ceilings_are_not_suspect():
    sound = Ceilings("dev", 1000.0, {"fp32": 10.0}, "2026-12-01T00:00:00+00:00")
    ev = _evidence(sound)
    assert ev.roofline.suspect_ceilings(1.25, 0.10) == ()
    assert "ceiling_suspect" not in [f.kind for f in diagnose_config(ev)]
    # within the spread (1.1x the peak): at the peak, not a suspect ceiling and not 110%
    spread = _evidence(Ceilings("dev", 1000.0, {"fp32": MM_TFLOPS / 1.1}, "2026-12-01T00:00:00+00:00"))
    findings = diagnose_config(spread, DEFAULT_THRESHOLDS)
    assert "ceiling_suspect" not in [f.kind for f in findings]
    assert all(p <= 100 for p in _percentages(findings))
