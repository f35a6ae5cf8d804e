"""One torch.compile cache for optimize and its fresh processes (:mod:`surrobench.execution.compile_cache`)."""

from __future__ import annotations

import os
import subprocess
import sys

from surrobench.execution.compile_cache import CACHE_SWITCHES, FORCE_DISABLE, cache_env, shared_compile_cache


def test_a_child_gets_the_cache_dir_and_switches_unless_the_environment_sets_them(tmp_path):
    env = cache_env({"TORCHINDUCTOR_CACHE_DIR": str(tmp_path), "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"})
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path)
    assert "TORCHINDUCTOR_FX_GRAPH_CACHE" not in env  # the user's 0 stands
    assert env["TORCHINDUCTOR_AUTOGRAD_CACHE"] == "1"
    assert cache_env({})["TORCHINDUCTOR_CACHE_DIR"]  # torch's default directory, named
    assert cache_env({FORCE_DISABLE: "1"}) == {}


def test_the_parent_compiles_into_the_shared_cache_during_the_call_and_its_environment_is_restored(
    tmp_path, monkeypatch
):
    import torch._inductor.config as inductor

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    for name in CACHE_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    with inductor.patch(fx_graph_cache=False):
        with shared_compile_cache() as env:
            assert inductor.fx_graph_cache is True
            assert all(os.environ[k] == v for k, v in env.items())
        assert inductor.fx_graph_cache is False
    assert not any(name in os.environ for name in CACHE_SWITCHES)


CHILD = """
import os
import torch
from torch._dynamo.utils import counters
f = torch.compile(lambda x: x @ x)
f(torch.ones(4, 4))
print(counters["inductor"]["fxgraph_cache_hit"], flush=True)
os._exit(0)  # the entry is on disk: no interpreter teardown (about a second with torch loaded)
"""


def test_a_fresh_process_loads_the_graph_an_earlier_one_compiled(tmp_path, monkeypatch):
    """A real compile in a child given :func:`cache_env` inside :func:`shared_compile_cache`; a second child
    compiling the same function loads it (two children: the test process's own Inductor settings, changed by
    earlier tests, would change the graph's cache key). The graph is one matrix product, which Inductor hands to
    an extern kernel: its FX graph is cached as any other, with no C++ kernel to compile (a child took 7.8 s and
    4.8 s with ``sin(x) * 2 + 1`` and a teardown, 3.6 s and 3.5 s so, on 2 shared cores:
    docs/benchmarks/test-suite.md)."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    for name in CACHE_SWITCHES:
        monkeypatch.delenv(name, raising=False)
    hits = []
    with shared_compile_cache() as env:
        for _ in range(2):
            child = subprocess.run(
                [sys.executable, "-c", CHILD], capture_output=True, text=True, env={**os.environ, **env}, timeout=300
            )
            assert child.returncode == 0, child.stderr[-2000:]
            hits.append(child.stdout.split()[-1])
    assert hits == ["0", "1"]
