"""Identical launches measured once: the plan of a deduplicated ``--counters`` run and the crediting of its counters.

Each replayed launch costs ncu ~18 passes, and a step repeating a block launches the same kernel with the same
grid and block many times, with the same counters up to noise. A deduplicated run:

1. enumerates the step's launches in one cheap pass (:data:`LAUNCH_METRICS`, no counter replay);
2. replays the first ``k`` launches of each launch configuration in one run (``--filter-mode per-launch-config
   --launch-count k``, Nsight Compute CLI docs, "Filter Options"), ``k`` from the enumerated order so that every
   :func:`signature`'s first launch is among them (:func:`replay_depth`), under the same function-name filter as a
   full run (exact demangled-name filters miss names: docs/benchmarks/h200-measured-advice.md);
3. credits each launch its signature's counters with ``passes`` 0 (:func:`credit`).

It is used where it replays fewer launches than the step has (:func:`replayed_count`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from surrobench.records.counters import KernelCounters

#: The enumerating pass's metrics: launch statistics (read at launch, no replay) and the duration (one pass).
LAUNCH_METRICS = ("gpu__time_duration.sum", "launch__grid_size", "launch__block_size")
LAUNCH_METRICS += ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")


def signature(k: KernelCounters) -> tuple:
    """``(name, grid_size, block_size, shared_mem_per_block_bytes)``: launches with one signature run the same
    code over the same grid, and ncu reads the same counters for them."""
    return (k.name, k.grid_size, k.block_size, k.shared_mem_per_block_bytes)


def launch_config(k: KernelCounters) -> tuple:
    """The launch configuration ncu's ``per-launch-config`` filter mode counts launches by (no name)."""
    return (k.grid_size, k.block_size, k.shared_mem_per_block_bytes)


def replay_depth(launches: tuple[KernelCounters, ...]) -> int:
    """``k`` for ``--filter-mode per-launch-config --launch-count k`` over ``launches`` (enumerated, in launch order):
    the latest position, counted within its :func:`launch_config`, of a :func:`signature`'s first launch. The first
    ``k`` launches of every configuration then hold the first launch of every signature, whether ncu counts a
    configuration with or without the kernel name (a finer count only moves a first launch earlier)."""
    counts: Counter = Counter()
    seen, depth = set(), 0
    for k in launches:
        counts[launch_config(k)] += 1
        if signature(k) not in seen:
            seen.add(signature(k))
            depth = max(depth, counts[launch_config(k)])
    return depth


def replayed_count(launches: tuple[KernelCounters, ...], depth: int) -> int:
    """How many of ``launches`` a run at ``--launch-count depth`` per launch configuration replays."""
    return sum(min(depth, n) for n in Counter(launch_config(k) for k in launches).values())


def credit(
    measured: tuple[KernelCounters, ...], launches: tuple[KernelCounters, ...]
) -> tuple[KernelCounters, ...] | None:
    """Every launch of ``launches`` (enumerated, in launch order) with the counters and duration of the ``measured``
    launch of its :func:`signature` and its own ``launch`` ID; ``passes`` kept on a signature's first, else 0.
    None when a signature was not measured."""
    by_signature: dict[tuple, KernelCounters] = {}
    for k in measured:
        by_signature.setdefault(signature(k), k)
    out, seen = [], set()
    for launch in launches:
        key = signature(launch)
        source = by_signature.get(key)
        if source is None:
            return None
        first = key not in seen
        seen.add(key)
        out.append(replace(source, launch=launch.launch, passes=source.passes if first else 0))
    return tuple(out)


def measured_count(launches: tuple[KernelCounters, ...]) -> int:
    """How many distinct :func:`signature` values ``launches`` hold."""
    return len({signature(k) for k in launches})
