"""docs/api.md's examples run: every ``python`` block, in order, in one namespace (CPU, seconds)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from surrobench.collect.torch_profiler import ProfileSchedule

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_api_examples_run(monkeypatch):
    """The profile example records one step instead of the default schedule's 10 (fno2d runs ~8,700 CPU ops a
    step; torch.profiler takes ~10 s on 2 shared cores to parse ten): schedules are tested in
    tests/collect/test_torch_profiler.py."""
    import functools

    import surrobench.api.profile as profile_api

    monkeypatch.setattr(profile_api, "ProfileSchedule", functools.partial(ProfileSchedule, wait=0, warmup=1, active=1))
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) >= 4
    before = set(Path.cwd().glob("*.db"))
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a busy CI host makes noisy-measurement warnings
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
    assert set(Path.cwd().glob("*.db")) == before  # db=None writes no database


def test_import_surrobench_is_cheap_and_lazy():
    import subprocess
    import sys

    code = "import sys, surrobench; assert 'torch' not in sys.modules, 'torch imported'; surrobench.RunRecord"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_zoo_names_listed_are_the_zoo():
    from surrobench.workload.zoo import all_surrogates

    listed = re.search(r"a zoo name \((.*?); `surrobench models` lists them\)", DOC.read_text(), re.S)
    assert listed, "docs/api.md no longer lists the zoo names"
    assert sorted(re.findall(r"`([^`]+)`", listed.group(1))) == sorted(s.info.name for s in all_surrogates())
