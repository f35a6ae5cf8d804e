"""Run references (:mod:`surrobench.cli.runref`) and the op self time per step they read from op tables."""

from __future__ import annotations


import pytest

from surrobench.api.compare import is_run_file
from surrobench.records.ops import OpStat, OpTable


def _table(basis: str) -> OpTable:
    ops = (
        OpStat("aten::mm", "gemm/matmul/einsum", 4, 800.0, 900.0, 0.8, 60.0),
        OpStat("aten::add", "elementwise/activation", 4, 200.0, 200.0, 0.2, 40.0),
    )
    return OpTable(ops, basis, 1000.0, 4, "profiler")


@pytest.mark.parametrize("basis, mm_ms, add_ms", [("device", 0.2, 0.05), ("cpu", 0.015, 0.01)])
def test_ms_per_step_takes_the_basis_self_time_per_active_step(basis, mm_ms, add_ms):
    table = _table(basis)
    assert table.ms_per_step() == pytest.approx({"aten::mm": mm_ms, "aten::add": add_ms})
    assert table.self_us(table.ops[0]) == (800.0 if basis == "device" else 60.0)


def test_is_run_file(tmp_path):
    existing = tmp_path / "run"
    existing.write_text("{}")
    assert is_run_file(str(tmp_path / "missing.json")) and is_run_file(str(existing))
    assert not is_run_file("20261130-abcd") and not is_run_file(str(tmp_path))
