"""An optimize recipe measured again in fresh processes (why and how judged: :mod:`surrobench.results.optimize`):
each pair one new process of the baseline's config and one of the recipe's (:mod:`surrobench.tune.fresh_child`),
alternating first (B R, R B, ...) so a drift falls on both sides; runs tagged ``fresh:...`` (:func:`check_fresh`)
or ``confirm:...`` (the search's own windows, :func:`process_windows`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from surrobench.execution.compile_cache import cache_env
from surrobench.errors import Interrupted
from surrobench.execution.config import ExecConfig
from surrobench.records.run import run_from_json
from surrobench.results.optimize import ConfigOptimization, FreshCheck, judge_fresh, process_medians

#: Longest one fresh process may take, seconds (a torch.compile recipe compiles again in each process).
FRESH_TIMEOUT_S = 600.0
#: After Ctrl-C, how long a fresh process is given to store its run as interrupted before it is killed, seconds.
FRESH_GRACE_S = 30.0


class _FreshFailed(Exception):
    """A fresh process did not produce a measured config; the message is its one-line cause."""


def _env() -> dict[str, str]:
    """This environment with the imported ``surrobench``'s folder first on PYTHONPATH (the child runs the same
    surrobench) and this process's compile cache (:func:`surrobench.execution.compile_cache.cache_env`)."""
    home = str(Path(__file__).resolve().parents[2])  # .../surrobench/tune/fresh.py -> the folder of surrobench
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, **cache_env(os.environ), "PYTHONPATH": home + (os.pathsep + path if path else "")}


def _argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "surrobench.tune.fresh_child", "--config", str(config)]


def _one_run(config: dict, tag: str, db: Path, out: Path) -> tuple[list[float], str]:
    """(Per-call host latencies, ms; run id) of ``config`` measured in a new process; :class:`_FreshFailed` when it
    timed out (:data:`FRESH_TIMEOUT_S`), exited non-zero or measured nothing."""
    path = out.with_suffix(".config.json")
    path.write_text(json.dumps(config))
    argv = _argv(path) + ["--db", str(db), "--json", str(out), "--tag", tag]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=FRESH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise _FreshFailed(f"{tag} timed out after {FRESH_TIMEOUT_S:.0f} s") from None
        except KeyboardInterrupt:  # the child may not have seen the signal (a signal sent to this process only)
            proc.send_signal(signal.SIGINT)  # the child then marks its run interrupted and exits
            try:
                proc.communicate(timeout=FRESH_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
    if not out.exists():  # refused before measuring (exit 2) or killed: its last line may say why
        last = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        raise _FreshFailed(f"{tag} exited {proc.returncode} without storing a run; its last line: {last}")
    try:
        run = run_from_json(json.loads(out.read_text()))
    except (OSError, ValueError) as exc:  # DocumentError and JSONDecodeError are ValueErrors
        raise _FreshFailed(f"{tag} wrote an unreadable run JSON: {exc}") from None
    result = run.results[0] if run.results else None
    if result is None or result.status != "ok" or not result.samples_ms:  # exit 3: the config's own error
        why = f"{result.status}: {result.error}" if result else "no config"
        raise _FreshFailed(f"{tag} (run {run.run_id}) measured nothing: {why}")
    if proc.returncode != 0:
        raise _FreshFailed(f"{tag} (run {run.run_id}) exited {proc.returncode}")
    return list(result.samples_ms), run.run_id


def _alternating_pairs(
    configs: dict[str, dict],
    pairs: int,
    prefix: str,
    db: Path | None,
    rounds: dict[str, list[list[float]]],
    run_ids: list[str],
    budget: PairBudget | None = None,
) -> int:
    """``pairs`` pairs of ``configs`` (``"baseline"``, ``"recipe"``), alternating, tagged ``prefix:side``; each
    process's samples appended to ``rounds[side]``, its run id to ``run_ids``. With ``budget``, a pair starts
    only when it fits; returns how many pairs were skipped.

    Raises:
        _FreshFailed: a process failed (:func:`_one_run`).
        KeyboardInterrupt: Ctrl-C, after the running process was given time to store its run.
    """
    with tempfile.TemporaryDirectory(prefix="surrobench-fresh-") as tmp:
        db = db or Path(tmp) / "fresh.db"
        for i in range(pairs):
            if budget is not None and not budget.fits():
                return pairs - i
            started = time.monotonic()
            for side in ("baseline", "recipe") if i % 2 == 0 else ("recipe", "baseline"):
                out = Path(tmp) / f"{i}-{side}.json"
                samples, run_id = _one_run(configs[side], f"{prefix}:{side}", db, out)
                rounds[side].append(samples)
                run_ids.append(run_id)
            if budget is not None:
                budget.pair_s = time.monotonic() - started  # the next pair is estimated by this one
    return 0


@dataclass
class PairBudget:
    """``deadline`` (``time.monotonic()``) by which the last fresh pair must end; ``pair_s``, seconds one pair
    takes (:func:`pair_estimate_s`, then the last pair's)."""

    deadline: float
    pair_s: float

    def fits(self) -> bool:
        return time.monotonic() + self.pair_s <= self.deadline


#: A fresh process's own cost besides its model's setup and timed calls, seconds, by device (imports, device
#: init, model build, store), an estimate for the budget until a pair has run (:class:`PairBudget`); measured:
#: docs/benchmarks/h200-optimize.md, "Compiled recipes at batch 8".
PROCESS_START_S = {"cpu": 3.0, "cuda": 15.0}


def pair_estimate_s(setup_ms: tuple[float, float], call_ms: tuple[float, float], calls: int, device: str) -> float:
    """Seconds one fresh pair takes: per side (baseline, recipe) :data:`PROCESS_START_S`, ``setup_ms`` as measured
    here (an upper bound: the shared compile cache speeds a fresh one) and ``calls`` calls at ``call_ms``."""
    start = PROCESS_START_S[device]
    return sum(start + (setup + calls * call) / 1000.0 for setup, call in zip(setup_ms, call_ms))


@dataclass(frozen=True)
class ProcessWindows:
    """Timing windows of a baseline and its recipe in pairs of fresh processes: ``windows`` pairs that finished,
    ``windows * rounds`` rounds a side (ms per call); ``error``, a failed process's cause; ``skipped`` pairs the
    budget would not fit. The pairs before a failure or Ctrl-C stand."""

    windows: int
    baseline_rounds: tuple[tuple[float, ...], ...]
    recipe_rounds: tuple[tuple[float, ...], ...]
    run_ids: tuple[str, ...]
    error: str | None
    elapsed_s: float
    interrupted: bool = False
    skipped: int = 0


def process_windows(
    baseline: ExecConfig,
    recipe: ExecConfig,
    *,
    pairs: int,
    rounds: int,
    warmup: int,
    iters: int,
    db: Path | None,
    budget: PairBudget | None = None,
) -> ProcessWindows:
    """``pairs`` more windows of ``recipe`` and ``baseline`` in fresh pairs (stored in ``db``; None: not kept), each
    process timing ``warmup`` and ``rounds*iters`` calls split into ``rounds`` rounds. Ctrl-C ends the pairs
    (``interrupted``); with ``budget``, a pair that would not fit is ``skipped``."""
    configs = {
        side: replace(cfg, warmup=warmup, iters=rounds * iters).to_json()
        for side, cfg in (("baseline", baseline), ("recipe", recipe))
    }
    started = time.monotonic()
    done: dict[str, list[list[float]]] = {"baseline": [], "recipe": []}
    run_ids: list[str] = []
    error, interrupted, skipped = None, False, 0
    try:
        skipped = _alternating_pairs(configs, pairs, "confirm", db, done, run_ids, budget)
    except _FreshFailed as exc:  # the pairs that finished stand
        error = str(exc)
    except KeyboardInterrupt:  # _one_run let the running process store its run; the finished pairs stand
        interrupted = True
    whole = [len(b) >= rounds * iters and len(r) >= rounds * iters for b, r in zip(done["baseline"], done["recipe"])]
    complete = whole.index(False) if False in whole else len(whole)  # a run cut short ends the usable pairs
    if complete < len(whole) and error is None:
        error = f"a confirm process measured fewer than {rounds * iters} calls"

    def split(side: str) -> tuple[tuple[float, ...], ...]:
        return tuple(
            tuple(samples[r * iters : (r + 1) * iters]) for samples in done[side][:complete] for r in range(rounds)
        )

    elapsed = time.monotonic() - started
    return ProcessWindows(
        complete, split("baseline"), split("recipe"), tuple(run_ids), error, elapsed, interrupted, skipped
    )


def check_fresh(
    entry: ConfigOptimization,
    *,
    pairs: int,
    db: Path | None,
    on_phase: Callable[[str], None] = lambda text: None,
) -> FreshCheck | None:
    """The :class:`FreshCheck` of ``entry``'s recipe over ``pairs`` pairs of fresh processes (runs stored in ``db``;
    None: not kept); None when the entry has no recipe. ``on_phase`` gets one line before the first process.

    Raises:
        Interrupted: Ctrl-C; ``partial`` the :class:`FreshCheck` with verdict ``interrupted``, the run ids of the
            processes that finished (stored in the database) and their medians.
    """
    best = entry.best
    if best is None or best.speedup is None or entry.fresh_configs is None:
        return None
    on_phase(f"checking {best.name} in {pairs} pair(s) of fresh processes")
    started = time.monotonic()
    rounds: dict[str, list[list[float]]] = {"baseline": [], "recipe": []}
    run_ids: list[str] = []
    configs = dict(zip(("baseline", "recipe"), entry.fresh_configs))
    try:
        _alternating_pairs(configs, pairs, "fresh", db, rounds, run_ids)
    except KeyboardInterrupt:  # _one_run has let the running process store its run; the finished ones stand
        raise Interrupted(
            "interrupted during the fresh check",
            FreshCheck(
                pairs=pairs,
                verdict="interrupted",
                reason=f"Ctrl-C after {len(run_ids)} of {2 * pairs} fresh processes"
                + (f" (runs {', '.join(run_ids)})" if run_ids else ""),
                baseline_ms=process_medians(rounds["baseline"]),
                recipe_ms=process_medians(rounds["recipe"]),
                run_ids=tuple(run_ids),
                elapsed_s=time.monotonic() - started,
            ),
        ) from None
    except _FreshFailed as exc:
        return FreshCheck(
            pairs=pairs,
            verdict="failed",
            reason=f"a fresh process failed: {exc}",
            run_ids=tuple(run_ids),
            error=str(exc),
            elapsed_s=time.monotonic() - started,
        )
    n = min(len(r) for side in rounds.values() for r in side)  # equal unless a run was cut short
    return judge_fresh(
        entry.recipe_speedup or best.speedup,
        [r[:n] for r in rounds["baseline"]],
        [r[:n] for r in rounds["recipe"]],
        units=entry.recipe_process_speedups,
        pairs=pairs,
        run_ids=tuple(run_ids),
        elapsed_s=time.monotonic() - started,
    )
