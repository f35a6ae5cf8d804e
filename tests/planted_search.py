"""A bench of planted timings for :class:`surrobench.tune.search.Search` (:class:`surrobench.tune.bench.Bench`):
the search runs its real decisions on latencies known by construction, no model, no clock of its own."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from surrobench.analysis.accuracy import AccuracyVerdict
from surrobench.execution.remedies import Recipe, Remedy, candidate_remedies
from surrobench.tune.search import Search

BASELINE_MS = 10.0


class PlantedClock:
    """Seconds that pass only when the bench says so (each window takes :attr:`PlantedBench.window_s`)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class PlantedHandle:
    """A candidate's rounds as the bench planted them; ``name`` its recipe."""

    def __init__(self, name: str, setup_ms: float = 1.0) -> None:
        self.name, self.setup_ms, self.rounds, self.nonfinite = name, setup_ms, [], None

    def samples_ms(self) -> list[list[float]]:
        return [list(r) for r in self.rounds]

    def result(self) -> None:
        return None


class PlantedBench:
    """Speedups over the baseline (:data:`BASELINE_MS`) by recipe name, a number or a function of how many windows
    that handle was timed in before; each round ``calls`` calls with 0.5% noise (seeded), the baseline's too.

    Args:
        speedups: recipe name -> speedup over the baseline (``"baseline"``: a factor on the baseline itself).
        rounds: rounds per window; ``calls`` calls per round.
        inaccurate: recipe names the accuracy guard rejects; ``broken``: names that raise when built.
        infeasible: remedy name -> the reason it is not tried.
        fail: window index (0-based, over the bench) -> the exception that window raises, before any round.
        crowded: the device is always too full to keep timed handles (they are released, and rebuilt).
        clock: advanced by ``window_s`` per window of ``rounds`` rounds (pro rata for one cut short by ``stop``),
            times the slowness of its slowest handle (``slow``: recipe name -> factor, 1 unless told).
        reserve_s: the fresh processes' share of the budget for a recipe of a given setup (ms -> s).
        setup_ms: recipe name -> its setup, ms (1 ms unless told).
        free_cores: the CPU cores other processes left free (None: unread).
    """

    def __init__(
        self,
        speedups: dict[str, float | Callable[[int], float]],
        *,
        rounds: int = 2,
        calls: int = 20,
        inaccurate: tuple[str, ...] = (),
        broken: tuple[str, ...] = (),
        infeasible: dict[str, str] | None = None,
        fail: dict[int, BaseException] | None = None,
        crowded: bool = False,
        clock: PlantedClock | None = None,
        window_s: float = 1.0,
        reserve_s: Callable[[float], float] = lambda setup_ms: 0.0,
        setup_ms: dict[str, float] | None = None,
        slow: dict[str, float] | None = None,
        free_cores: int | None = None,
    ) -> None:
        self.speedups, self.rounds, self.calls = speedups, rounds, calls
        self.inaccurate, self.broken, self._infeasible = inaccurate, broken, infeasible or {}
        self.fail, self._crowded, self.clock, self.window_s = fail or {}, crowded, clock, window_s
        self.reserve_s, self.setup_ms, self.slow, self.cores = reserve_s, setup_ms or {}, slow or {}, free_cores
        self.baseline = PlantedHandle("baseline")
        self.windows: list[list[str]] = []  # the handles of each window that finished, by name
        self.opened: list[str] = []
        self._seen: dict[int, int] = {}
        self._rng = np.random.default_rng(7)

    device = "cuda"

    def infeasible(self, remedy: Remedy) -> str | None:
        return self._infeasible.get(remedy.name)

    def open(self, recipe: Recipe) -> PlantedHandle:
        self.opened.append(recipe.name)
        if recipe.name in self.broken:
            raise RuntimeError(f"{recipe.name} exploded while building")
        return PlantedHandle(recipe.name, self.setup_ms.get(recipe.name, 1.0))

    def accuracy(self, handle: PlantedHandle) -> AccuracyVerdict:
        ok = handle.name not in self.inaccurate
        return AccuracyVerdict(ok, "rel_l2", "rel L2 1e-07" if ok else "rel L2 3e-02 over 1e-02", 1e-7, 1e-7)

    def _round(self, handle: PlantedHandle) -> tuple[float, ...]:
        x = self.speedups.get(handle.name, 1.0)
        x = x(self._seen.get(id(handle), 0)) if callable(x) else x
        ms = BASELINE_MS * (x if handle is self.baseline else 1.0 / x)
        return tuple(ms * (1 + 0.005 * self._rng.standard_normal(self.calls)))

    def window(self, handles, stop=None) -> None:
        index = len(self.windows)
        if index in self.fail:
            self.windows.append(["(failed)"])
            raise self.fail[index]
        pace = max((self.slow.get(h.name, 1.0) for h in handles), default=1.0)
        for _ in range(self.rounds):
            for h in (self.baseline, *handles):
                h.rounds.append(self._round(h))
            if self.clock is not None:
                self.clock.now += pace * self.window_s / self.rounds
            if stop is not None and stop():
                break
        for h in (self.baseline, *handles):
            self._seen[id(h)] = self._seen.get(id(h), 0) + 1
        self.windows.append([h.name for h in handles])

    def free_cores(self) -> int | None:
        return self.cores

    def round_s(self) -> float:
        return self.window_s / (2 * self.rounds)

    def free(self) -> None:
        pass

    def crowded(self) -> bool:
        return self._crowded

    def not_faster_note(self, recipe: Recipe) -> str | None:
        return None

    def process_windows(self, recipe: Recipe, handle: PlantedHandle, setup_ms: float) -> None:
        return None

    def process_reserve_s(self, setup_ms: float) -> float:
        return self.reserve_s(setup_ms)


def remedies(*names: str) -> list[Remedy]:
    """The CUDA remedies (and ``threads=N`` ones) of these names, in this order."""
    known = {r.name: r for r in candidate_remedies("cuda")}
    threads = {f"threads={n}": Remedy(f"threads={n}", (("threads", n),), ("cpu",), "", ()) for n in (1, 4)}
    return [{**known, **threads}[n] for n in names]


def planted_search(bench: PlantedBench, *, budget_end: float = float("inf"), budget_s: float | None = None) -> Search:
    """A :class:`Search` over ``bench``, its clock the bench's (or one that never moves), its budget ``budget_s``
    (``budget_end`` unless told: the clock starts at 0)."""
    budget_s = budget_end if budget_s is None else budget_s
    return Search(bench, bench.rounds, budget_s=budget_s, budget_end=budget_end, clock=bench.clock or PlantedClock())
