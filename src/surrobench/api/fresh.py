"""Measure an optimize recipe again in fresh processes (:mod:`surrobench.results.fresh` says why and how
it is judged).

Each pair is one ``surrobench run`` of the baseline's command line and one of the recipe's (the lines
``optimize`` prints), launched as ``python -m surrobench run ...`` one after the other, the first of the
pair alternating (B R, R B, ...) so that a drift of the machine over the check falls on both sides. Every
fresh run is stored in the same database, tagged ``fresh:baseline`` / ``fresh:recipe``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from surrobench.records.run import run_from_json
from surrobench.results.fresh import FreshCheck, judge_fresh, process_medians
from surrobench.results.optimize import ConfigOptimization

#: Longest one fresh process may take, seconds (a torch.compile recipe compiles again in each process).
FRESH_TIMEOUT_S = 600.0
#: After Ctrl-C, how long a fresh process is given to store its run as interrupted before it is killed, seconds.
FRESH_GRACE_S = 30.0


class _FreshFailed(Exception):
    """A fresh process did not produce a measured config; the message is its one-line cause."""


class FreshInterrupted(KeyboardInterrupt):
    """Ctrl-C during the fresh check: ``check`` is the :class:`FreshCheck` with verdict ``interrupted``, the
    run ids of the processes that finished (stored in the database) and their medians."""

    def __init__(self, check: FreshCheck) -> None:
        super().__init__()
        self.check = check


def _env() -> dict[str, str]:
    """This environment, with the folder that holds the imported ``surrobench`` first on PYTHONPATH, so the
    fresh process runs the same surrobench as this one (a source checkout as well as an installed one)."""
    home = str(Path(__file__).resolve().parents[2])  # .../surrobench/api/fresh.py -> the folder of surrobench
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": home + (os.pathsep + path if path else "")}


def _words(command: str) -> list[str]:
    """``surrobench run ...`` as the argv of this interpreter."""
    words = shlex.split(command)
    return [sys.executable, "-m", "surrobench", *words[1:]]


def _one_run(command: str, tag: str, db: Path, out: Path, timeout_s: float) -> tuple[list[float], str]:
    """Run ``command`` in a new process; returns (its per-iteration host latencies, ms; its run id).

    Raises:
        _FreshFailed: the process timed out, exited non-zero or measured nothing.
    """
    argv = _words(command) + ["--db", str(db), "--json", str(out), "--tag", tag]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise _FreshFailed(f"{tag} timed out after {timeout_s:.0f} s") from None
        except KeyboardInterrupt:  # the child may not have seen the signal (a signal sent to this process only)
            proc.send_signal(signal.SIGINT)  # `surrobench run` then marks its run interrupted and exits
            try:
                proc.communicate(timeout=FRESH_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            raise
    if proc.returncode != 0 or not out.exists():
        last = (stderr.strip() or stdout.strip() or "no output").splitlines()[-1]
        raise _FreshFailed(f"{tag} exited {proc.returncode}: {last}")
    try:
        run = run_from_json(json.loads(out.read_text()))
    except (OSError, ValueError) as exc:  # RunJsonError and JSONDecodeError are ValueErrors
        raise _FreshFailed(f"{tag} wrote an unreadable run JSON: {exc}") from None
    result = run.results[0] if run.results else None
    if result is None or result.status != "ok" or not result.samples_ms:
        raise _FreshFailed(f"{tag} measured nothing: {result.error if result else 'no config'}")
    return list(result.samples_ms), run.run_id


def check_fresh(
    entry: ConfigOptimization, *, pairs: int, db: Path | None, timeout_s: float = FRESH_TIMEOUT_S
) -> FreshCheck | None:
    """The :class:`FreshCheck` of ``entry``'s recipe over ``pairs`` pairs of fresh processes, their runs stored
    in ``db`` (None: a temporary database, not kept); None when the entry has no recipe (nothing to check).

    Raises:
        ValueError: ``pairs`` < 2 (the CI draws processes, and needs two a side).
        FreshInterrupted: Ctrl-C; it carries the check as far as it got.
    """
    if pairs < 2:
        raise ValueError(f"pairs must be >= 2, got {pairs}")
    best = entry.best
    if best is None or best.speedup is None or not entry.run_command or not entry.baseline_command:
        return None
    started = time.monotonic()
    rounds: dict[str, list[list[float]]] = {"baseline": [], "recipe": []}
    run_ids: list[str] = []
    commands = {"baseline": entry.baseline_command, "recipe": entry.run_command}
    with tempfile.TemporaryDirectory(prefix="surrobench-fresh-") as tmp:
        db = db or Path(tmp) / "fresh.db"
        try:
            for i in range(pairs):
                for side in ("baseline", "recipe") if i % 2 == 0 else ("recipe", "baseline"):
                    out = Path(tmp) / f"{i}-{side}.json"
                    samples, run_id = _one_run(commands[side], f"fresh:{side}", db, out, timeout_s)
                    rounds[side].append(samples)
                    run_ids.append(run_id)
        except KeyboardInterrupt:  # _one_run has let the running process store its run; the finished ones stand
            raise FreshInterrupted(
                FreshCheck(
                    pairs=pairs,
                    verdict="interrupted",
                    reason=f"interrupted by Ctrl-C after {len(run_ids)} of {2 * pairs} fresh processes",
                    baseline_ms=process_medians(rounds["baseline"]),
                    recipe_ms=process_medians(rounds["recipe"]),
                    run_ids=tuple(run_ids),
                    elapsed_s=time.monotonic() - started,
                )
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
        pairs=pairs,
        run_ids=tuple(run_ids),
        elapsed_s=time.monotonic() - started,
    )
