"""Per-stream busy time, overlap, serialized streams (docs/sources.md, method §3), NCCL overlap."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from surrobench.analysis.activity import GpuActivity
from surrobench.records import intervals

SERIAL_OVERLAP_MAX = 0.05
"""A pair of streams counts as serialized when less than 5% of the smaller busy time overlaps ..."""

SERIAL_SPAN_MIN = 0.5
"""...while their active spans share at least half of the shorter one (our choice)."""


@dataclass(frozen=True)
class StreamBusy:
    """One stream: busy ms (union), ops, and busy ms overlapping another stream of its device."""

    rank: int
    device: int
    stream: int
    ops: int
    busy_ms: float
    overlap_ms: float


@dataclass(frozen=True)
class SerialPair:
    """Two streams of one device active in the same period that (almost) never overlapped."""

    rank: int
    device: int
    streams: tuple[int, int]
    busy_ms: tuple[float, float]
    overlap_ms: float


@dataclass(frozen=True)
class CommStats:
    """NCCL kernels: busy ms, share of device busy, fraction overlapping compute (1.0: hidden)."""

    busy_ms: float
    share: float
    overlapped: float


def stream_stats(act: GpuActivity) -> tuple[tuple[StreamBusy, ...], tuple[SerialPair, ...]]:
    """Per-stream busy and overlap, and serialized stream pairs, for every (rank, device)."""
    streams, pairs = [], []
    for rank, device in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        on_dev = (act.rank == rank) & (act.device == device)
        ids = np.unique(act.stream[on_dev]).tolist()
        sets = {
            s: intervals.merge(act.start_ns[on_dev & (act.stream == s)], act.end_ns[on_dev & (act.stream == s)])
            for s in ids
        }
        for s in ids:
            others = on_dev & (act.stream != s)
            overlap = intervals.intersection(sets[s], intervals.merge(act.start_ns[others], act.end_ns[others]))
            streams.append(
                StreamBusy(
                    rank=rank,
                    device=device,
                    stream=s,
                    ops=int((on_dev & (act.stream == s)).sum()),
                    busy_ms=intervals.total(*sets[s]) / 1e6,
                    overlap_ms=overlap / 1e6,
                )
            )
        # A stream of NCCL kernels only waits for the compute that produces its data by design: whether that
        # communication could overlap compute is comm_not_overlapped's question, not a serialization.
        comm_only = {s for s in ids if act.is_nccl[on_dev & (act.stream == s)].all()}
        pairs += [
            p
            for a, b in combinations(ids, 2)
            if not {a, b} & comm_only and (p := _serial_pair(rank, device, a, b, sets)) is not None
        ]
    return tuple(streams), tuple(pairs)


def _serial_pair(rank: int, device: int, a: int, b: int, sets: dict) -> SerialPair | None:
    (sa, ea), (sb, eb) = sets[a], sets[b]
    if sa.size == 0 or sb.size == 0:
        return None
    busy_a, busy_b = intervals.total(sa, ea), intervals.total(sb, eb)
    span = min(ea[-1], eb[-1]) - max(sa[0], sb[0])
    shorter = min(ea[-1] - sa[0], eb[-1] - sb[0])
    overlap = intervals.intersection(sets[a], sets[b])
    if span < SERIAL_SPAN_MIN * shorter or overlap >= SERIAL_OVERLAP_MAX * min(busy_a, busy_b):
        return None
    return SerialPair(
        rank=rank, device=device, streams=(a, b), busy_ms=(busy_a / 1e6, busy_b / 1e6), overlap_ms=overlap / 1e6
    )


def comm_stats(act: GpuActivity) -> CommStats | None:
    """NCCL share and compute overlap over all devices; ``None`` when the trace has no NCCL kernel."""
    if not act.is_nccl.any():
        return None
    comm_ns = busy_ns = overlapped_ns = 0
    for key in sorted(set(zip(act.rank.tolist(), act.device.tolist()))):
        dev = (act.rank == key[0]) & (act.device == key[1])
        comm = intervals.merge(act.start_ns[dev & act.is_nccl], act.end_ns[dev & act.is_nccl])
        compute = intervals.merge(act.start_ns[dev & ~act.is_nccl], act.end_ns[dev & ~act.is_nccl])
        comm_ns += intervals.total(*comm)
        busy_ns += intervals.total(*intervals.merge(act.start_ns[dev], act.end_ns[dev]))
        overlapped_ns += intervals.intersection(comm, compute)
    return CommStats(
        busy_ms=comm_ns / 1e6,
        share=comm_ns / busy_ns if busy_ns else 0.0,
        overlapped=overlapped_ns / comm_ns if comm_ns else 0.0,
    )
