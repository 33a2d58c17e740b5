"""Numba kernel of the nearest-neighbour lists (plain-Python twin: ``_neighbors_py.py``).

Same name, signature and result as the twin; tests/methods/heterogeneous/test_neighbors.py checks both agree.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ppdp.engine.kernels.cache import guard

guard(__file__)


@njit(cache=True, parallel=True)
def nearest(num, cat, num_range, m, out):
    """out[i] = the m tuples nearest to i (i excluded), nearest first, ties by lower index.

    Distance: sum over numeric QIDs of |x - y| / range (0 when the range is 0) plus the number
    of categorical QIDs that differ (numeric first, then categorical, in column order, so both
    backends add the same floats in the same order). A candidate is dropped as soon as its
    partial sum exceeds the m-th best so far (sums of non-negative terms only grow)."""
    n = num.shape[0]
    qn = num.shape[1]
    qc = cat.shape[1]
    inv = np.zeros(qn)
    for j in range(qn):
        if num_range[j] > 0:
            inv[j] = 1.0 / num_range[j]
    for i in prange(n):
        best_d = np.full(m, np.inf)
        best_i = np.full(m, -1, dtype=np.int64)
        for t in range(n):
            if t == i:
                continue
            worst = best_d[m - 1]
            d = 0.0
            for j in range(qn):
                d += abs(num[i, j] - num[t, j]) * inv[j]
            if d > worst:
                continue
            for j in range(qc):
                if cat[i, j] != cat[t, j]:
                    d += 1.0
            # strictly nearer than the m-th (an empty slot holds inf); an equal distance keeps
            # the earlier, lower index ahead
            if d < worst:
                p = m - 1
                while p > 0 and best_d[p - 1] > d:
                    best_d[p] = best_d[p - 1]
                    best_i[p] = best_i[p - 1]
                    p -= 1
                best_d[p] = d
                best_i[p] = t
        for p in range(m):
            out[i, p] = best_i[p]
