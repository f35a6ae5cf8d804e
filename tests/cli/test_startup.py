"""The commands that need no model start without torch (docs/benchmarks/startup.md).

What a command imports is a property of a fresh process, so each case runs the CLI in one and reads its
``sys.modules`` after the command finished: torch (1.5 s to import), and for the listing commands scipy.stats
and matplotlib (about 1 s each), stay out. How long the start takes is measured in docs/benchmarks/startup.md,
never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from surrobench.records.run import RunRecord
from surrobench.results.serve_store import begin_serve, save_serve
from surrobench.results.store import ResultStore
from synthetic import config, latency_samples, run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
SRC = Path(__file__).resolve().parents[2] / "src"

# Runs the CLI in this process as the console command would, then reports what it had imported.
_PROBE = """
import json, sys
from surrobench.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "loaded": sorted(sys.modules)}), file=sys.stderr)
"""


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    """``surrobench ARGS`` started in a fresh process (:func:`_loaded` reads it)."""
    env = {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "COLUMNS": "100"}
    command = [sys.executable, "-c", _PROBE, *args]
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _loaded(proc: subprocess.Popen) -> tuple[int, set[str]]:
    """The exit code of a process :func:`_start` started and the top-level packages it imported."""
    _, err = proc.communicate(timeout=120)
    report = json.loads(err.strip().splitlines()[-1])
    return report["code"], {name.split(".")[0] for name in report["loaded"]}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A folder with two run JSON files (a base and a slower new run), the base also stored in ``runs.db``."""
    folder = tmp_path_factory.mktemp("startup")
    for name, median in (("base", 1.0), ("new", 1.5)):
        record: RunRecord = run(name, [config(latency_samples(median, 0.02))])
        (folder / f"{name}.json").write_text(json.dumps(record.to_json()))
    with ResultStore(folder / "runs.db") as store:
        store.begin_run(record)
        store.add_result(record.run_id, record.results[0])
        store.finish_run(record.run_id)
        served = _serve_record()
        begin_serve(store, served, None)
        save_serve(store, served)
    return folder


def _serve_record():
    """A serve run of one policy and one rate over a planted 1 ms service, on a virtual clock."""
    from dataclasses import replace

    from surrobench.api.serve import serve_policy, serve_request
    from surrobench.execution.batcher import VirtualClock
    from surrobench.records.serve import serve_from_json

    clock = VirtualClock()

    def service(k: int) -> float:
        clock.advance(1e-3)
        return 1e-3

    request = serve_request(rates=100, max_batch=1, max_wait_ms=0, duration_s=1.0)
    result = serve_policy(request, request.policies[0], service, 0, lambda: clock)
    workload = {"model": "pinn-mlp", "shape_label": "64", "precision": "fp32", "mode": "eager", "device": "cpu"}
    doc = {"schema": "surrobench/serve-v1", "run_id": "serve-run", "created": "2026-12-01T00:00:00", "tag": None}
    doc |= {"env": {}, "workload": workload, "url": None, "arrival": "poisson", "duration_s": 1.0, "warmup_s": 0.25}
    doc |= {"seed": 0, "target_p99_ms": None, "policies": [], "notes": []}
    return replace(serve_from_json(doc), policies=(result,))


COMMANDS = [
    ["--version"],
    ["--help"],
    ["optimize", "--help"],
    ["history", "--db", "runs.db"],
    ["show", "base.json"],
    ["show", "serve-run", "--db", "runs.db"],
    ["compare", "base.json", "new.json"],
    ["analyze", str(FIXTURES / "h200_tiny_mlp_b1.json.gz")],
]
REPORT = ["report", "base.json", "new.json", "-o", "r.html"]


@pytest.fixture(scope="module")
def probed(stored) -> dict[tuple[str, ...], tuple[int, set[str]]]:
    """Every case's process, started at once (each spends most of its ~0.8 s importing, on one core), read:
    ``tuple(args)`` -> (exit code, top-level packages imported)."""
    procs = {tuple(args): _start(args, stored) for args in [*COMMANDS, REPORT]}
    try:
        return {args: _loaded(proc) for args, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: args[0])
def test_commands_without_a_model_do_not_import_torch(args, probed):
    code, loaded = probed[tuple(args)]
    assert code in (0, None)
    assert "torch" not in loaded
    if args[0] in ("--version", "--help", "history", "show"):  # listing: no statistics, no plots
        assert not {"scipy", "matplotlib"} & loaded
    if args[0] == "--version":  # no command at all: not even numpy (0.08 s, docs/benchmarks/startup.md)
        assert "numpy" not in loaded


def test_report_of_run_files_draws_its_plots_without_torch(stored, probed):
    code, loaded = probed[tuple(REPORT)]
    assert code in (0, None)
    assert (stored / "r.html").stat().st_size > 0
    assert "torch" not in loaded and "matplotlib" in loaded
