"""Numba kernel of ``encoding.encode_rows``: source rows grouped by their codes.

``group_rows`` gives what ``np.unique(key, return_index=True, return_counts=True)`` over the
rows' mixed-radix keys gives, then the codes of the first row of each group: the groups in
ascending key order, each group's first row and its rows. One pass groups the rows by the
evaluator's hash ranking (``_kernels._rank_into``: ids in first-seen order, so a group's first
row is its smallest index) and only the distinct keys are sorted (np.unique sorts every row's key, stably, and then the gathers of each
column are one NumPy call each: on adult's 30,162 rows, a large part of the encoding). The plain twin is
that NumPy code, ``encoding._group_rows_numpy``; tests/oracles/test_encode_rows.py compares both.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[K])


@njit(cache=True)
def group_rows(columns, radices):
    """Rows grouped by their codes: ``columns`` (k, n) holds each row's code per column
    (0 <= code < radices[j], the product of the radices below 2**62), the key of a row is their
    mixed-radix number (first column most significant). Returns (first row of each group, rows
    of each group, the group's codes as (groups, k) and as (k, groups), int32), groups by
    ascending key."""
    k, n = columns.shape
    keys = np.empty(n, dtype=np.int64)
    for r in range(n):
        key = 0
        for j in range(k):
            key = key * radices[j] + columns[j, r]
        keys[r] = key
    # the evaluator's hash ranking: ids in first-seen order, so a group's first row is its smallest
    size = K._table_size(n)
    ids = np.empty(n, dtype=np.int32)
    m = K._rank_into(keys, np.ones(n, dtype=np.bool_), ids, np.empty(size, dtype=np.int64),
                     np.empty(size, dtype=np.int32))
    first = np.empty(m, dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)
    group_key = np.empty(m, dtype=np.int64)
    for r in range(n):
        g = ids[r]
        if count[g] == 0:
            first[g] = r
            group_key[g] = keys[r]
        count[g] += 1
    order = np.argsort(group_key)  # distinct keys: any sort gives the same order
    out_first = np.empty(m, dtype=np.int64)
    out_count = np.empty(m, dtype=np.int64)
    out_codes = np.empty((m, k), dtype=np.int32)
    out_columns = np.empty((k, m), dtype=np.int32)
    for p in range(m):
        g = order[p]
        r = first[g]
        out_first[p] = r
        out_count[p] = count[g]
        for j in range(k):
            out_codes[p, j] = columns[j, r]
            out_columns[j, p] = columns[j, r]
    return out_first, out_count, out_codes, out_columns
