"""``surrobench.versus`` on a planted problem: a solver whose levels miss the reference by known amounts and a
surrogate with a known error, so where the surrogate falls on the ladder is known (its time is measured, so only
structure and consistency are asserted about speedups)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import torch
from torch import nn

import surrobench
from surrobench.errors import UsageError
from surrobench.records.versus import BEYOND_FINEST, MATCHED, VersusRecord
from tests.conftest import run_cli

LEVEL_ERRORS = {"coarse": 0.1, "mid": 0.01, "fine": 0.001}
#: Each level's cost, s: a sleep, so that finer levels are slower whatever the machine's load.
LEVEL_SLEEP_S = {"coarse": 0.0, "mid": 0.002, "fine": 0.02}


class Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = nn.Parameter(torch.tensor(factor))

    def forward(self, x):
        return x * self.factor


class Planted:
    """Reference ``2 * case``; level ``l`` returns ``2 * case * (1 + e_l)`` (relative L2 error ``e_l``); the surrogate
    multiplies by ``factor`` (relative error ``|factor / 2 - 1|``)."""

    name = "planted"
    levels = list(LEVEL_ERRORS)
    batched = True

    def __init__(self, factor: float = 2.01, trained: bool = True) -> None:
        self.factor, self.trained = factor, trained

    def cases(self, n, seed, device):
        gen = torch.Generator().manual_seed(seed)
        return [torch.randn(8, 8, generator=gen).to(device) for _ in range(n)]

    def reference(self, case):
        return 2 * case

    def solve(self, case, level):
        time.sleep(LEVEL_SLEEP_S[level])
        return 2 * case * (1 + LEVEL_ERRORS[level])

    def inputs(self, case):
        return (case[None, None].float(),)

    def field(self, output):
        return output[0, 0]

    def surrogate(self):
        return Scale(self.factor)


def planted(**kw):
    return Planted(**kw)


SMALL = dict(cases=3, device="cpu", warmup=0, repeats=1, batch=2, resamples=50)


def test_surrogate_between_two_levels_is_matched_and_round_trips(tmp_path):
    record = surrobench.versus(Planted(), **SMALL)
    assert [round(lv.accuracy.error, 6) for lv in record.levels] == [0.1, 0.01, 0.001]
    s = record.surrogates[0]
    assert s.accuracy.error == pytest.approx(0.005, rel=1e-4)
    assert s.match.status == MATCHED
    assert s.match.speedup == pytest.approx(s.match.solver_ms / s.timing.median_ms)
    assert s.settings == {"precision": "fp32", "mode": "eager"}
    assert s.batch == 2 and s.one_time.load_ms >= 0
    assert all(level.batch_ms > 0 for level in record.levels)
    assert s.batch_match is not None and s.batch_match.status == MATCHED
    again = VersusRecord.from_json(record.to_json())
    assert again == record
    path = tmp_path / "v.json"
    import json

    path.write_text(json.dumps(record.to_json()))
    pair = surrobench.compare(str(path), str(path))
    assert [r["verdict"] for r in pair.rows] in (["inconclusive"], ["not_matched"])
    renamed = replace(record, surrogates=(replace(s, label="other"),))
    assert surrobench.compare_versus(record, renamed).rows[0]["label"] == f"{s.label} → other"


def test_surrogate_more_accurate_than_the_ladder_is_reported_not_extrapolated():
    record = surrobench.versus(Planted(factor=2.0 + 2e-6), **SMALL)
    m = record.surrogates[0].match
    assert (m.status, m.speedup, m.bound_level) == (BEYOND_FINEST, None, 2)
    assert m.bound > 0


def test_untrained_surrogates_are_refused():
    with pytest.raises(UsageError, match="untrained"):
        surrobench.versus(Planted(trained=False), **SMALL)
    with pytest.raises(UsageError, match="untrained"):
        surrobench.versus(Planted(), "fno2d", **SMALL)  # the zoo's weights are random
    with pytest.raises(UsageError, match="no better than a trivial predictor"):
        surrobench.versus(Planted(factor=0.0), **SMALL)  # predicts zeros


def test_cli_refuses_an_untrained_surrogate_with_exit_2(capsys):
    code = run_cli(["versus", "--problem", f"{__file__}:planted", "--problem-arg", "trained=False", "--device", "cpu"])
    assert code == 2
    assert "untrained" in capsys.readouterr().err


def test_cli_writes_json_and_page(tmp_path, capsys):
    out, page = tmp_path / "v.json", tmp_path / "v.html"
    argv = ["versus", "--problem", f"{__file__}:planted", "--device", "cpu", "--cases", "2", "--warmup", "0"]
    code = run_cli([*argv, "--repeats", "1", "--json", str(out), "--html", str(page)])
    assert code == 0
    assert surrobench.load_versus(out).surrogates[0].match.status == MATCHED
    assert "<img" in page.read_text() and "2 cases" in page.read_text() and "reference: reference" in page.read_text()
    assert run_cli(["compare", str(out), str(out)]) == 0
    assert "verdict" in capsys.readouterr().out


class PlantedRollout(Planted):
    """Two steps: the answer after k steps is ``2^k * case``; the surrogate doubles what it is fed, so its error
    compounds over the rollout (about 0.5% then 1%)."""

    steps = 2

    def reference(self, case):
        return torch.stack([2 * case, 4 * case])

    def solve(self, case, level):
        time.sleep(LEVEL_SLEEP_S[level])
        return self.reference(case) * (1 + LEVEL_ERRORS[level])

    def advance(self, inputs, output):
        return (output,)


def test_rollout_errors_grow_with_the_step_and_each_step_is_matched():
    record = surrobench.versus(PlantedRollout(), **SMALL)
    s = record.surrogates[0]
    assert record.steps == 2
    assert s.accuracy.error_vs_step == pytest.approx([0.005, 0.010025], rel=1e-3)
    assert [m.status for m in s.step_matches] == [MATCHED, MATCHED]
    assert len(record.levels[0].accuracy.error_vs_step) == 2


def test_every_execution_setting_reaches_the_surrogate_and_no_other_keyword_does(tmp_path, capsys):
    # matmul_precision is taken like the settings before it (one settings group, docs/design.md)
    record = surrobench.versus(Planted(), threads=1, matmul_precision="high", **SMALL)
    assert record.surrogates[0].settings == {
        "precision": "fp32",
        "mode": "eager",
        "threads": 1,
        "matmul_precision": "high",
    }
    with pytest.raises(UsageError, match="unknown setting 'shapes'"):
        surrobench.versus(Planted(), shapes=[8], **SMALL)
    argv = ["versus", "--problem", f"{__file__}:planted", "--device", "cpu", "--cases", "2", "--warmup", "0"]
    assert run_cli([*argv, "--repeats", "1", "--matmul-precision", "high", "--json", str(tmp_path / "v.json")]) == 0
    assert surrobench.load_versus(tmp_path / "v.json").surrogates[0].settings["matmul_precision"] == "high"
