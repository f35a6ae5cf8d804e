"""Across ranks (one :class:`~surrobench.analysis.rank_summary.RankSummary` each): steps aligned by key, collectives
matched by ``(step, name, occurrence)`` (ProcessGroupNCCL matches calls by order), and waits: an early rank waits
``last arrival - own arrival`` bounded to ``[0, own duration]``; the last rank's lateness is its arrival minus the
others' median arrival."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from surrobench.analysis.rank_summary import RankSummary, rank_summary
from surrobench.records import schemas
from surrobench.trace.model import Timeline

EXTRA_OPS = 3
"""Ops listed per rank as what it did more than the others."""
EXTRA_OP_MIN_SHARE = 0.1
"""...each at least this fraction of the largest excess (smaller is profiler noise; our choice)."""


@dataclass(frozen=True)
class OpExtra:
    """One op's time per step on a rank and the median over the other ranks (ms)."""

    name: str
    ms: float
    others_ms: float


@dataclass(frozen=True)
class RankRow:
    """One rank, ms per aligned step: ``late_share`` (0..1), ``late_ms`` (others held), ``extra_ops``."""

    rank: int
    steps: int
    step_ms: float
    compute_ms: float
    comm_ms: float
    wait_ms: float
    exposed_comm_ms: float
    late_share: float
    late_ms: float
    extra_ops: tuple[OpExtra, ...]


@dataclass(frozen=True)
class RankStep:
    """One rank in one aligned step (ms)."""

    rank: int
    step: int
    step_ms: float
    compute_ms: float
    comm_ms: float
    wait_ms: float


@dataclass(frozen=True)
class CrossRankReport:
    """Cross-rank comparison (``to_dict()``: JSON); ``end_spread_ms`` far above the waits: clocks disagree."""

    schema: str
    ranks: tuple[int, ...]
    paths: tuple[str, ...]
    basis: str
    step_source: str
    steps: tuple[int, ...]
    comm_source: str
    collectives: int
    unmatched: int
    end_spread_ms: float
    rows: tuple[RankRow, ...]
    per_step: tuple[RankStep, ...]

    def to_dict(self) -> dict:
        """Plain dict/list/str/number structure (``json.dumps``-able)."""
        return asdict(self)


def timeline_cross_rank(tl: Timeline) -> CrossRankReport | None:
    """:func:`cross_rank_report` of the ranks of one multi-rank timeline; None for a single rank."""
    ranks = tl.meta.ranks
    return cross_rank_report([rank_summary(tl.for_rank(r)) for r in ranks]) if len(ranks) > 1 else None


def cross_rank_report(summaries: list[RankSummary]) -> CrossRankReport:
    """Compare the ranks of ``summaries``. Raises ValueError: fewer than two, or a rank given twice."""
    summaries = sorted(summaries, key=lambda s: s.rank)
    ranks = tuple(s.rank for s in summaries)
    if len(ranks) < 2 or len(set(ranks)) != len(ranks):
        raise ValueError(f"cross-rank analysis needs two or more distinct ranks, got {ranks}")
    common = np.asarray(sorted(set.intersection(*(set(s.steps.tolist()) for s in summaries))), dtype=np.int64)
    cols = [_step_columns(s, common) for s in summaries]
    wait, late, late_share, matched, unmatched, spread = _waits(summaries, common)
    n = max(common.size, 1)
    rows, per_step = [], []
    for i, (s, c) in enumerate(zip(summaries, cols)):
        rows.append(
            RankRow(
                rank=s.rank,
                steps=int(common.size),
                step_ms=_mean(c["step_ms"]),
                compute_ms=_mean(c["compute_ms"]),
                comm_ms=_mean(c["comm_ms"]),
                wait_ms=float(wait[i].sum()) / n,
                exposed_comm_ms=_mean(c["exposed_comm_ms"]),
                late_share=late_share[i],
                late_ms=float(late[i].sum()) / n,
                extra_ops=_extra_ops(summaries, i),
            )
        )
        per_step += [
            RankStep(
                rank=s.rank,
                step=int(k),
                step_ms=float(c["step_ms"][j]),
                compute_ms=float(c["compute_ms"][j]),
                comm_ms=float(c["comm_ms"][j]),
                wait_ms=float(wait[i][j]),
            )
            for j, k in enumerate(common)
        ]
    sources = {s.step_source for s in summaries}
    return CrossRankReport(
        schema=schemas.CROSS_RANK,
        ranks=ranks,
        paths=tuple(s.path for s in summaries),
        basis="device" if any(s.basis == "device" for s in summaries) else "cpu",
        step_source=sources.pop() if len(sources) == 1 else "mixed",
        steps=tuple(common.tolist()),
        comm_source=next((s.comm_source for s in summaries if s.comm_source), ""),
        collectives=matched,
        unmatched=unmatched,
        end_spread_ms=spread,
        rows=tuple(rows),
        per_step=tuple(per_step),
    )


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else 0.0


def _step_columns(s: RankSummary, common: np.ndarray) -> dict[str, np.ndarray]:
    """The per-step columns of ``s`` at the ``common`` step keys (each of which ``s`` has)."""
    sorter = np.argsort(s.steps, kind="stable")
    rows = sorter[np.searchsorted(s.steps, common, sorter=sorter)]
    return {k: getattr(s, k)[rows] for k in ("step_ms", "compute_ms", "comm_ms", "exposed_comm_ms")}


def _lookup(sorted_keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``query``'s position in ``sorted_keys`` (both ``(n,)``) and whether it is there."""
    pos = np.searchsorted(sorted_keys, query)
    if not sorted_keys.size:
        return pos, np.zeros(query.shape, dtype=bool)
    return pos, (pos < sorted_keys.size) & (sorted_keys[np.minimum(pos, sorted_keys.size - 1)] == query)


def _collective_keys(
    s: RankSummary, common: np.ndarray, name_ids: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(key, step index, start_ns, end_ns)`` of ``s``'s collectives; key packs (step, name, occurrence)."""
    aligned, ok = _lookup(common, s.steps[s.coll_step])
    name = np.fromiter(
        (name_ids.setdefault(n, len(name_ids)) for n in s.coll_name), dtype=np.int64, count=len(s.coll_name)
    )
    aligned, name, start, end = aligned[ok], name[ok], s.coll_start_ns[ok], s.coll_end_ns[ok]
    order = np.lexsort((start, name, aligned))
    aligned, name, start, end = aligned[order], name[order], start[order], end[order]
    group = (aligned.astype(np.int64) << 20) | name
    first = np.r_[0, np.flatnonzero(group[1:] != group[:-1]) + 1] if group.size else np.zeros(0, dtype=np.int64)
    occurrence = np.arange(group.size) - np.repeat(first, np.diff(np.r_[first, group.size]))
    return (group << 20) | occurrence, aligned, start, end


def _waits(
    summaries: list[RankSummary], common: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[float], int, int, float]:
    """Per rank and step: wait and lateness (ms), late shares, matched/unmatched counts, exit spread (ms)."""
    n_ranks, n_steps = len(summaries), common.size
    name_ids: dict[str, int] = {}
    per_rank = [_collective_keys(s, common, name_ids) for s in summaries]
    keys, counts = np.unique(np.concatenate([k for k, *_ in per_rank]), return_counts=True)
    shared = keys[counts >= 2]
    arrive = np.full((n_ranks, shared.size), np.nan)
    leave = arrive.copy()
    inside = np.zeros((n_ranks, shared.size))
    step = np.zeros(shared.size, dtype=np.int64)
    for i, (k, aligned, start, end) in enumerate(per_rank):
        pos, hit = _lookup(shared, k)
        arrive[i, pos[hit]] = start[hit].astype(np.float64)
        leave[i, pos[hit]] = end[hit].astype(np.float64)
        inside[i, pos[hit]] = (end - start)[hit]
        step[pos[hit]] = aligned[hit]
    wait = np.zeros((n_ranks, n_steps))
    late = np.zeros((n_ranks, n_steps))
    share, spread = [0.0] * n_ranks, 0.0
    if shared.size:
        present = ~np.isnan(arrive)
        last = np.nanmax(arrive, axis=0)
        w = np.where(present, np.clip(last - arrive, 0.0, inside), 0.0)
        latest = np.nanargmax(arrive, axis=0)
        others = arrive.copy()
        others[latest, np.arange(shared.size)] = np.nan
        lateness = np.clip(last - np.nanmedian(others, axis=0), 0.0, None)
        spread = float(np.median(np.nanmax(leave, axis=0) - np.nanmin(leave, axis=0))) / 1e6
        for i in range(n_ranks):
            wait[i] = np.bincount(step, weights=w[i], minlength=n_steps)[:n_steps] / 1e6
            mine = latest == i
            late[i] = np.bincount(step[mine], weights=lateness[mine], minlength=n_steps)[:n_steps] / 1e6
            share[i] = float(mine.sum() / present[i].sum()) if present[i].any() else 0.0
    return wait, late, share, int(shared.size), int(counts[counts < 2].sum()), spread


def _extra_ops(summaries: list[RankSummary], i: int) -> tuple[OpExtra, ...]:
    """The :data:`EXTRA_OPS` ops of rank ``i`` with the largest excess over the other ranks' median."""
    mine = summaries[i].op_ms
    others = [s.op_ms for j, s in enumerate(summaries) if j != i]
    rows = [OpExtra(name, ms, float(np.median([o.get(name, 0.0) for o in others]))) for name, ms in mine.items()]
    rows = sorted((r for r in rows if r.ms > r.others_ms), key=lambda r: r.others_ms - r.ms)
    floor = EXTRA_OP_MIN_SHARE * (rows[0].ms - rows[0].others_ms) if rows else 0.0
    return tuple(r for r in rows[:EXTRA_OPS] if r.ms - r.others_ms >= floor)
