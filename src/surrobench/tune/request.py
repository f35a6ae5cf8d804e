"""What ``surrobench optimize`` is asked for (:class:`OptimizeRequest`), its defaults and their checks."""

from __future__ import annotations

import math

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from surrobench.analysis.accuracy import DEFAULT_TOLERANCE
from surrobench.errors import UsageError
from surrobench.execution.remedies import candidate_remedies
from surrobench.records.vocab import remedy_id

if TYPE_CHECKING:
    from surrobench.execution.sweep import SweepPlan

#: Default time for one config, seconds: a compiled search and one pair of fresh processes of its recipe
#: (:meth:`surrobench.tune.bench.DeviceBench.process_reserve_s`), the config ending within 3 minutes
#: (docs/benchmarks/h200-optimize.md, "Compiled recipes at batch 8").
DEFAULT_BUDGET_S = 150.0
#: Most pairs of fresh processes ``verify`` or ``processes`` runs (each pair two process starts).
MAX_FRESH_PAIRS = 20
#: Rounds per measurement: 6 gives the A/A split 3 rounds a side (the two-stage bootstrap draws rounds).
DEFAULT_ROUNDS = 6
#: Pairs of fresh processes in which the search times its recipe with the baseline once more (each pair one more
#: timing window of the recipe's interval; docs/benchmarks/h200-optimize.md, "Windows and processes").
DEFAULT_PROCESS_PAIRS = 2


@dataclass(frozen=True)
class OptimizeRequest:
    """What to optimize: the planned ``sweeps`` (their ``warmup``/``iters`` bound each round) and the search:
    ``budget_s`` per config, the accuracy ``tolerance`` (rel L2), ``thorough`` (adds
    ``max-autotune-no-cudagraphs``), ``rounds`` per measurement, ``only`` the remedy names to try (None: all),
    ``process_pairs`` of fresh processes timing the recipe once more (needs ``rebuildable``), ``fresh_pairs``
    checking each recipe afterwards (0 or >= 2), ``rebuildable``: a command line can name the model."""

    sweeps: tuple[SweepPlan, ...]
    budget_s: float = DEFAULT_BUDGET_S
    tolerance: float = DEFAULT_TOLERANCE
    thorough: bool = False
    rounds: int = DEFAULT_ROUNDS
    only: tuple[str, ...] | None = None
    fresh_pairs: int = 0
    rebuildable: bool = True
    process_pairs: int = 0

    def __post_init__(self) -> None:
        check_search(
            budget_s=self.budget_s,
            tolerance=self.tolerance,
            rounds=self.rounds,
            verify=self.fresh_pairs,
            processes=self.process_pairs,
        )


def check_search(*, budget_s: float, tolerance: float, rounds: int, verify: int, processes: int = 0) -> None:
    """Check the search settings.

    Raises:
        UsageError: a value of the wrong type; ``budget_s`` <= 0; ``tolerance`` outside (0, 1); ``rounds`` < 2
            (the noise floor splits the baseline's rounds in two); ``verify`` neither 0 nor at least 2 (the fresh
            CI draws processes); ``processes`` outside 0 to :data:`MAX_FRESH_PAIRS`.
    """
    for name, value, kinds in (
        ("budget_s", budget_s, (int, float)),
        ("tolerance", tolerance, (int, float)),
        ("rounds", rounds, (int,)),
        ("verify", verify, (int,)),
        ("processes", processes, (int,)),
    ):
        if isinstance(value, bool) or not isinstance(value, kinds):
            kind = "a whole number" if kinds == (int,) else "a number"
            raise UsageError.bad(name, f"{value!r}: {kind}, not {type(value).__name__}")
    if not 0 < budget_s < math.inf:
        raise UsageError.bad("budget_s", f"{budget_s}: a finite number of seconds > 0")
    if not 0 < tolerance < 1:
        raise UsageError.bad("tolerance", f"{tolerance}: a relative L2 error in (0, 1), e.g. 0.01")
    if rounds < 2:
        raise UsageError.bad("rounds", f"{rounds}: at least 2 (the noise floor splits the baseline's rounds in two)")
    if verify != 0 and not 2 <= verify <= MAX_FRESH_PAIRS:
        raise UsageError.bad(
            "verify",
            f"{verify}: 0 (no check) or 2 to {MAX_FRESH_PAIRS} pairs (the CI draws processes; each pair is two new "
            "processes)",
        )
    if not 0 <= processes <= MAX_FRESH_PAIRS:
        raise UsageError.bad("processes", f"{processes}: 0 (in-process windows only) to {MAX_FRESH_PAIRS} pairs")


def remedy_names(only: str | Sequence[str] | None, device: str, *, thorough: bool = False) -> tuple[str, ...] | None:
    """``only`` (comma-separated text or names) as remedy names known on ``device``, a remedy id standing for each
    of its candidates (``threads``: every ``threads=N``); None stays None (all). Raises UsageError for anything
    else, an unknown name, or none."""
    if only is None:
        return None
    if not isinstance(only, str) and not (isinstance(only, Sequence) and all(isinstance(n, str) for n in only)):
        raise UsageError.bad("only", f"{only!r}: remedy names, comma-separated text or a list of str")
    names = tuple(n.strip() for n in (only.split(",") if isinstance(only, str) else only) if n.strip())
    remedies = candidate_remedies(device, thorough=thorough)
    known = [r.name for r in remedies]
    ids = {n: [m for m in known if remedy_id(m) == n] for n in names if n not in known}
    names = tuple(dict.fromkeys(k for n in names for k in (ids.get(n) or [n])))
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        text = only if isinstance(only, str) else ",".join(only)
        runs = [r.name for r in remedies if device in r.devices]
        other = [r.name for r in remedies if device not in r.devices]  # named, then found infeasible, with why
        also = f"; not for {device}, reported infeasible: {', '.join(other)}" if other else ""
        raise UsageError.bad(
            "only",
            f"{text!r}: unknown remedy {', '.join(unknown) or '(none given)'}; on {device}: {', '.join(runs)}{also}",
        )
    return names
