"""Interval arithmetic on numpy arrays: union, busy time inside windows, intersection.

Intervals are half-open ``[start, end)`` in integer nanoseconds; arrays have shape ``(n,)``.
"Merged" means sorted, disjoint and non-touching, as :func:`merge` returns.
"""

from __future__ import annotations

import numpy as np


def merge(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as merged ``(start, end)`` arrays; empty intervals (end <= start) are dropped."""
    keep = end > start
    start, end = start[keep], end[keep]
    if start.size == 0:
        return start.astype(np.int64), end.astype(np.int64)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    new = np.ones(start.size, dtype=bool)
    new[1:] = start[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:], start.size) - 1
    return start[first], reach[last]


def total(start: np.ndarray, end: np.ndarray) -> int:
    """Summed length (ns) of merged intervals."""
    return int((end - start).sum())


def busy_before(start: np.ndarray, end: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For merged intervals, the busy time (ns) in ``(-inf, t)`` for each time in ``t``."""
    if start.size == 0:
        return np.zeros(np.shape(t), dtype=np.int64)
    cum = np.concatenate(([0], np.cumsum(end - start)))
    k = np.searchsorted(start, t, side="right")  # intervals starting before t
    prev = np.maximum(k - 1, 0)
    partial = np.where(k > 0, np.clip(t - start[prev], 0, end[prev] - start[prev]), 0)
    return cum[prev] * (k > 0) + partial


def busy_in(start: np.ndarray, end: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """Busy time (ns) of merged intervals inside each window ``[w0, w1)``; shapes of ``w0``."""
    return busy_before(start, end, w1) - busy_before(start, end, w0)


def intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Length (ns) of the intersection of two merged interval sets."""
    return int(busy_in(b[0], b[1], a[0], a[1]).sum()) if a[0].size else 0
