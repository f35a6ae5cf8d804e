"""The ncu run: kernel selection, the command, and what a missing ncu or refused counters give. The fake
``ncu`` executables print ncu's own texts (tests/fixtures/ncu/); a process is what these tests test."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from surrobench.analysis.counters import measure_all
from surrobench.api.counters import counters_config
from surrobench.collect import ncu
from surrobench.records.counters import ConfigCounters
from surrobench.records.kernels import KernelRows
from surrobench.results.profiles import add_counters, load_counters
from surrobench.results.store import ResultStore
from tests.conftest import exec_config

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ncu"


def _table(times_us: dict[str, float]):
    rows = KernelRows()
    for name, us in times_us.items():
        rows.add(name, us, ["aten::mm"], None)
    return rows.finish(active_steps=1, source="profiler")


def test_selection_covers_the_share_of_kernel_time_by_function_name():
    table = _table({"void at::k1<float>(int)": 50.0, "void at::k1<half>(int)": 30.0, "k2(int)": 15.0, "k3()": 5.0})
    names, share = ncu.select_kernels(table, coverage=0.9)
    assert names == ("k1", "k2") and share == pytest.approx(0.95)
    assert ncu.select_kernels(table, coverage=1.0, cap=1) == (("k1",), pytest.approx(0.8))


def test_the_command_restricts_ncu_to_one_step_and_the_selected_kernels(tmp_path):
    cmd = ncu.ncu_command("ncu", ("k1", "k2"), tmp_path / "o.csv", ["python", "-m", "x"])
    joined = " ".join(cmd)
    assert "--nvtx-include surrobench_step/" in joined and "--clock-control none" in joined
    assert "--cache-control all" in joined and "--page raw" in joined and "--print-units base" in joined
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(?:.*::)?(?:k1|k2)$"
    assert cmd[-3:] == ["python", "-m", "x"]
    assert "--kernel-name" not in ncu.ncu_command("ncu", (), tmp_path / "o.csv", ["p"])


def _fake_ncu(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "ncu"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _config_file(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text("{}")
    return path


def test_refused_counters_are_one_problem_with_its_fix(tmp_path, monkeypatch):
    fake = _fake_ncu(tmp_path, f"cat '{FIXTURES / 'err_nvgpuctrperm.txt'}'\nexit 1\n")
    monkeypatch.setenv("NCU", str(fake))
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ("k1",))
    assert done.kernels == () and done.problem.kind == "permission"
    assert "ERR_NVGPUCTRPERM" in done.problem.message and done.command[0] == str(fake)


def test_a_missing_ncu_is_a_problem_that_quotes_the_command(tmp_path, monkeypatch):
    monkeypatch.delenv("NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "_CANDIDATES", ())
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ("k1",))
    assert done.problem.kind == "ncu_missing" and "--nvtx-include" in done.problem.message


def test_an_unknown_failure_quotes_ncus_last_error(tmp_path, monkeypatch):
    monkeypatch.setenv("NCU", str(_fake_ncu(tmp_path, "echo '==ERROR== something else broke' >&2\nexit 9\n")))
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ())
    assert done.problem.kind == "failed" and "something else broke" in done.problem.message


def test_a_csv_written_to_the_log_file_is_read(tmp_path, monkeypatch):
    # the fake ncu writes the H200 capture where --log-file points, as ncu does
    body = f'while [ "$1" != "--log-file" ]; do shift; done\ncp \'{FIXTURES / "planted_raw.csv"}\' "$2"\n'
    monkeypatch.setenv("NCU", str(_fake_ncu(tmp_path, body)))
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ("k1",))
    assert done.problem is None and len(done.kernels) == 7 and done.wall_s >= 0


def test_a_cpu_config_gets_no_counters_and_no_ncu_run(monkeypatch):
    monkeypatch.setattr(ncu, "run_ncu", lambda *a: pytest.fail("ncu ran for a CPU config"))
    assert counters_config(exec_config(), None).problem.kind == "not_cuda"


def test_counters_round_trip_through_the_store(tmp_path, monkeypatch):
    body = f'while [ "$1" != "--log-file" ]; do shift; done\ncp \'{FIXTURES / "planted_raw.csv"}\' "$2"\n'
    monkeypatch.setenv("NCU", str(_fake_ncu(tmp_path, body)))
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ())
    counters = ConfigCounters(measure_all(done.kernels, None, None), ("k1",), 0.95, 126, 3.5, done.command)
    with ResultStore(tmp_path / "r.db") as store:
        add_counters(store, 1, counters)
        assert load_counters(store, 1) == counters
        assert load_counters(store, 2) is None


def test_a_name_filter_that_matches_nothing_falls_back_to_the_steps_first_launches(tmp_path, monkeypatch):
    # the fake ncu profiles nothing when given --kernel-name, and the H200 capture without it
    body = (
        'case "$*" in *--kernel-name*) echo "==WARNING== No kernels were profiled."; exit 0;; esac\n'
        f'while [ "$1" != "--log-file" ]; do shift; done\ncp \'{FIXTURES / "planted_raw.csv"}\' "$2"\n'
    )
    monkeypatch.setenv("NCU", str(_fake_ncu(tmp_path, body)))
    done = ncu.run_ncu(_config_file(tmp_path), tmp_path, ("k1",))
    assert done.problem is None and len(done.kernels) == 7
    assert "--kernel-name" not in done.command
    assert done.command[done.command.index("--launch-count") + 1] == str(ncu.FALLBACK_LAUNCHES)
