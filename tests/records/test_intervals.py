"""Interval primitives against brute force on random sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from surrobench.records import intervals

spans = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 40)), max_size=30)


def _mask(pairs, n=300):
    m = np.zeros(n, dtype=bool)
    for s, d in pairs:
        m[s : s + d] = True
    return m


@given(spans, st.integers(0, 250), st.integers(0, 250))
def test_merge_and_busy_in_match_brute_force(pairs, w0, w1):
    s = np.array([p[0] for p in pairs], dtype=np.int64)
    e = s + np.array([p[1] for p in pairs], dtype=np.int64)
    ms, me = intervals.merge(s, e)
    m = _mask(pairs)
    assert intervals.total(ms, me) == m.sum()
    assert (ms[1:] > me[:-1]).all()
    lo, hi = min(w0, w1), max(w0, w1)
    assert intervals.busy_in(ms, me, np.array([lo]), np.array([hi]))[0] == m[lo:hi].sum()


@given(spans, spans)
def test_intersection_matches_brute_force(a, b):
    def merged(pairs):
        s = np.array([p[0] for p in pairs], dtype=np.int64)
        return intervals.merge(s, s + np.array([p[1] for p in pairs], dtype=np.int64))

    assert intervals.intersection(merged(a), merged(b)) == (_mask(a) & _mask(b)).sum()
