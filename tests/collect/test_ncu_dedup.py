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
from surrobench.collect.ncu_dedup import credit, launch_config, measured_count, replay_depth, replayed_count, signature
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


def test_the_depth_reaches_the_first_launch_of_every_signature_in_its_configuration():
    a = KernelCounters(0, "a", 1.0, grid_size=8, block_size=128, shared_mem_per_block_bytes=0)
    b = replace(a, launch=3, name="b")  # same grid, block, shared memory: ncu's per-launch-config count is shared
    c = replace(a, launch=4, name="c", grid_size=16)
    steps = (a, replace(a, launch=1), replace(a, launch=2), b, c, replace(b, launch=5), replace(c, launch=6))
    assert launch_config(a) == launch_config(b) and replay_depth(steps) == 4  # b first launched 4th of its config
    assert replayed_count(steps, 4) == 4 + 2 and replayed_count(steps, 1) == 2
    assert replay_depth(_launches()) == 1  # the transformer's names never share a launch configuration


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
    assert len(calls) == 1 + 1 + 1  # the full run; then the enumerating pass and one run at depth 1
    assert "per-launch-config" in calls[-1] and "--filter-mode" not in calls[1]
    assert calls[-1][calls[-1].index("--kernel-name-base") + 1] == "function"  # the full run's name filter


def _shared_capture(tmp_path: Path) -> Path:
    """The transformer capture with three names moved onto one launch configuration (grid, block, shared memory):
    one run at the depth of the latest first launch within that configuration."""
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


def test_names_sharing_configurations_are_measured_in_one_run_deep_enough(tmp_path, fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_CSV", str(_shared_capture(tmp_path)))
    config = tmp_path / "config.json"
    config.write_text("{}")
    full = run_ncu(config, tmp_path, (), dedup=False)
    depth = replay_depth(full.kernels)
    assert depth > 1 and replayed_count(full.kernels, depth) < len(full.kernels)
    once = run_ncu(config, tmp_path, ())
    # the same launches, each with the counters of its signature, from one run at that depth
    assert [signature(k) for k in once.kernels] == [signature(k) for k in full.kernels]
    calls = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert len(calls) == 3 and calls[2][calls[2].index("--launch-count") + 1] == str(depth)
    # every replayed launch's passes are counted: credited ones, the rest, and the enumerating pass's
    replayed = sum(k.passes for k in once.kernels) + once.enumerated_passes
    assert sum(k.passes > 0 for k in once.kernels) == measured_count(full.kernels)
    assert replayed < sum(k.passes for k in full.kernels)


def test_a_depth_that_saves_nothing_replays_every_launch(tmp_path, fake_ncu, monkeypatch):
    from surrobench.collect import ncu

    monkeypatch.setattr(ncu, "replay_depth", lambda launches: len(launches))
    config = tmp_path / "config.json"
    config.write_text("{}")
    done = run_ncu(config, tmp_path, ())
    calls = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert len(calls) == 2 and "--filter-mode" not in calls[1] and all(k.passes > 0 for k in done.kernels)
