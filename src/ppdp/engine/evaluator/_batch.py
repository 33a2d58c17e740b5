"""Fused Numba evaluation of a whole batch of solutions: one call per batch instead of five
kernel calls and a Python loop per solution (engine/evaluator/numba_backend.py uses it).

The evolutionary optimizers evaluate one small batch per generation (ID-DGA: 20 children,
then the improved ones), so on a 400-record instance the Python glue around the kernels of
``_kernels.py`` (argument unboxing, ``ClassStats``, one ``model.ad`` call per model) costs
several times the kernels' own few microseconds. Here one ``njit`` function does, for each row
of the batch: classify (mixed-radix keys + dense ids in first-seen row order, with the same
overflow compression as ``_kernels.classify``), class sizes, the (class, SA) pairs when a model
needs them, AD per model and TD, with scratch buffers allocated once per batch.

Exactly the same numbers as the per-solution path: class and pair ids follow first-seen row
order as in ``_kernels.dense_rank``, and every sum runs in the same order as in
``_kernels.transparency`` / ``ad_t_closeness`` / ``ad_entropy_l`` (tests/test_batch_evaluator.py
compares both on random instances and against tests/reference.py).

This module is self-contained on purpose: Numba's on-disk cache (``cache=True``) is not
invalidated when a function defined in another file changes, so calling ``_kernels`` from here
could silently keep a stale copy of a kernel. Supported AD computations: the codes of
engine/evaluator/kinds.py; a model without one uses the general path.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_KEY_LIMIT = 1 << 62
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

@njit(cache=True)
def _table_size(n):
    size = 16
    while size < 2 * n:
        size *= 2
    return size


@njit(cache=True)
def _dense_rank_into(keys, ret, out, slot_key, slot_id):
    """Dense ids 0..m-1 (first-seen order) of the keys of rows with ret > 0 into ``out``
    (-1 elsewhere); returns m. ``slot_key``/``slot_id``: hash table of power-of-two size >= 2n."""
    n = keys.shape[0]
    size = slot_id.shape[0]
    mask = np.uint64(size - 1)
    for i in range(size):
        slot_id[i] = -1
    m = 0
    for h in range(n):
        if ret[h] <= 0:
            out[h] = -1
            continue
        k = keys[h]
        i = ((np.uint64(k) * _GOLDEN) >> np.uint64(20)) & mask
        while True:
            sid = slot_id[i]
            if sid == -1:
                slot_key[i] = k
                slot_id[i] = m
                out[h] = m
                m += 1
                break
            if slot_key[i] == k:
                out[h] = sid
                break
            i = (i + np.uint64(1)) & mask
    return m


@njit(cache=True)
def _classify_into(g, codes, gen, n_gen, ret, keys, cls, slot_key, slot_id):
    """Class id per row (-1 for rows with nothing retained) into ``cls``; returns the number
    of classes. Same keys, compression and ids as ``_kernels.classify``."""
    n, nq = codes.shape
    for h in range(n):
        keys[h] = 0
    bound = 1
    for q in range(nq):
        radix = n_gen[q, g[q]]
        if bound > _KEY_LIMIT // max(radix, 1):
            m = _dense_rank_into(keys, ret, cls, slot_key, slot_id)
            for h in range(n):
                keys[h] = cls[h]
            bound = max(m, 1)
        lvl = gen[q, g[q]]
        for h in range(n):
            keys[h] = keys[h] * radix + lvl[codes[h, q]]
        bound *= radix
    return _dense_rank_into(keys, ret, cls, slot_key, slot_id)


@njit(cache=True)
def retained_batch(S, offsets):
    """(P, nR) per-record keep flags -> (P, H) retained records per histogram row."""
    P = S.shape[0]
    n = offsets.shape[0] - 1
    out = np.zeros((P, n), dtype=np.int64)
    for p in range(P):
        for h in range(n):
            c = 0
            for r in range(offsets[h], offsets[h + 1]):
                if S[p, r]:
                    c += 1
            out[p, h] = c
    return out


@njit(cache=True)
def evaluate_batch(G, retained, codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records):
    """AD per model (P, len(kinds)), TD (P,) and suppressed records (P,) of each (G[p], retained[p]).

    ``kinds``: codes of engine/evaluator/kinds.py (0 k-anonymity: smallest class, inf when empty; 1 Euclidean
    t-closeness: largest class distance to ``q``, 0 when empty; 2 distinct l: fewest distinct
    SA values in a class; 3 entropy l: smallest exp(entropy) of a class).
    """
    return evaluate_batch_into(G, retained, codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records,
                               np.empty((0, 0), dtype=np.int64))


@njit(cache=True)
def evaluate_batch_into(G, retained, codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records, row_size):
    """``evaluate_batch``, and, when ``row_size`` has P rows, the class size of every histogram
    row into ``row_size[p]`` (0 where nothing is retained). That is what ID-DGA's improvement
    (§4.5) needs of an infeasible child (``record_class_sizes`` at each row's first record); the
    fused ID-DGA kernel takes it from the evaluation instead of classifying the child again.
    """
    P = G.shape[0]
    n = codes.shape[0]
    nq = codes.shape[1]
    nm = kinds.shape[0]
    ad = np.zeros((P, nm))
    td = np.zeros(P)
    sup = np.zeros(P, dtype=np.int64)
    needs_pairs = False
    for j in range(nm):
        if kinds[j] != 0:
            needs_pairs = True
    # Scratch buffers, shared by all rows of the batch.
    size_t = _table_size(n)
    keys = np.empty(n, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    pid = np.empty(n, dtype=np.int32)
    slot_key = np.empty(size_t, dtype=np.int64)
    slot_id = np.empty(size_t, dtype=np.int32)
    # Not zeroed: each is reset for the classes or pairs in use before it is read (a batch of
    # one node, as Flash sends, paid ~1 MB of zeroing per node on adult).
    size = np.empty(max(n, 1), dtype=np.int64)
    pair_class = np.empty(max(n, 1), dtype=np.int32)
    pair_sa = np.empty(max(n, 1), dtype=np.int32)
    pair_n = np.empty(max(n, 1), dtype=np.int64)
    d2 = np.empty(max(n, 1))
    qp = np.empty(max(n, 1))
    npos = np.empty(max(n, 1), dtype=np.int64)
    count = np.empty(max(n, 1), dtype=np.int64)
    acc = np.empty(max(n, 1))
    # Source distribution terms of t-closeness (as in _kernels.ad_t_closeness).
    qq = 0.0
    n_pos = 0
    for v in range(q.shape[0]):
        qq += q[v] * q[v]
        if q[v] > 0.0:
            n_pos += 1
    for p in range(P):
        g = G[p]
        ret = retained[p]
        m = _classify_into(g, codes, gen, n_gen, ret, keys, cls, slot_key, slot_id)
        for c in range(m):
            size[c] = 0
        kept = 0
        for h in range(n):
            kept += ret[h]
            if cls[h] >= 0:
                size[cls[h]] += ret[h]
        sup[p] = n_records - kept
        if row_size.shape[0] > p:
            for h in range(n):
                row_size[p, h] = size[cls[h]] if cls[h] >= 0 else 0
        npairs = 0
        if needs_pairs:
            for h in range(n):
                if cls[h] >= 0:
                    keys[h] = np.int64(cls[h]) * n_sa + sa[h]
            npairs = _dense_rank_into(keys, ret, pid, slot_key, slot_id)
            for i in range(npairs):
                pair_n[i] = 0
            for h in range(n):
                i = pid[h]
                if i >= 0:
                    pair_class[i] = cls[h]
                    pair_sa[i] = sa[h]
                    pair_n[i] += ret[h]
        for j in range(nm):
            kind = kinds[j]
            if kind == 0:  # _kernels.ad_k_anonymity
                best = np.inf
                for c in range(m):
                    if size[c] > 0 and size[c] < best:
                        best = size[c]
                ad[p, j] = best
            elif kind == 1:  # _kernels.ad_t_closeness
                for c in range(m):
                    d2[c] = 0.0
                    qp[c] = 0.0
                    npos[c] = 0
                for i in range(npairs):
                    c = pair_class[i]
                    if size[c] == 0:
                        continue
                    qv = q[pair_sa[i]]
                    diff = pair_n[i] / size[c] - qv
                    d2[c] += diff * diff
                    qp[c] += qv * qv
                    if qv > 0.0:
                        npos[c] += 1
                worst = 0.0
                for c in range(m):
                    if size[c] == 0:
                        continue
                    tot = d2[c]
                    if npos[c] < n_pos and qq - qp[c] > 0.0:
                        tot += qq - qp[c]
                    d = np.sqrt(tot)
                    if d > worst:
                        worst = d
                ad[p, j] = worst
            elif kind == 2:  # _kernels.ad_distinct_l
                for c in range(m):
                    count[c] = 0
                for i in range(npairs):
                    if pair_n[i] > 0:
                        count[pair_class[i]] += 1
                best = np.inf
                for c in range(m):
                    if size[c] > 0 and count[c] < best:
                        best = count[c]
                ad[p, j] = best
            else:  # _kernels.ad_entropy_l
                for c in range(m):
                    acc[c] = 0.0
                for i in range(npairs):
                    x = float(pair_n[i])
                    if x > 0:
                        acc[pair_class[i]] += x * np.log(x)
                best = np.inf
                for c in range(m):
                    if size[c] > 0:
                        nn = float(size[c])
                        e = np.exp(np.log(nn) - acc[c] / nn)
                        if e < best:
                            best = e
                ad[p, j] = best
        # TD, in the order of _kernels.transparency.
        total = 0.0
        for h in range(n):
            if ret[h] == 0:
                continue
            row = 0.0
            for qi in range(nq):
                row += weight[qi, g[qi], codes[h, qi]]
            total += ret[h] * row
        td[p] = total
    return ad, td, sup


@njit(cache=True)
def record_class_sizes(g, ret, codes, gen, n_gen, offsets):
    """Class size of every record for one solution (0 for suppressed records): the first
    ret[h] records of row h are kept (``NumbaEvaluator.record_class_sizes``)."""
    n = codes.shape[0]
    keys = np.empty(n, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    size_t = _table_size(n)
    slot_key = np.empty(size_t, dtype=np.int64)
    slot_id = np.empty(size_t, dtype=np.int32)
    m = _classify_into(g, codes, gen, n_gen, ret, keys, cls, slot_key, slot_id)
    size = np.zeros(max(m, 1), dtype=np.int64)
    for h in range(n):
        if cls[h] >= 0:
            size[cls[h]] += ret[h]
    out = np.zeros(offsets[n], dtype=np.int64)
    for h in range(n):
        if cls[h] < 0:
            continue
        s = size[cls[h]]
        for r in range(offsets[h], offsets[h] + min(ret[h], offsets[h + 1] - offsets[h])):
            out[r] = s
    return out
