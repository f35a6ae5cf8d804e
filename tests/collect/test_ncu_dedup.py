"""Identical launches measured once (surrobench.collect.ncu_dedup, collect.ncu.run_ncu): on the H200 capture of
a transformer step (40 launches, 9 distinct name/grid/block/shared-memory signatures), fewer passes and every
launch with its counters."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from surrobench.collect.ncu import run_ncu
from surrobench.collect.ncu_dedup import credit, launch_config, launch_groups, measured_count, signature
from surrobench.collect.ncu_parse import parse_raw_csv
from surrobench.records.counters import KernelCounters

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ncu"
CAPTURE = FIXTURES / "transformer_step_raw.csv"


def _launches() -> tuple[KernelCounters, ...]:
    return parse_raw_csv(CAPTURE.read_text())


def _first_of_each(launches):
    seen, out = set(), []
    for k in launches:
        if signature(k) not in seen:
            seen.add(signature(k))
            out.append(k)
    return tuple(out)


def test_every_launch_gets_the_counters_of_its_signature_for_fewer_passes():
    launches = _launches()
    measured = _first_of_each(launches)
    assert (len(launches), measured_count(launches)) == (40, 9)
    credited = credit(measured, launches)
    assert [k.launch for k in credited] == [k.launch for k in launches]
    for full, got in zip(launches, credited):
        assert signature(got) == signature(full) and got.dram_bytes is not None
    assert sum(k.passes for k in credited) == sum(k.passes for k in measured) < sum(k.passes for k in launches)


def test_an_unmeasured_signature_credits_nothing():
    launches = _launches()
    assert credit(_first_of_each(launches)[1:], launches) is None


def test_names_sharing_a_launch_configuration_go_to_different_runs():
    a = KernelCounters(0, "a", 1.0, grid_size=8, block_size=128, shared_mem_per_block_bytes=0)
    b = replace(a, launch=1, name="b")  # same grid, block, shared memory: ncu's per-launch-config count is shared
    c = replace(a, launch=2, name="c", grid_size=16)
    assert launch_groups((a, b, c, replace(a, launch=3))) == (("a", "c"), ("b",))
    assert launch_config(a) == launch_config(b)
    assert len(launch_groups(_launches())) == 1  # the transformer's names never share a launch configuration


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    fake, calls = tmp_path / "ncu", tmp_path / "calls.jsonl"
    script = Path(__file__).parent.parent / "fake_ncu.py"
    fake.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NCU", str(fake))
    monkeypatch.setenv("FAKE_NCU_CSV", str(CAPTURE))
    monkeypatch.setenv("FAKE_NCU_CALLS", str(calls))
    return calls


def test_run_ncu_measures_each_signature_once_with_the_same_coverage(tmp_path, fake_ncu):
    config = tmp_path / "config.json"
    config.write_text("{}")
    full = run_ncu(config, tmp_path, ("fmha_cutlassF_f32_aligned_64x64_rf_sm80",), dedup=False)
    once = run_ncu(config, tmp_path, ("fmha_cutlassF_f32_aligned_64x64_rf_sm80",))
    assert [signature(k) for k in once.kernels] == [signature(k) for k in full.kernels]
    assert sum(k.passes > 0 for k in once.kernels) == 9 and all(k.passes > 0 for k in full.kernels)
    replayed = sum(k.passes for k in once.kernels)
    assert replayed + once.enumerated_passes < sum(k.passes for k in full.kernels) == 720
    assert (replayed, once.enumerated_passes) == (9 * 18, 40)
    calls = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert len(calls) == 1 + 1 + 1  # the full run; then the enumerating pass and one run for the one group
    assert "per-launch-config" in calls[-1] and "--filter-mode" not in calls[1]


def _shared_capture(tmp_path: Path) -> Path:
    """The transformer capture with three names moved onto one launch configuration (grid, block, shared memory):
    three groups of one run each, or one run at k = 3 launches per configuration."""
    import csv
    import io

    lines = CAPTURE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, body = rows[0], rows[1], rows[2:]
    col = {name: i for i, name in enumerate(header)}
    keys = [k for k in header if k.startswith(("launch__grid_size", "launch__block_size", "launch__shared_mem"))]
    names = list(dict.fromkeys(r[col["Kernel Name"]] for r in body if r and r[0].strip()))
    first = next(r for r in body if r[col["Kernel Name"]] == names[0])
    for r in body:
        if r and r[0].strip() and r[col["Kernel Name"]] in names[1:3]:
            for k in keys:
                r[col[k]] = first[col[k]]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows([header, units, *body])
    path = tmp_path / "shared.csv"
    path.write_text("\n".join(lines[:start]) + "\n" + out.getvalue())
    return path


def test_names_sharing_configurations_are_measured_in_one_run_when_that_costs_less(tmp_path, fake_ncu, monkeypatch):
    from surrobench.collect.ncu_dedup import one_run_depth

    monkeypatch.setenv("FAKE_NCU_CSV", str(_shared_capture(tmp_path)))
    config = tmp_path / "config.json"
    config.write_text("{}")
    full = run_ncu(config, tmp_path, (), dedup=False)
    assert one_run_depth(full.kernels) == 3 and len(launch_groups(full.kernels)) == 3
    assert one_run_depth(_launches()) is None  # one group: nothing to save
    once = run_ncu(config, tmp_path, ())
    # the same launches, each with the counters of its signature
    assert [signature(k) for k in once.kernels] == [signature(k) for k in full.kernels]
    calls = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    # the full run; the enumerating pass; one run of every name at 3 launches per configuration; the groups of the
    # signatures it missed (a name launched 3 times with the configuration before another's first): fewer runs
    # than the enumerating pass and three groups
    k_run = calls[2]
    assert k_run[k_run.index("--launch-count") + 1] == "3" and "per-launch-config" in k_run
    assert all(c[c.index("--launch-count") + 1] == "1" for c in calls[3:]) and len(calls) - 1 < 1 + 3
    # every replayed launch's passes are counted: credited ones, the rest, and the enumerating pass's
    replayed = sum(k.passes for k in once.kernels) + once.enumerated_passes
    assert sum(k.passes > 0 for k in once.kernels) == measured_count(full.kernels)
    assert replayed < sum(k.passes for k in full.kernels)
