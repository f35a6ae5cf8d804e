"""Identical launches measured once: the plan of a deduplicated ``--counters`` run and the crediting of its counters.

Each replayed launch costs ncu ~18 passes, and a step repeating a block launches the same kernel with the same
grid and block many times, with the same counters up to noise. A deduplicated run:

1. enumerates the step's launches in one cheap pass (:data:`LAUNCH_METRICS`, no counter replay);
2. measures each :func:`signature` once: ``--filter-mode per-launch-config --launch-count 1`` profiles the first
   launch of each launch configuration (Nsight Compute CLI docs, "Filter Options"), restricted by
   ``--kernel-name-base demangled --kernel-name regex:...`` to one group of names; names sharing a launch
   configuration would share ncu's count, so they go to different groups, one run each (:func:`launch_groups`);
3. credits each launch its signature's counters with ``passes`` 0 (:func:`credit`).

Each ncu run starts the child (~5 s on the H200), a replayed launch costs ~0.5 s (docs/benchmarks/h200-counters.md):
one run of every name at ``k`` launches per configuration may cost less than several groups (:func:`one_run_depth`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from surrobench.records.counters import KernelCounters

#: The enumerating pass's metrics: launch statistics (read at launch, no replay) and the duration (one pass).
LAUNCH_METRICS = (
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
)


def signature(k: KernelCounters) -> tuple:
    """``(name, grid_size, block_size, shared_mem_per_block_bytes)``: launches with one signature run the same
    code over the same grid, and ncu reads the same counters for them."""
    return (k.name, k.grid_size, k.block_size, k.shared_mem_per_block_bytes)


def launch_config(k: KernelCounters) -> tuple:
    """The launch configuration ncu's ``per-launch-config`` filter mode counts launches by (no name)."""
    return (k.grid_size, k.block_size, k.shared_mem_per_block_bytes)


def launch_groups(launches: tuple[KernelCounters, ...]) -> tuple[tuple[str, ...], ...]:
    """The demangled names of ``launches`` in groups, one ncu run each, such that no launch configuration
    (:func:`launch_config`) holds launches of two names of one group; first-come order, as few groups as a
    greedy first-fit gives (one for a step whose names never share a launch configuration)."""
    configs_of: dict[str, set] = {}
    for k in launches:
        configs_of.setdefault(k.name, set()).add(launch_config(k))
    groups: list[tuple[list[str], set]] = []
    for name, configs in configs_of.items():
        group = next((g for g in groups if not g[1] & configs), None)
        if group is None:
            groups.append(([name], set(configs)))
        else:
            group[0].append(name)
            group[1].update(configs)
    return tuple(tuple(names) for names, _ in groups)


#: Cost model of :func:`one_run_depth`, s: one ncu run's start and one replayed launch (module docstring).
RUN_START_S, LAUNCH_S = 5.0, 0.5


def one_run_depth(launches: tuple[KernelCounters, ...]) -> int | None:
    """``k``, the most names sharing a :func:`launch_config`, when one run of every name at ``k`` launches per
    configuration costs less (:data:`RUN_START_S`, :data:`LAUNCH_S`) than a run per :func:`launch_groups` group;
    else None."""
    names: dict[tuple, set] = {}
    for k in launches:
        names.setdefault(launch_config(k), set()).add(k.name)
    depth, groups = max((len(v) for v in names.values()), default=0), len(launch_groups(launches))
    counts = Counter(launch_config(k) for k in launches)
    one = RUN_START_S + LAUNCH_S * sum(min(depth, n) for n in counts.values())
    return depth if groups > 1 and one < groups * RUN_START_S + LAUNCH_S * measured_count(launches) else None


def name_filter(names: tuple[str, ...]) -> str:
    """ncu's ``--kernel-name`` value matching exactly the demangled ``names`` (``--kernel-name-base demangled``)."""
    return "regex:^(?:" + "|".join(re.escape(n) for n in names) + ")$"


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
    """How many launches a deduplicated run replays: one per :func:`signature`."""
    return len({signature(k) for k in launches})
