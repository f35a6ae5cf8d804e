"""Nsight Compute collection: one config's step under ``ncu``, restricted to the kernels that hold its time.

The command (Nsight Compute CLI docs, "Command Line Options")::

    ncu --nvtx --nvtx-include surrobench_step/ --kernel-name-base function
        --kernel-name 'regex:^(?:.*::)?(?:name1|name2)$' --clock-control none --cache-control all
        --print-units base --print-kernel-base demangled --csv --page raw --metrics M1,M2,...
        --log-file OUT.csv  python -m surrobench.collect.child ... --profiler ncu

- ``--nvtx-include``: only the one step the child runs in :data:`surrobench.collect.child.STEP_RANGE`.
- ``--kernel-name``: base function names (:func:`surrobench.records.counters.function_name`) holding
  :data:`COVERAGE` of the step's kernel time, at most :data:`MAX_KERNELS` (:func:`select_kernels`).
- ``--clock-control none``: the clocks of the timed loop (ncu's default locks base clocks: a slower GPU).
- ``--cache-control all``: L2 flushed before each of the ~18 replay passes, so every pass's DRAM counters
  describe the same cold execution (else small kernels read near-zero DRAM); DRAM bytes are an upper bound.

Latency comes from the timed runs only; ncu runs in its own child after them. A missing ``ncu`` or refused
counters are a :class:`CounterProblem` with its fix, never an exception.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.collect.child import STEP_RANGE, child_argv
from surrobench.collect.ncu_dedup import LAUNCH_METRICS, credit, measured_count, replay_depth, replayed_count
from surrobench.collect.ncu_parse import METRICS, error_line, ncu_problem, parse_raw_csv
from surrobench.collect.torch_profiler import ProfileSchedule
from surrobench.records.counters import CounterProblem, KernelCounters, function_name
from surrobench.records.kernels import KernelTable

#: Share of the step's kernel time the selected names must hold (a product choice, not a hardware limit).
COVERAGE = 0.90
#: At most this many kernel names are replayed: each costs ~18 passes per launch on an H200.
MAX_KERNELS = 20
#: The child's steps under ncu: a few bare warm-up steps (caching allocator, cuBLAS heuristics), then one.
NCU_SCHEDULE = ProfileSchedule(wait=0, warmup=3, active=1)
#: Wall-clock limit of one ncu run, s.
NCU_TIMEOUT_S = 900
#: Launches measured without a name filter when the filter matched none (ncu's ``function`` base spells a name
#: otherwise than :func:`function_name`); ~18 passes each.
FALLBACK_LAUNCHES = 3 * MAX_KERNELS
_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


def select_kernels(
    table: KernelTable, coverage: float = COVERAGE, cap: int = MAX_KERNELS
) -> tuple[tuple[str, ...], float]:
    """The base function names of the longest kernels, by device time, until they hold ``coverage`` of the
    table's kernel time or ``cap`` names; returns them and the share they hold (0..1)."""
    by_name: dict[str, float] = {}
    for k in table.kernels:
        by_name[function_name(k.name)] = by_name.get(function_name(k.name), 0.0) + k.device_us
    total = sum(by_name.values())
    chosen, held = [], 0.0
    for name, us in sorted(by_name.items(), key=lambda kv: -kv[1]):
        if len(chosen) >= cap or (total > 0 and held / total >= coverage):
            break
        chosen.append(name)
        held += us
    return tuple(chosen), (held / total if total > 0 else 0.0)


def ncu_command(
    ncu: str,
    kernels: tuple[str, ...],
    log_file: Path,
    target: list[str],
    launch_count: int | None = None,
    *,
    metrics: tuple[str, ...] = METRICS,
    per_config: bool = False,
) -> list[str]:
    """The ``ncu`` command line of the module docstring; no ``--kernel-name`` filter when ``kernels`` is empty,
    and ``--launch-count`` when ``launch_count`` is given, counted per launch configuration when ``per_config``
    (``--filter-mode per-launch-config``: a deduplicated run, :mod:`surrobench.collect.ncu_dedup`)."""
    cmd = [ncu, "--nvtx", "--nvtx-include", f"{STEP_RANGE}/", "--clock-control", "none", "--cache-control", "all"]
    if kernels:
        cmd += ["--kernel-name-base", "function", "--kernel-name", f"regex:^(?:.*::)?(?:{'|'.join(kernels)})$"]
    if per_config:
        cmd += ["--filter-mode", "per-launch-config"]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    cmd += ["--print-units", "base", "--print-kernel-base", "demangled", "--csv", "--page", "raw"]
    return cmd + ["--metrics", ",".join(metrics), "--log-file", str(log_file), *target]


@dataclass(frozen=True)
class NcuRun:
    """One ncu run: its command, wall seconds, the launches it measured, or the problem. ``enumerated_passes``:
    a deduplicated run's passes in no launch's ``passes`` (the enumerating pass, replays beyond a signature's first)."""

    command: tuple[str, ...]
    wall_s: float | None
    kernels: tuple[KernelCounters, ...] = ()
    problem: CounterProblem | None = None
    enumerated_passes: int = 0


def run_ncu(config_path: Path, work_dir: Path, kernels: tuple[str, ...], dedup: bool = True) -> NcuRun:
    """The profiling child of ``config_path`` (an ExecConfig's JSON) under ncu, files in
    ``work_dir``; ncu's failures are the problem, never raised. ``dedup``: :func:`deduplicated_run` first, else
    every launch (time spent counted in ``wall_s``). A ``kernels`` filter matching nothing (``no_kernels``): once
    more on the first :data:`FALLBACK_LAUNCHES` launches, that command returned (no ``--kernel-name``)."""
    spent = 0.0
    if dedup:
        done, spent = deduplicated_run(config_path, work_dir, kernels)
        if done is not None:
            return done
    done = _run_once(config_path, work_dir, kernels, None)
    if kernels and done.problem is not None and done.problem.kind == "no_kernels":
        again = _run_once(config_path, work_dir, (), FALLBACK_LAUNCHES)
        done = replace(again, wall_s=(again.wall_s or 0.0) + (done.wall_s or 0.0))
    return replace(done, wall_s=done.wall_s + spent) if done.wall_s is not None else done


def deduplicated_run(config_path: Path, work_dir: Path, kernels: tuple[str, ...]) -> tuple[NcuRun | None, float]:
    """The step's launches of ``kernels`` with identical launches measured once (:mod:`surrobench.collect.ncu_dedup`):
    one enumerating pass, one counter run of the first :func:`replay_depth` launches of each launch configuration,
    every launch credited. Returns the run (None when deduplication saves nothing or cannot hold) and the wall
    seconds its ncu runs took."""
    listed = _run_once(config_path, work_dir, kernels, None, metrics=LAUNCH_METRICS)
    spent, launches = listed.wall_s or 0.0, listed.kernels
    if listed.problem is not None or not launches or measured_count(launches) == len(launches):
        return None, spent
    if replayed_count(launches, depth := replay_depth(launches)) >= len(launches):
        return None, spent
    run = _run_once(config_path, work_dir, kernels, depth, per_config=True)
    spent += run.wall_s or 0.0
    credited = credit(run.kernels, launches) if run.problem is None else None
    if credited is None:
        return None, spent
    beyond_first = sum(k.passes or 0 for k in run.kernels) - sum(k.passes or 0 for k in credited)
    passes = sum(k.passes or 0 for k in launches) + beyond_first  # the enumerating pass's and the uncredited
    return NcuRun(run.command, spent, credited, None, passes), spent


def _run_once(
    config_path: Path,
    work_dir: Path,
    kernels: tuple[str, ...],
    launch_count: int | None,
    *,
    metrics: tuple[str, ...] = METRICS,
    per_config: bool = False,
) -> NcuRun:
    log_file, result = work_dir / "ncu_raw.csv", work_dir / "ncu_child.json"
    log_file.unlink(missing_ok=True)
    target = child_argv(config_path, result, NCU_SCHEDULE, profiler="ncu")
    candidates = (os.environ.get("NCU"), shutil.which("ncu"), *_CANDIDATES)  # then the CUDA toolkit's usual places
    ncu = next((c for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)
    cmd = ncu_command(ncu or "ncu", kernels, log_file, target, launch_count, metrics=metrics, per_config=per_config)
    if ncu is None:
        fix = "install NVIDIA Nsight Compute (CUDA toolkit) or set $NCU; where it is, this runs: "
        return NcuRun(tuple(cmd), None, problem=CounterProblem("ncu_missing", "ncu not found: " + fix + " ".join(cmd)))
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=NCU_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        problem = CounterProblem("failed", f"ncu ran over {NCU_TIMEOUT_S:.0f} s and was stopped; select fewer kernels")
        return NcuRun(tuple(cmd), time.perf_counter() - t0, problem=problem)
    wall_s = time.perf_counter() - t0
    text = log_file.read_text(errors="replace") if log_file.is_file() else ""
    output = "\n".join((text, done.stdout or "", done.stderr or ""))
    try:
        launches = parse_raw_csv(text) if text else ()
    except ValueError:
        launches = ()
    if launches:
        return NcuRun(tuple(cmd), wall_s, launches)
    problem = ncu_problem(output) or CounterProblem("failed", f"ncu exited {done.returncode}: {error_line(output)}")
    return NcuRun(tuple(cmd), wall_s, problem=problem)
