"""Numba kernels of the in-memory evaluator. Arrays in, arrays out; no Python objects.

Every kernel has a plain-Python twin in ``tests/support/reference.py`` (after stumpy's naive twins);
the tests check that both agree. ``evaluate_optimal_batch`` (S*(G) and its evaluation in one
pass, for the lattice search) is checked bit for bit against the oracle kernels followed by the
evaluator, and through them against the twins (tests/oracles/test_fused_oracle.py).

The batch kernels (``batch.evaluate_prepared_into`` and ``evaluate_optimal_batch`` / ``unsuppressed_batch``
here) are compositions of the pieces below, each written once: ``_classify_into`` (mixed-radix
keys, dense ids by ``_rank_into``), ``_class_sizes_into``, ``_class_sa_pairs_into``, the
per-model ``_ad_*_into`` (``_ad_into`` by code of engine/kernels/kinds.py) and ``transparency`` /
``_td_by_class``; the public per-solution kernels are the same pieces with their own buffers.
``batch.evaluate_prepared_into`` classifies through ``_classify_td_into`` instead (one summed key per
row, classes by sorted segments, sizes and TD in the same call: docs/design/evaluator.md), with
``_classify_into``'s ids, ``_class_sizes_into``'s sizes and ``transparency``'s TD, bit for bit.
The ``*_into`` pieces take scratch buffers from the caller, so a batch allocates them once.
Modules compiling these kernels into theirs guard their Numba cache against a change of this
file (engine/kernels/cache.py). Conventions (see engine/core/encoding.py):
  codes[h, q]     leaf code of histogram row h for QID q
  sa[h]           joint sensitive-value code of row h
  ret[h]          retained records of row h (counts[h] when nothing is suppressed)
  gen[q, j, c]    code of the generalized value of leaf c at level j
  weight[q, j, c] 1/|v_g| of the generalized value of leaf c at level j (docs/design/paper_notes.md §1)
  n_gen[q, j]     number of generalized values of QID q at level j
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import distributions as DK
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[DK])

_KEY_LIMIT = 1 << 62
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _table_size(n):
    size = 16
    while size < 2 * n:
        size *= 2
    return size


@njit(cache=True)
def _rank_into(keys, active, out, slot_key, slot_id):
    """Dense ids 0..m-1 (first-seen order) of the keys of active rows into ``out`` (-1
    elsewhere); returns m. ``slot_key``/``slot_id``: hash table of power-of-two size >= 2n.
    ``active``: flags, or retained records per row (active when nonzero; counts are >= 0)."""
    n = keys.shape[0]
    size = slot_id.shape[0]
    mask = np.uint64(size - 1)
    for j in range(size):
        slot_id[j] = -1
    m = 0
    for h in range(n):
        if not active[h]:
            out[h] = -1
            continue
        k = keys[h]
        i = (np.uint64(k) * _GOLDEN) >> np.uint64(20)
        i = i & mask
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
def _rank_bounded_into(keys, bound, active, out, slot_key, slot_id):
    """``_rank_into`` of keys known to lie in [0, bound): when bound is at most the hash table's
    size, each key is its own slot of ``slot_id`` (no hashing, no probing, a table that stays in
    cache when the classes are few: most nodes of a roll-up). The same ids, first-seen
    order."""
    if bound > slot_id.shape[0]:
        return _rank_into(keys, active, out, slot_key, slot_id)
    for j in range(bound):
        slot_id[j] = -1
    m = 0
    for h in range(keys.shape[0]):
        if not active[h]:
            out[h] = -1
            continue
        k = keys[h]
        sid = slot_id[k]
        if sid == -1:
            slot_id[k] = m
            out[h] = m
            m += 1
        else:
            out[h] = sid
    return m


@njit(cache=True)
def dense_rank(keys, active):
    """Map int64 keys of active rows to dense ids 0..m-1 (first-seen order); -1 elsewhere."""
    n = keys.shape[0]
    size = _table_size(n)
    out = np.empty(n, dtype=np.int32)
    m = _rank_into(keys, active, out, np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int32))
    return out, m


@njit(cache=True)
def _classify_into(g, codes, gen, n_gen, active, keys, cls, slot_key, slot_id):
    """``classify`` into scratch buffers (``keys``, ``cls``: n; hash table as ``_rank_into``);
    returns the number of classes."""
    n, nq = codes.shape
    for h in range(n):
        keys[h] = 0
    bound = 1
    for q in range(nq):
        radix = n_gen[q, g[q]]
        if bound > _KEY_LIMIT // max(radix, 1):
            m = _rank_into(keys, active, cls, slot_key, slot_id)
            for h in range(n):
                keys[h] = cls[h]
            bound = max(m, 1)
        lvl = gen[q, g[q]]
        for h in range(n):
            keys[h] = keys[h] * radix + lvl[codes[h, q]]
        bound *= radix
    return _rank_bounded_into(keys, bound, active, cls, slot_key, slot_id)


@njit(cache=True)
def classify(g, codes, gen, n_gen, active):
    """Equivalence class id of every active row under levels ``g`` (-1 for inactive rows).

    Generalized codes are combined as a mixed-radix int64 key; when the radix product would
    overflow, the partial keys are first compressed to dense ids, so any number of QIDs works.
    """
    n = codes.shape[0]
    size = _table_size(n)
    cls = np.empty(n, dtype=np.int32)
    m = _classify_into(g, codes, gen, n_gen, active, np.empty(n, dtype=np.int64), cls,
                       np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int32))
    return cls, m


@njit(cache=True)
def _key_tables_into(g, gen, n_gen, tab):
    """The mixed-radix key of ``_classify_into`` as one lookup per QID: ``tab[q, c]`` = the
    generalized code of leaf c at level g[q] times the product of the radices of the QIDs after
    q, so a row's key is the sum of its QIDs' entries (the same key, hence the same classes).
    Returns the key bound (the product of all radices), or -1 when it would pass _KEY_LIMIT
    (``tab`` is then not filled)."""
    nq = tab.shape[0]
    bound = 1
    for q in range(nq - 1, -1, -1):
        if bound > _KEY_LIMIT // max(n_gen[q, g[q]], 1):
            return -1
        bound *= n_gen[q, g[q]]
    stride = 1
    for q in range(nq - 1, -1, -1):
        lvl = gen[q, g[q]]
        for c in range(tab.shape[1]):
            tab[q, c] = lvl[c] * stride
        stride *= n_gen[q, g[q]]
    return bound


@njit(cache=True)
def qid_major(codes):
    """The leaf codes QID by QID (nq, n) as uint16: each QID's codes contiguous, for the column
    passes of ``_classify_td_into``. Codes of hierarchies of more than 65,536 leaves do not fit:
    ``_batch.prepare_rows`` then makes none, and the batch classifies with ``_classify_into``."""
    n, nq = codes.shape
    out = np.empty((nq, n), dtype=np.uint16)
    for h in range(n):
        for q in range(nq):
            out[q, h] = codes[h, q]
    return out


@njit(cache=True)
def sorted_rows(codes):
    """Whether the rows are in lexicographic order of their leaf codes, QID 0 first (the order
    engine/core/encoding.py gives them)."""
    n, nq = codes.shape
    for h in range(1, n):
        for q in range(nq):
            a = codes[h - 1, q]
            b = codes[h, q]
            if a < b:
                break
            if a > b:
                return False
    return True


@njit(cache=True)
def _sorted_prefix(g, gen, n_gen, n_leaves):
    """How many leading QIDs form a key prefix that never decreases down rows sorted by leaf
    codes: QID q's generalized codes at g[q] must not decrease as the leaf code grows, and each
    QID before it must map its leaves one to one (strictly increasing), so that rows equal on
    the QIDs before q come sorted by q. A QID generalized to one value ends the prefix."""
    nq = gen.shape[0]
    L = 0
    for q in range(nq):
        if n_gen[q, g[q]] <= 1:
            break
        lvl = gen[q, g[q]]
        strict = True
        for c in range(1, n_leaves[q]):
            if lvl[c] < lvl[c - 1]:
                return L
            if lvl[c] == lvl[c - 1]:
                strict = False
        L = q + 1
        if not strict:
            break
    return L


@njit(cache=True)
def _classify_td_into(g, cols, gen, n_gen, n_leaves, weight, ret, tab, bound, rows_sorted, high, keys, cls, size,
                      class_w, class_rep, class_slot, slot):
    """Classes, class sizes and TD of (g, ret); returns (m, records of the classified rows, TD).
    The same numbers as ``_classify_into`` (over the rows with ret > 0), ``_class_sizes_into``
    and ``transparency``, bit for bit: ids in first-seen row order, TD summed over rows in order
    with each row's weight summed over its QIDs in order (the rows of a class share every
    generalized value, so its first row's sum is every row's: docs/design/paper_notes.md §1).

    ``cols``: ``qid_major(codes)``; ``tab``, ``bound``: ``_key_tables_into`` (bound >= 0);
    ``rows_sorted``: ``sorted_rows(codes)``. A row's key is the sum of its QIDs' ``tab``
    entries, summed QID by QID over contiguous codes (the QIDs generalized to one value add 0),
    in two parts: ``high`` over the ``_sorted_prefix`` QIDs, which never decreases down sorted
    rows, and ``keys`` over the others. A class lies within one run of equal ``high`` (a
    segment), so each segment is classified alone, in a table sized to it that stays in cache:
    the low keys index it directly when their bound fits, else through open addressing (the
    hash of ``_rank_into``). ``slot`` (size, 2): key and id per slot, a power of two >= 2n, all
    -1 on entry and left so (only the slots used are reset). The other arguments: scratch of >= n.
    """
    nq, n = cols.shape
    L = _sorted_prefix(g, gen, n_gen, n_leaves) if rows_sorted else 0
    low_bound = 1
    for q in range(L, nq):
        low_bound *= n_gen[q, g[q]]
    fresh_high = True  # the first QID of each part assigns, the others add
    fresh_low = True
    for q in range(nq):
        if n_gen[q, g[q]] <= 1:
            continue
        t = tab[q]
        cq = cols[q]
        if q < L:
            if fresh_high:
                for h in range(n):
                    high[h] = t[cq[h]]
                fresh_high = False
            else:
                for h in range(n):
                    high[h] += t[cq[h]]
        elif fresh_low:
            for h in range(n):
                keys[h] = t[cq[h]]
            fresh_low = False
        else:
            for h in range(n):
                keys[h] += t[cq[h]]
    if fresh_high:
        for h in range(n):
            high[h] = 0
    if fresh_low:
        for h in range(n):
            keys[h] = 0
    tsize = slot.shape[0]
    m = 0
    kept = 0
    s = 0
    while s < n:
        e = s + 1
        hs = high[s]
        while e < n and high[e] == hs:
            e += 1
        size_s = 16
        while size_s < 2 * (e - s) and size_s < tsize:
            size_s *= 2
        m0 = m
        if low_bound <= size_s:  # each key its own slot
            for h in range(s, e):
                r = ret[h]
                if r == 0:
                    cls[h] = -1
                    continue
                key = keys[h]
                c = slot[key, 1]
                if c == -1:
                    c = m
                    slot[key, 1] = c
                    class_rep[c] = h
                    class_slot[c] = key
                    size[c] = 0
                    m += 1
                cls[h] = c
                size[c] += r
                kept += r
        else:
            mask = np.uint64(size_s - 1)
            for h in range(s, e):
                r = ret[h]
                if r == 0:
                    cls[h] = -1
                    continue
                key = keys[h]
                i = np.int64(((np.uint64(key) * _GOLDEN) >> np.uint64(20)) & mask)
                while True:
                    kk = slot[i, 0]
                    if kk == key:
                        c = slot[i, 1]
                        break
                    if kk == -1:
                        c = m
                        slot[i, 0] = key
                        slot[i, 1] = c
                        class_rep[c] = h
                        class_slot[c] = i
                        size[c] = 0
                        m += 1
                        break
                    i = (i + 1) & (size_s - 1)
                cls[h] = c
                size[c] += r
                kept += r
        for c in range(m0, m):
            slot[class_slot[c], 0] = -1
            slot[class_slot[c], 1] = -1
        s = e
    # One weight per class from its first row, QID by QID in order.
    for c in range(m):
        class_w[c] = 0.0
    for q in range(nq):
        w = weight[q, g[q]]
        cq = cols[q]
        for c in range(m):
            class_w[c] += w[cq[class_rep[c]]]
    total = 0.0
    for h in range(n):
        c = cls[h]
        if c >= 0:
            total += ret[h] * class_w[c]
    return m, kept, total


@njit(cache=True)
def _rank_rows_into(g, codes, gen, n_gen, rows, keys, out, ones, slot_key, slot_id):
    """Dense ids (first-seen order) under ``g`` of the histogram rows ``rows`` into ``out``;
    returns how many. The keys of ``_classify_into`` over those rows alone: one row per class
    of a node below g (every class of g is a union of them), so a roll-up classifies a class
    by one row. ``keys``, ``ones`` (all True) and the hash table: at least ``rows.shape[0]``."""
    mp = rows.shape[0]
    sub = _table_size(mp)
    sk = slot_key[:sub]
    si = slot_id[:sub]
    k = keys[:mp]
    nq = codes.shape[1]
    for c in range(mp):
        k[c] = 0
    bound = 1  # every key is below it
    for q in range(nq):
        radix = n_gen[q, g[q]]
        if bound > _KEY_LIMIT // max(radix, 1):
            m = _rank_into(k, ones[:mp], out, sk, si)
            for c in range(mp):
                k[c] = out[c]
            bound = max(m, 1)
        lvl = gen[q, g[q]]
        for c in range(mp):
            k[c] = k[c] * radix + lvl[codes[rows[c], q]]
        bound *= radix
    return _rank_bounded_into(k, bound, ones[:mp], out, sk, si)


@njit(cache=True)
def _rollup_into(g, codes, gen, n_gen, parent_cls, keys, cls, rep, ones, slot_key, slot_id):
    """Classes under ``g`` from the classes ``parent_cls`` of a node below g (every class of g
    is a union of them), into ``cls``; returns the number of classes.

    Only one row per parent class is classified (``_rank_rows_into``, as ``_classify_into``
    would, over those rows), then every row takes its parent class's new id. Parent ids are in
    first-seen row order, so ranking them in order gives each new class the id of its first
    row: the ids of ``classify``.
    """
    n = codes.shape[0]
    mp = 0
    for h in range(n):
        if parent_cls[h] == mp:  # ids appear in increasing order: a new class
            rep[mp] = h
            mp += 1
    m = _rank_rows_into(g, codes, gen, n_gen, rep[:mp], keys, rep[mp:2 * mp], ones, slot_key, slot_id)
    for h in range(n):
        c = parent_cls[h]
        cls[h] = rep[mp + c] if c >= 0 else -1
    return m


@njit(cache=True)
def _td_by_class(g, codes, weight, cls, ret, m, seen, class_w):
    """(TD, kept records) of ``ret`` under ``g`` with one weight per class (its rows share every
    generalized value, hence every weight), summed over rows in order as ``transparency`` sums
    its per-row weights: the same bits. ``seen``, ``class_w``: scratch of >= m."""
    nq = codes.shape[1]
    for c in range(m):
        seen[c] = False
    total = 0.0
    kept = 0
    for h in range(codes.shape[0]):
        if ret[h] == 0:
            continue
        c = cls[h]
        if not seen[c]:
            row = 0.0
            for qi in range(nq):
                row += weight[qi, g[qi], codes[h, qi]]
            class_w[c] = row
            seen[c] = True
        total += ret[h] * class_w[c]
        kept += ret[h]
    return total, kept


@njit(cache=True)
def unsuppressed_batch(G, codes, gen, n_gen, weight, counts, ids, parent_slot, out_slot, keys, cls, rep, ones,
                       slot_key, slot_id, size, class_w, seen):
    """Smallest class size (inf for an empty table) and TD of each (G[p], nothing suppressed):
    the k-anonymity AD and the TD ``batch.evaluate_prepared_into`` gives with ``retained = counts``,
    bit for bit, at the cost of the classes alone (Flash with a zero suppression limit needs
    nothing else).

    ``ids`` holds class ids per row of remembered nodes (engine/methods/generalization/evaluators/class_memo.py): the
    classes of G[p] are rolled up (``_rollup_into``) from ``ids[parent_slot[p]]``, the classes of
    a node below G[p], or classified from scratch when it is -1; they go to ``ids[out_slot[p]]``
    (the parent is read before that write). TD: one weight per class
    (its rows share every generalized value, hence every weight), summed over rows in order as
    ``evaluate_prepared_into`` sums them. The other arguments are scratch buffers (``keys``: n; ``cls``:
    n; ``rep``: 2n; ``ones``: n, all True; the hash table: ``_table_size(n)``; ``size``,
    ``class_w``, ``seen``: n), allocated once by the caller.
    """
    P = G.shape[0]
    smallest = np.full(P, np.inf)
    td = np.zeros(P)
    for p in range(P):
        g = G[p]
        m = _remember_classes(g, codes, gen, n_gen, ids, parent_slot[p], out_slot[p], keys, cls, rep, ones, slot_key,
                              slot_id)
        _class_sizes_into(cls, m, counts, size)
        td[p], _ = _td_by_class(g, codes, weight, cls, counts, m, seen, class_w)
        smallest[p] = ad_k_anonymity(size[:m])
    return smallest, td


@njit(cache=True)
def classes_batch(G, codes, gen, n_gen, ids, parent_slot, out_slot, keys, cls, rep, ones, slot_key, slot_id):
    """The classes of each G[p] into ``ids[out_slot[p]]``, as ``unsuppressed_batch`` leaves
    them, without its measures (class sizes, TD, smallest class): for a caller that scores the
    classes itself (engine/methods/generalization/objectives.py's scorers of k-anonymity,
    ``k_anonymous_terms``). Arguments as ``unsuppressed_batch``'s."""
    for p in range(G.shape[0]):
        _remember_classes(G[p], codes, gen, n_gen, ids, parent_slot[p], out_slot[p], keys, cls, rep, ones, slot_key,
                          slot_id)


@njit(cache=True, inline="always")
def _remember_classes(g, codes, gen, n_gen, ids, parent, out, keys, cls, rep, ones, slot_key, slot_id):
    """The classes of ``g`` into ``cls`` and ``ids[out]``: rolled up from ``ids[parent]``, the
    classes of a node below g, or classified when ``parent`` is -1; returns their number."""
    if parent >= 0:
        m = _rollup_into(g, codes, gen, n_gen, ids[parent], keys, cls, rep, ones, slot_key, slot_id)
    else:
        m = _classify_into(g, codes, gen, n_gen, ones, keys, cls, slot_key, slot_id)
    ids[out, :] = cls
    return m


@njit(cache=True)
def _retained_into(s, offsets, ret):
    """Retained records per histogram row into ``ret`` from a per-record keep vector (records
    sorted by row)."""
    for h in range(offsets.shape[0] - 1):
        c = 0
        for r in range(offsets[h], offsets[h + 1]):
            if s[r]:
                c += 1
        ret[h] = c


@njit(cache=True)
def transparency(g, codes, ret, weight):
    """TD = sum over retained records of sum over QIDs of 1/|v_g| (docs/design/paper_notes.md §1)."""
    n, nq = codes.shape
    total = 0.0
    for h in range(n):
        if ret[h] == 0:
            continue
        row = 0.0
        for q in range(nq):
            row += weight[q, g[q], codes[h, q]]
        total += ret[h] * row
    return total


@njit(cache=True)
def _class_sizes_into(cls, m, ret, size):
    """Retained records of each class into ``size[:m]``; returns the records of classified rows
    (all retained records when ``cls`` was classified with ``ret``)."""
    for c in range(m):
        size[c] = 0
    kept = 0
    for h in range(cls.shape[0]):
        c = cls[h]
        if c >= 0:
            size[c] += ret[h]
            kept += ret[h]
    return kept


@njit(cache=True)
def class_sizes(cls, m, ret):
    size = np.empty(m, dtype=np.int64)
    _class_sizes_into(cls, m, ret, size)
    return size


@njit(cache=True)
def _class_sa_pairs_into(cls, m, sa, n_sa, active, ret, keys, pid, pair_class, pair_sa, pair_n,
                         slot_key, slot_id, pair_map):
    """(class, sensitive value) pairs of the classified rows, ids in first-seen row order: the
    pair id of every row into ``pid`` (-1 where ``cls`` is -1), each pair's class, value and
    retained records into ``pair_class``, ``pair_sa``, ``pair_n`` (first npairs entries);
    returns npairs.

    Ids straight from class * n_sa + sa through ``pair_map`` when it has room for m * n_sa
    entries (the same ids, without hashing; the caller decides, by its size, whether that table
    is small enough), else by ``_rank_into`` over the rows flagged ``active`` (those with
    cls >= 0) with ``keys`` and the hash table as scratch. ``pair_map`` is all -1 on entry and
    is left so (only the entries used are reset: a node of few pairs does not pay m * n_sa).
    """
    n = cls.shape[0]
    npairs = 0
    if pair_map.shape[0] > 0 and m * n_sa <= pair_map.shape[0]:
        # One pass: a pair takes its class and value when first seen, then sums its rows.
        for h in range(n):
            c = cls[h]
            if c < 0:
                pid[h] = -1
                continue
            key = c * n_sa + sa[h]
            i = pair_map[key]
            if i == -1:
                i = npairs
                pair_map[key] = i
                pair_class[i] = c
                pair_sa[i] = sa[h]
                pair_n[i] = 0
                npairs += 1
            pid[h] = i
            pair_n[i] += ret[h]
        for i in range(npairs):
            pair_map[np.int64(pair_class[i]) * n_sa + pair_sa[i]] = -1
        return npairs
    for h in range(n):
        if cls[h] >= 0:
            keys[h] = np.int64(cls[h]) * n_sa + sa[h]
    npairs = _rank_into(keys, active, pid, slot_key, slot_id)
    for i in range(npairs):
        pair_n[i] = 0
    for h in range(n):
        i = pid[h]
        if i >= 0:
            pair_class[i] = cls[h]
            pair_sa[i] = sa[h]
            pair_n[i] += ret[h]
    return npairs


@njit(cache=True)
def class_sa_pairs(cls, sa, n_sa, ret):
    """Aggregate rows to (class, sensitive value) pairs: ids per row, pair class, pair sa, count."""
    n = cls.shape[0]
    active = np.zeros(n, dtype=np.bool_)
    for h in range(n):
        active[h] = cls[h] >= 0
    size = _table_size(n)
    pid = np.empty(n, dtype=np.int32)
    pair_class = np.empty(n, dtype=np.int32)
    pair_sa = np.empty(n, dtype=np.int32)
    pair_n = np.empty(n, dtype=np.int64)
    # No pair_map: pair ids by hash, which does not read the number of classes (0 here).
    npairs = _class_sa_pairs_into(cls, 0, sa, n_sa, active, ret, np.empty(n, dtype=np.int64), pid, pair_class,
                                  pair_sa, pair_n, np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int32),
                                  np.empty(0, dtype=np.int32))
    return pid, pair_class[:npairs], pair_sa[:npairs], pair_n[:npairs]


# --- privacy-model disclosure values (AD) over class statistics ---------------------------
# Each model is one ``_ad_*_into`` kernel over ``size`` (one entry per class) and the pairs,
# with its per-class scratch from the caller; ``ad_*`` call it with buffers of their own.


@njit(cache=True)
def ad_k_anonymity(size):
    """ID-DGA: AD = smallest class size among retained records (inf for an empty release)."""
    best = np.inf
    for c in range(size.shape[0]):
        if size[c] > 0 and size[c] < best:
            best = size[c]
    return best


@njit(cache=True)
def _ad_t_closeness_into(size, pair_class, pair_sa, pair_n, q, qq, n_pos, d2, qp, npos):
    """``ad_t_closeness`` with (qq, n_pos) = ``_q_terms(q)`` and scratch ``d2``, ``qp`` (float)
    and ``npos`` (int) of >= size.shape[0]."""
    m = size.shape[0]
    for c in range(m):
        d2[c] = 0.0  # sum over present values of (n_v/N - q_v)^2
        qp[c] = 0.0  # sum over present values of q_v^2
        npos[c] = 0  # present values with q_v > 0
    for p in range(pair_class.shape[0]):
        c = pair_class[p]
        if size[c] == 0:
            continue
        qv = q[pair_sa[p]]
        diff = pair_n[p] / size[c] - qv
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
    return worst


@njit(cache=True)
def ad_t_closeness(size, pair_class, pair_sa, pair_n, q):
    """HAEF eq. 2-4: AD = max over classes of the Euclidean distance to Q (0 when empty).

    Summed term by term: (n_v/N - q_v)^2 over the class's values, plus q_v^2 over the absent
    ones (exactly 0 when every value with q_v > 0 is present). The expanded form
    sum n^2/N^2 - 2 sum n q/N + sum q^2 cancels to ~1e-17 for a class distributed like Q,
    whose square root is a spurious distance of ~1e-8.
    """
    m = size.shape[0]
    qq, n_pos = _q_terms(q)
    return _ad_t_closeness_into(size, pair_class, pair_sa, pair_n, q, qq, n_pos, np.empty(m), np.empty(m),
                                np.empty(m, dtype=np.int64))


@njit(cache=True)
def _ad_distinct_l_into(size, pair_class, pair_n, distinct):
    """``ad_distinct_l`` with scratch ``distinct`` (int) of >= size.shape[0]."""
    m = size.shape[0]
    for c in range(m):
        distinct[c] = 0
    for p in range(pair_class.shape[0]):
        if pair_n[p] > 0:
            distinct[pair_class[p]] += 1
    best = np.inf
    for c in range(m):
        if size[c] > 0 and distinct[c] < best:
            best = distinct[c]
    return best


@njit(cache=True)
def ad_distinct_l(size, pair_class, pair_n):
    """Smallest number of distinct sensitive values in a class (inf when empty)."""
    return _ad_distinct_l_into(size, pair_class, pair_n, np.empty(size.shape[0], dtype=np.int64))


@njit(cache=True)
def _ad_entropy_l_into(size, pair_class, pair_n, nlogn):
    """``ad_entropy_l`` with scratch ``nlogn`` (float) of >= size.shape[0]."""
    m = size.shape[0]
    for c in range(m):
        nlogn[c] = 0.0
    for p in range(pair_class.shape[0]):
        n = float(pair_n[p])
        if n > 0:
            nlogn[pair_class[p]] += n * np.log(n)
    best = np.inf
    for c in range(m):
        if size[c] > 0:
            nn = float(size[c])
            h = np.log(nn) - nlogn[c] / nn
            e = np.exp(h)
            if e < best:
                best = e
    return best


@njit(cache=True)
def ad_entropy_l(size, pair_class, pair_n):
    """Smallest effective l = exp(entropy of the class's sensitive values) (inf when empty)."""
    return _ad_entropy_l_into(size, pair_class, pair_n, np.empty(size.shape[0]))


@njit(cache=True)
def _ad_into(kinds, params, size, pair_class, pair_sa, pair_n, q, qq, n_pos, fa, fb, ia, out):
    """AD of each model into ``out[j]``, ``kinds[j]`` a code of engine/kernels/kinds.py (0 k-anonymity,
    1 Euclidean t-closeness, 2 distinct l-diversity, 3 entropy l-diversity; 4 and up the
    distribution models of _distribution_kernels.py, with their parameters in ``params[j]``),
    over the class sizes ``size`` and the pairs (empty when only k-anonymity is asked).
    (qq, n_pos) = ``_q_terms(q)``; scratch ``fa``, ``fb`` (float), ``ia`` (int) of >= size.shape[0]."""
    for j in range(kinds.shape[0]):
        kind = kinds[j]
        if kind == 0:
            out[j] = ad_k_anonymity(size)
        elif kind == 1:
            out[j] = _ad_t_closeness_into(size, pair_class, pair_sa, pair_n, q, qq, n_pos, fa, fb, ia)
        elif kind == 2:
            out[j] = _ad_distinct_l_into(size, pair_class, pair_n, ia)
        elif kind == 3:
            out[j] = _ad_entropy_l_into(size, pair_class, pair_n, fa)
        else:
            out[j] = DK.largest_class_value(kind, params[j], size, pair_class, pair_sa, pair_n, q)


# --- exact suppression S*(G) (docs/design/paper_notes.md §3) ---------------------------------------------


@njit(cache=True)
def _closest_allocation(cap, target_q, total, out):
    """Integers 0<=n_v<=cap_v, sum n_v = total, minimizing sum (n_v - total*q_v)^2.

    Separable convex objective under a sum constraint: greedy unit allocation by smallest
    marginal cost is optimal from any start below an optimum. The start is the floor of the
    continuous optimum clip(total*q_v + lam, 0, cap_v) minus one (lam by bisection), so at most
    2V greedy steps remain.
    """
    nv = cap.shape[0]
    lo, hi = -float(total) - 1.0, float(total) + 1.0
    for _ in range(100):
        lam = 0.5 * (lo + hi)
        s = 0.0
        for v in range(nv):
            x = total * target_q[v] + lam
            if x < 0.0:
                x = 0.0
            if x > cap[v]:
                x = float(cap[v])
            s += x
        if s < total:
            lo = lam
        else:
            hi = lam
    used = 0
    for v in range(nv):
        x = np.floor(total * target_q[v] + lo) - 1.0
        if x < 0.0:
            x = 0.0
        if x > cap[v]:
            x = float(cap[v])
        out[v] = np.int64(x)
        used += out[v]
    while used < total:
        best_v = -1
        best_cost = np.inf
        for v in range(nv):
            if out[v] < cap[v]:
                cost = 2.0 * (out[v] - total * target_q[v]) + 1.0
                if cost < best_cost:
                    best_cost = cost
                    best_v = v
        out[best_v] += 1
        used += 1


@njit(cache=True)
def _relaxed_distance(cap, target_q, qq_out, total):
    """Lower bound on the t-closeness distance of any allocation of ``total`` records.

    Continuous relaxation: min ||p - q|| over p in the simplex with p_v <= cap_v/total (values
    absent from the class stay 0 and add qq_out). Lowering ``total`` widens the box, so the
    bound never increases as total decreases: every N above the largest N with bound <= t is
    infeasible, and the integer scan can start there.
    """
    nv = cap.shape[0]
    lo, hi = -1.0, 1.0
    for _ in range(60):
        mu = 0.5 * (lo + hi)
        s = 0.0
        for v in range(nv):
            x = target_q[v] + mu
            u = cap[v] / total
            if x < 0.0:
                x = 0.0
            if x > u:
                x = u
            s += x
        if s < 1.0:
            lo = mu
        else:
            hi = mu
    d2 = qq_out
    for v in range(nv):
        x = target_q[v] + hi
        u = cap[v] / total
        if x < 0.0:
            x = 0.0
        if x > u:
            x = u
        d2 += (x - target_q[v]) * (x - target_q[v])
    return np.sqrt(d2) if d2 > 0.0 else 0.0


@njit(cache=True)
def _balanced_allocation(cap, total, out):
    """Water-filling: the most even integers 0<=n_v<=cap_v with sum = total.

    It is majorized by every other allocation, so it maximizes entropy (a Schur-concave
    function) and the number of distinct values.
    """
    nv = cap.shape[0]
    order = np.argsort(cap, kind="mergesort")
    left = total
    remaining = nv
    idx = 0
    while idx < nv:
        v = order[idx]
        if cap[v] <= left // remaining:
            out[v] = cap[v]
            left -= cap[v]
            remaining -= 1
            idx += 1
        else:
            break
    if remaining > 0:
        base = left // remaining
        extra = left % remaining
        for j in range(idx, nv):
            v = order[j]
            out[v] = base + (1 if j - idx < extra else 0)


@njit(cache=True)
def _absent_q_mass(tq, qq_all, n_pos_all):
    """Sum of q^2 over the sensitive values absent from a class (``tq``: q of the present ones).

    Exactly 0 when every value with q > 0 is present: the subtraction qq_all - sum(tq^2) leaves
    ~1e-17 there, whose square root (~3e-9) made a class distributed exactly like Q fail
    t = 1e-9, so the oracle suppressed everything.
    """
    qq_out = qq_all
    present = 0
    for i in range(tq.shape[0]):
        qq_out -= tq[i] * tq[i]
        if tq[i] > 0.0:
            present += 1
    if present == n_pos_all or qq_out < 0.0:
        qq_out = 0.0
    return qq_out


@njit(cache=True)
def _allocation_distance(alloc, total, tq, qq_out):
    """Euclidean distance to Q of a class keeping ``alloc`` records (sum ``total``) per value."""
    d2 = qq_out
    for i in range(alloc.shape[0]):
        diff = alloc[i] / total - tq[i]
        d2 += diff * diff
    return np.sqrt(d2) if d2 > 0.0 else 0.0


# --- EMD t-closeness terms of S*(G) (docs/design/paper_notes.md §3) ------------------------------
# ``t_kind`` is the code of engine/kernels/kinds.py of the t-closeness distance S*(G) enforces:
# LARGEST_EUCLIDEAN_DISTANCE (HAEF eq. 2-4), EQUAL_EMD or ORDERED_EMD (Li et al. 2007). For each
# kept total N of a class, the allocation of smallest distance is found exactly (equal: a greedy
# on a separable concave gain; ordered: a dynamic programme over the cumulative counts), and a
# lower bound nonincreasing as N decreases (p_v may only range over [0, cap_v / N]) skips the
# totals that no allocation can bring within t.


@njit(cache=True)
def _equal_distance(alloc, total, tq):
    """Equal-distance EMD of a class keeping ``alloc`` records per value, summed as
    distributions._equal sums it (absent and emptied values add q each)."""
    s = 0.0
    for i in range(alloc.shape[0]):
        if alloc[i] > 0:
            s += abs(alloc[i] / max(total, 1) - tq[i]) - tq[i]
    return 0.5 * (1.0 + s)


@njit(cache=True)
def _equal_relaxed(cap, tq, total):
    """Lower bound of the equal-distance EMD of any allocation of ``total`` records: the mass
    of q no p_v <= cap_v / total can cover, 1 - sum_v min(q_v, cap_v / total) (absent values
    cover none). Nonincreasing as total decreases."""
    covered = 0.0
    for i in range(cap.shape[0]):
        covered += min(tq[i], cap[i] / total)
    return max(1.0 - covered, 0.0)


@njit(cache=True)
def _equal_allocation(cap, tq, total, out):
    """Integers 0<=n_v<=cap_v, sum n_v = total, minimizing sum_v max(0, total q_v - n_v) (total
    times the equal-distance EMD, absent values adding total q_v whatever n is). Each value's
    gain per unit is 1 up to floor(total q_v), then frac(total q_v), then 0: nonincreasing, so
    the greedy by largest gain is optimal; the first two phases are taken at once."""
    nv = cap.shape[0]
    used = 0
    for v in range(nv):
        out[v] = min(cap[v], np.int64(np.floor(total * tq[v])))
        used += out[v]
    left = total - used
    while left > 0:
        best_v = -1
        best_gain = -1.0
        for v in range(nv):
            f = total * tq[v]
            fl = np.floor(f)
            if out[v] < cap[v] and out[v] == np.int64(fl) and f - fl > best_gain:
                best_gain = f - fl
                best_v = v
        if best_v < 0 or best_gain <= 0.0:
            break
        out[best_v] += 1
        left -= 1
    for v in range(nv):  # units of no gain anywhere there is room (sum cap >= total)
        add = min(cap[v] - out[v], left)
        out[v] += add
        left -= add


@njit(cache=True)
def _ordered_distance(alloc, total, sa_of, q, by_rank, x):
    """Ordered-distance EMD of a class keeping ``alloc`` records of values ``sa_of``, summed as
    distributions._ordered sums it (``x``: scratch of n_sa)."""
    n_sa = q.shape[0]
    for v in range(n_sa):
        x[v] = -q[v]
    for i in range(alloc.shape[0]):
        if alloc[i] > 0:
            x[sa_of[i]] += alloc[i] / max(total, 1)
    cum = 0.0
    s = 0.0
    for r in range(n_sa):
        cum += x[by_rank[r]]
        s += abs(cum)
    return s / max(n_sa - 1, 1)


@njit(cache=True)
def _ordered_relaxed(cap_rank, qcum, total):
    """Lower bound of the ordered-distance EMD of any allocation of ``total`` records: the
    cumulative share P_r lies in [1 - (C - C_r) / total, C_r / total] (C_r: the class's records
    of rank <= r), so |P_r - Q_r| is at least Q_r's distance to that interval. Nonincreasing as
    total decreases (the interval widens)."""
    n_sa = cap_rank.shape[0]
    whole = 0
    for r in range(n_sa):
        whole += cap_rank[r]
    c = 0
    s = 0.0
    for r in range(n_sa):
        c += cap_rank[r]
        hi = min(c / total, 1.0)
        lo = max(1.0 - (whole - c) / total, 0.0)
        if qcum[r] > hi:
            s += qcum[r] - hi
        elif qcum[r] < lo:
            s += lo - qcum[r]
    return s / max(n_sa - 1, 1)


@njit(cache=True)
def _ordered_allocation(cap_rank, qcum, total, f_prev, f_cur, xstar, out_rank):
    """Integers 0<=n_r<=cap_r (by rank), sum = total, minimizing sum_r |N_r - total Q_r| (N_r,
    Q_r cumulative): F_r(s) = |s - total Q_r| + min over s' in [s - cap_r, s] of F_{r-1}(s'),
    F_{-1} = 0 at s = 0 only. Every F_r is convex on its finite range (a sum of convex terms
    and the window minimum of a convex function), so the window minimum is F(s) left of
    F's argmin x*, F(x*) within cap_r of it and F(s - cap_r) beyond: O(n_sa x total).
    ``f_prev``, ``f_cur``: scratch of >= total + 1; returns the minimum."""
    n_sa = cap_rank.shape[0]
    inf = np.inf
    for s in range(total + 1):
        f_prev[s] = inf
    f_prev[0] = 0.0
    reach = 0
    for r in range(n_sa):
        xs = 0
        best = inf
        for s in range(min(reach, total) + 1):
            if f_prev[s] < best:
                best = f_prev[s]
                xs = s
        xstar[r] = xs
        c = cap_rank[r]
        target = total * qcum[r]
        reach = min(reach + c, total)
        for s in range(total + 1):
            if s > reach:
                f_cur[s] = inf
                continue
            if s <= xs:
                g = f_prev[s]
            elif s <= xs + c:
                g = best
            else:
                g = f_prev[s - c]
            f_cur[s] = g + abs(s - target)
        for s in range(total + 1):
            f_prev[s] = f_cur[s]
    value = f_prev[total]
    s = total
    for r in range(n_sa - 1, -1, -1):
        lo = s - cap_rank[r]
        prev = xstar[r]
        if prev < lo:
            prev = lo
        if prev > s:
            prev = s
        out_rank[r] = s - prev
        s = prev
    return value


@njit(cache=True)
def _emd_class_keep(cap, sa_of, tq, q, rank_of, by_rank, qcum, total_c, n_min, t, t_kind, alloc):
    """Largest N in [n_min, total_c] with an allocation of N records within EMD t of Q (into
    ``alloc``), 0 when none: the whole class first, then every N from the largest the lower
    bound allows, down, each with its allocation of smallest distance (exact per N), checked
    by the evaluator's own sum."""
    nv = cap.shape[0]
    n_sa = q.shape[0]
    x = np.empty(n_sa)
    ordered = t_kind == 6
    cap_rank = np.zeros(n_sa if ordered else 0, dtype=np.int64)
    if ordered:
        for i in range(nv):
            cap_rank[rank_of[sa_of[i]]] = cap[i]
    if total_c < n_min:
        return 0
    for i in range(nv):
        alloc[i] = cap[i]
    whole = _ordered_distance(alloc, total_c, sa_of, q, by_rank, x) if ordered else _equal_distance(alloc, total_c, tq)
    if whole <= t:
        return total_c
    a, b = n_min, total_c - 1  # largest N in [a, b] whose bound is within t, or a - 1
    top = n_min - 1
    while a <= b:
        mid = (a + b) // 2
        lb = _ordered_relaxed(cap_rank, qcum, mid) if ordered else _equal_relaxed(cap, tq, mid)
        if lb <= t + 1e-9:
            top = mid
            a = mid + 1
        else:
            b = mid - 1
    if top < n_min:
        return 0
    f_prev = np.empty(top + 1 if ordered else 0)
    f_cur = np.empty(top + 1 if ordered else 0)
    xstar = np.empty(n_sa if ordered else 0, dtype=np.int64)
    out_rank = np.empty(n_sa if ordered else 0, dtype=np.int64)
    for n_keep in range(top, n_min - 1, -1):
        if ordered:
            _ordered_allocation(cap_rank, qcum, n_keep, f_prev, f_cur, xstar, out_rank)
            for i in range(nv):
                alloc[i] = out_rank[rank_of[sa_of[i]]]
            d = _ordered_distance(alloc, n_keep, sa_of, q, by_rank, x)
        else:
            _equal_allocation(cap, tq, n_keep, alloc)
            d = _equal_distance(alloc, n_keep, tq)
        if d <= t:
            return n_keep
    return 0


@njit(cache=True)
def emd_terms(q, t_params, t_kind):
    """(rank_of, by_rank, qcum) of ORDERED_EMD from its kernel row (the code at each rank);
    empty for the other distances."""
    n_sa = q.shape[0]
    if t_kind != 6:
        e = np.zeros(0, dtype=np.int64)
        return e, e, np.zeros(0)
    by_rank = np.empty(n_sa, dtype=np.int64)
    rank_of = np.empty(n_sa, dtype=np.int64)
    qcum = np.empty(n_sa)
    c = 0.0
    for r in range(n_sa):
        by_rank[r] = int(t_params[r])
        rank_of[by_rank[r]] = r
        c += q[by_rank[r]]
        qcum[r] = c
    return rank_of, by_rank, qcum


@njit(cache=True)
def _class_keep(cap, tq, qq_all, n_pos_all, total_c, k, t, l_distinct, l_entropy, log_l, alloc):
    """Records to keep per sensitive value of one class (into ``alloc``); returns the kept
    total N, 0 when the whole class is suppressed (``alloc`` is then meaningless).

    ``cap``: the class's records per value, ``tq``: q of each value, in the class's pair order
    (which breaks ties of ``_closest_allocation``, so the order is part of the input). A pure
    function of (cap, tq, total_c) and the constraints: ``evaluate_optimal_batch`` memoizes it.
    """
    nv = cap.shape[0]
    distinct_all = 0
    for i in range(nv):
        if cap[i] > 0:
            distinct_all += 1
    qq_out = _absent_q_mass(tq, qq_all, n_pos_all)
    chosen = 0
    if distinct_all >= l_distinct:
        n_min = max(k, 1)
        # Only t and entropy-l can become feasible by dropping records; k and distinct-l cannot.
        bottom = n_min if (t >= 0.0 or l_entropy > 1.0) else total_c
        top = total_c
        if t >= 0.0 and total_c >= n_min:
            # Whole class first (the common case), then jump past Ns the relaxation rules out.
            if _allocation_distance(cap, total_c, tq, qq_out) > t:
                a, b = n_min, total_c - 1  # largest N in [a, b] with bound <= t, or a-1
                top = n_min - 1
                while a <= b:
                    mid = (a + b) // 2
                    if _relaxed_distance(cap, tq, qq_out, mid) <= t + 1e-12:
                        top = mid
                        a = mid + 1
                    else:
                        b = mid - 1
        for n_keep in range(top, bottom - 1, -1):
            if n_keep < n_min:
                break
            if n_keep == total_c:  # the only allocation of the whole class
                for i in range(nv):
                    alloc[i] = cap[i]
            elif t >= 0.0:
                _closest_allocation(cap, tq, n_keep, alloc)
            elif l_entropy > 1.0:
                _balanced_allocation(cap, n_keep, alloc)
            else:
                for i in range(nv):
                    alloc[i] = cap[i]
            ok = True
            if t >= 0.0 and _allocation_distance(alloc, n_keep, tq, qq_out) > t:
                ok = False
            if ok and l_entropy > 1.0:
                nlogn = 0.0
                for i in range(nv):
                    if alloc[i] > 0:
                        nlogn += alloc[i] * np.log(alloc[i])
                if np.log(n_keep) - nlogn / n_keep < log_l - 1e-12:
                    ok = False
            if ok and l_distinct > 1:
                d = 0
                for i in range(nv):
                    if alloc[i] > 0:
                        d += 1
                if d < l_distinct:
                    ok = False
            if ok:
                chosen = n_keep
                break
    return chosen


@njit(cache=True)
def _pairs_by_class_into(pair_class, m, first, fill, order):
    """Counting sort of pairs by class (classes are dense ids) into ``first`` (m + 1) and
    ``order`` (npairs), ``fill`` (m) as scratch: the pairs of class c at
    order[first[c]:first[c + 1]] in pair order; returns the most pairs of a class. O(pairs), no
    comparison sort."""
    for c in range(m + 1):
        first[c] = 0
    for p in range(pair_class.shape[0]):
        first[pair_class[p] + 1] += 1
    widest = 0
    for c in range(m):
        widest = max(widest, first[c + 1])
        first[c + 1] += first[c]
        fill[c] = first[c]
    for p in range(pair_class.shape[0]):
        c = pair_class[p]
        order[fill[c]] = p
        fill[c] += 1
    return widest


@njit(cache=True)
def _pairs_by_class(pair_class, m):
    """``_pairs_by_class_into`` with arrays of its own: (first, order, widest)."""
    first = np.empty(m + 1, dtype=np.int64)
    order = np.empty(pair_class.shape[0], dtype=np.int64)
    widest = _pairs_by_class_into(pair_class, m, first, np.empty(m, dtype=np.int64), order)
    return first, order, widest


@njit(cache=True)
def _q_terms(q):
    """sum q^2 and the number of sensitive values with q > 0."""
    qq_all = 0.0
    n_pos_all = 0
    for v in range(q.shape[0]):
        qq_all += q[v] * q[v]
        if q[v] > 0.0:
            n_pos_all += 1
    return qq_all, n_pos_all


@njit(cache=True)
def optimal_pair_retention_t(size, pair_class, pair_sa, pair_n, q, k, t, l_distinct, l_entropy, t_kind, t_params):
    """Per (class, SA) pair, how many records to keep so that TD is maximal (§3).

    Active constraints: k>=1 minimum class size; t>=0 t-closeness (t<0: off) under the distance
    ``t_kind`` (a code of kinds.py: 1 Euclidean, 5 equal EMD, 6 ordered EMD; ``t_params`` its
    kernel row); l_distinct>=1 distinct l-diversity; l_entropy>=1 entropy l-diversity (<=1: off).
    Within a class every retained record adds the same TD, so per class the largest feasible N
    wins. Exact for k, distinct-l, and one of {t, entropy-l} with k; with t and an l-model
    together, the allocation follows t and l is checked (``optimal_pair_retention_is_exact``).
    Under an EMD the allocation follows t and k alone (``_emd_class_keep``); l is left to the
    evaluator."""
    m = size.shape[0]
    emd = t >= 0.0 and t_kind != 1
    rank_of, by_rank, qcum = emd_terms(q, t_params, t_kind)
    first, order, widest = _pairs_by_class(pair_class, m)
    keep = np.zeros(pair_class.shape[0], dtype=np.int64)
    log_l = np.log(l_entropy) if l_entropy > 1.0 else 0.0
    qq_all, n_pos_all = _q_terms(q)
    cap_buf = np.empty(widest, dtype=np.int64)
    sa_buf = np.empty(widest, dtype=np.int64)
    tq_buf = np.empty(widest)
    alloc_buf = np.zeros(widest, dtype=np.int64)
    for c in range(m):
        start = first[c]
        nv = first[c + 1] - start
        if nv == 0:
            continue
        cap = cap_buf[:nv]
        tq = tq_buf[:nv]
        sa_of = sa_buf[:nv]
        for i in range(nv):
            p = order[start + i]
            cap[i] = pair_n[p]
            sa_of[i] = pair_sa[p]
            tq[i] = q[pair_sa[p]]
        alloc = alloc_buf[:nv]
        if emd:
            chosen = _emd_class_keep(cap, sa_of, tq, q, rank_of, by_rank, qcum, size[c], max(k, 1), t, t_kind, alloc)
        else:
            chosen = _class_keep(cap, tq, qq_all, n_pos_all, size[c], k, t, l_distinct, l_entropy, log_l, alloc)
        for i in range(nv):
            keep[order[start + i]] = alloc[i] if chosen > 0 else 0
    return keep


@njit(cache=True)
def _rows_from_pairs_into(pid, left, counts, ret):
    """``rows_from_pairs`` into ``ret`` (rows of no pair are left as they are); ``left``: each
    pair's kept records, consumed (what is left to place)."""
    for h in range(pid.shape[0]):
        p = pid[h]
        if p >= 0:
            take = min(counts[h], left[p])
            ret[h] = take
            left[p] -= take


@njit(cache=True)
def rows_from_pairs(pid, pair_keep, counts):
    """Spread each pair's kept records over its histogram rows, in row order."""
    ret = np.zeros(pid.shape[0], dtype=np.int64)
    _rows_from_pairs_into(pid, pair_keep.copy(), counts, ret)
    return ret


# --- S*(G) and its evaluation in one pass -------------------------------------------------

MEMO_SLOTS = 1 << 17  # memo entries at most (hash slots; filled up to half)
MEMO_SLOTS_PER_ROW = 8  # hash slots per histogram row, between MEMO_MIN_SLOTS and MEMO_SLOTS
MEMO_MIN_SLOTS = 1 << 12
MEMO_WIDTH = 8  # classes with more distinct sensitive values than this are not memoized
_CAP_BITS = 40  # a memo key packs (sa, cap) as sa << 40 | cap


def memo_slots(n_rows: int) -> int:
    """Hash slots of the memo of a table of ``n_rows`` histogram rows: MEMO_SLOTS_PER_ROW a row
    (a power of two, at least MEMO_MIN_SLOTS, at most MEMO_SLOTS): a class signature comes from
    a class of the table, so a small table fills few, and a memo sized for the largest tables
    cost small searches more to allocate than it saved. A full memo only stops remembering:
    the numbers are the same."""
    slots = MEMO_MIN_SLOTS
    while slots < MEMO_SLOTS_PER_ROW * n_rows and slots < MEMO_SLOTS:
        slots *= 2
    return slots


def new_retention_memo(n_sa: int, slots: int = MEMO_SLOTS):
    """Empty memo of ``_class_keep`` for ``evaluate_optimal_batch``: (table, fill).

    One row per hash slot, so that a lookup touches one cache line or two: [number of values
    (0: empty; a class holds at least one), width packed (sa, cap) keys, width kept counts]. A
    class of at most width = min(n_sa, MEMO_WIDTH) sensitive values fits: 5 MiB for a binary
    SA, 17 MiB at most, all zeros: its pages are only touched where slots are filled (no empty
    mark written into every slot when a search starts).
    """
    width = min(max(n_sa, 1), MEMO_WIDTH) if n_sa < (1 << (63 - _CAP_BITS)) else 0
    return np.zeros((slots, 1 + 2 * width), dtype=np.int64), np.zeros(1, dtype=np.int64)


@njit(cache=True)
def _memo_slot(memo, sig_sa, cap, nv):
    """Slot of the class signature (sa_i, cap_i)_i in the memo: (slot, found). The slot of a
    miss is the empty one where the signature belongs (linear probing)."""
    h = np.uint64(nv + 1)
    for i in range(nv):
        h = (h ^ np.uint64((sig_sa[i] << _CAP_BITS) | cap[i])) * _GOLDEN
    mask = np.uint64(memo.shape[0] - 1)
    s = (h >> np.uint64(20)) & mask
    while True:
        ln = memo[s, 0]
        if ln == 0:
            return np.int64(s), False
        if ln == nv:
            same = True
            for i in range(nv):
                if memo[s, 1 + i] != ((sig_sa[i] << _CAP_BITS) | cap[i]):
                    same = False
                    break
            if same:
                return np.int64(s), True
        s = (s + np.uint64(1)) & mask


@njit(cache=True)
def evaluate_optimal_batch(G, codes, gen, n_gen, weight, sa, n_sa, counts, q, kinds, kind_params, n_records,
                           k, t, l_distinct, l_entropy, t_kind, t_params, memo, memo_fill,
                           ids, parent_slot, out_slot):
    """S*(G) (``optimal_pair_retention_t`` + ``rows_from_pairs``) and the evaluation of (G, S*(G))
    for each row of G, classifying each G once: (retained (P, H), AD (P, len(kinds)), TD, suppressed).

    The evaluation is read off the class statistics of the oracle instead of classifying the
    retained rows again: S*(G) keeps the first rows of each pair, so a surviving pair's first
    row, and thus the pair order within a class, is unchanged, and pairs with nothing kept are
    dropped (as absent values, the way the evaluator sees them). All rows of a class share one
    TD weight, summed in row order as ``batch.evaluate_prepared_into`` does: the same bits.
    ``kinds``: codes of engine/kernels/kinds.py, ``kind_params`` their parameter rows
    (``PrivacyModel.kernel_params``, padded). The allocation of a class whose whole-class test
    fails is remembered across calls in the memo (``new_retention_memo``; one per constraints):
    the same SA histograms recur on many nodes.

    Roll-up (as ARX and Flash share work between neighbouring nodes): ``ids`` holds class ids
    per row of remembered nodes (engine/methods/generalization/evaluators/class_memo.py); when ``parent_slot[p]`` is
    s >= 0, the classes of G[p] are built from ``ids[s]``, the class ids of a node below G[p]
    (``_rollup_into``; an earlier row of this batch when ``ClassMemo.plan`` says so); -1 (or
    an empty ``parent_slot``): classified from scratch. The class ids of G[p] go to
    ``ids[out_slot[p]]`` when ``out_slot`` has P rows (the parent is read before that write).
    """
    P = G.shape[0]
    n = codes.shape[0]
    nm = kinds.shape[0]
    needs_pairs = False
    for j in range(nm):
        if kinds[j] != 0:
            needs_pairs = True
    retained = np.zeros((P, n), dtype=np.int64)
    ad = np.zeros((P, nm))
    td = np.zeros(P)
    sup = np.zeros(P, dtype=np.int64)
    active = np.zeros(n, dtype=np.bool_)
    for h in range(n):
        active[h] = counts[h] > 0
    log_l = np.log(l_entropy) if l_entropy > 1.0 else 0.0
    qq_all, n_pos_all = _q_terms(q)
    n_min = max(k, 1)
    emd = t >= 0.0 and t_kind != 1  # t-closeness under an EMD (``optimal_pair_retention_t``)
    rank_of, by_rank, qcum = emd_terms(q, t_params, t_kind)
    emd_x = np.empty(q.shape[0])
    # Only k constrains S*(G) (the other models have no oracle term): it keeps whole classes.
    class_level = t < 0.0 and l_distinct <= 1 and l_entropy <= 1.0
    width = (memo.shape[1] - 1) // 2
    memo_cap = memo.shape[0] // 2
    # Scratch buffers shared by the whole batch (pairs and classes are at most n).
    nb = max(n, 1)
    size_t = _table_size(n)
    keys = np.empty(n, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    slot_key = np.empty(size_t, dtype=np.int64)
    slot_id = np.empty(size_t, dtype=np.int32)
    size = np.zeros(nb, dtype=np.int64)
    kept_size = np.zeros(nb, dtype=np.int64)
    class_w = np.zeros(nb)
    seen = np.zeros(nb, dtype=np.bool_)
    pid = np.empty(n, dtype=np.int32)
    pair_class = np.empty(nb, dtype=np.int32)
    pair_sa = np.empty(nb, dtype=np.int32)
    pair_n = np.zeros(nb, dtype=np.int64)
    keep = np.zeros(nb, dtype=np.int64)
    kept_class = np.empty(nb, dtype=np.int32)
    kept_sa = np.empty(nb, dtype=np.int32)
    kept_n = np.empty(nb, dtype=np.int64)
    ad_f1 = np.empty(nb)  # scratch of _ad_into
    ad_f2 = np.empty(nb)
    ad_i = np.empty(nb, dtype=np.int64)
    first = np.zeros(nb + 1, dtype=np.int64)
    fill = np.zeros(nb, dtype=np.int64)
    order = np.empty(nb, dtype=np.int64)
    cap_buf = np.empty(nb, dtype=np.int64)
    sa_buf = np.empty(nb, dtype=np.int64)
    tq_buf = np.empty(nb)
    alloc_buf = np.zeros(nb, dtype=np.int64)
    rep = np.empty(2 * nb, dtype=np.int32)
    ones = np.ones(nb, dtype=np.bool_)
    # Pair ids straight from class * n_sa + sa when that table is small (same first-seen ids
    # as the hash of class_sa_pairs, without hashing); an empty map: the hash.
    direct = n * max(n_sa, 1) <= (1 << 24)
    pair_map = np.full(n * max(n_sa, 1) if direct else 0, -1, dtype=np.int32)
    kept_cls = np.empty(n if class_level and needs_pairs else 0, dtype=np.int32)
    for p in range(P):
        g = G[p]
        par = parent_slot[p] if parent_slot.shape[0] > p else -1
        if par >= 0:
            m = _rollup_into(g, codes, gen, n_gen, ids[par], keys, cls, rep, ones, slot_key, slot_id)
        else:
            m = _classify_into(g, codes, gen, n_gen, active, keys, cls, slot_key, slot_id)
        if out_slot.shape[0] > p:
            ids[out_slot[p], :n] = cls
        _class_sizes_into(cls, m, counts, size)
        for c in range(m):
            kept_size[c] = 0
        ret = retained[p]
        n_kept = 0
        if needs_pairs and class_level:
            # S*(G) under k alone keeps exactly the classes of >= k records (what _class_keep
            # returns for them: the whole class; it suppresses the others), so no allocation
            # per class: the models without an oracle term (models/oracle.py) read the pairs of
            # the kept classes, the same pairs in the same order as the general branch gives.
            # The pairs of the kept rows alone (first-seen order among them, the order of the
            # general branch's kept pairs): class ids of the rows suppressed set to -1, in a copy.
            for c in range(m):
                kept_size[c] = size[c] if size[c] >= n_min else 0
            for h in range(n):
                c = cls[h]
                if c >= 0 and size[c] >= n_min:
                    ret[h] = counts[h]
                    kept_cls[h] = c
                else:
                    ret[h] = 0
                    kept_cls[h] = -1
            n_kept = _class_sa_pairs_into(kept_cls, m, sa, n_sa, ret, ret, keys, pid, kept_class, kept_sa,
                                          kept_n, slot_key, slot_id, pair_map)
        elif needs_pairs:
            # (class, SA) pairs in first-seen row order, then by class in pair order.
            npairs = _class_sa_pairs_into(cls, m, sa, n_sa, active, counts, keys, pid, pair_class, pair_sa, pair_n,
                                          slot_key, slot_id, pair_map)
            _pairs_by_class_into(pair_class[:npairs], m, first, fill, order)
            for c in range(m):
                start = first[c]
                nv = first[c + 1] - start
                cap = cap_buf[:nv]
                for i in range(nv):
                    pp = order[start + i]
                    cap[i] = pair_n[pp]
                    sa_buf[i] = pair_sa[pp]
                if size[c] < n_min or nv < l_distinct:  # too small, or too few distinct values
                    for i in range(nv):
                        keep[order[start + i]] = 0
                    continue
                tq = tq_buf[:nv]
                for i in range(nv):
                    tq[i] = q[sa_buf[i]]
                if t >= 0.0 and l_entropy <= 1.0 and not emd:
                    # The whole class passes: _class_keep would keep it whole (its first test).
                    if _allocation_distance(cap, size[c], tq, _absent_q_mass(tq, qq_all, n_pos_all)) <= t:
                        for i in range(nv):
                            keep[order[start + i]] = cap[i]
                        continue
                if emd:
                    # The whole class passes: _emd_class_keep would keep it whole (its first test).
                    whole = (_ordered_distance(cap, size[c], sa_buf[:nv], q, by_rank, emd_x) if t_kind == 6
                             else _equal_distance(cap, size[c], tq))
                    if whole <= t:
                        for i in range(nv):
                            keep[order[start + i]] = cap[i]
                        continue
                slot = np.int64(-1)
                if nv <= width and size[c] < (1 << _CAP_BITS):
                    slot, found = _memo_slot(memo, sa_buf, cap, nv)
                    if found:
                        for i in range(nv):
                            keep[order[start + i]] = memo[slot, 1 + width + i]
                        continue
                alloc = alloc_buf[:nv]
                if emd:
                    chosen = _emd_class_keep(cap, sa_buf[:nv], tq, q, rank_of, by_rank, qcum, size[c], n_min, t, t_kind,
                                             alloc)
                else:
                    chosen = _class_keep(cap, tq, qq_all, n_pos_all, size[c], k, t, l_distinct, l_entropy, log_l,
                                         alloc)
                for i in range(nv):
                    keep[order[start + i]] = alloc[i] if chosen > 0 else 0
                if slot >= 0 and memo_fill[0] < memo_cap:
                    memo[slot, 0] = nv
                    for i in range(nv):
                        memo[slot, 1 + i] = (sa_buf[i] << _CAP_BITS) | cap[i]
                        memo[slot, 1 + width + i] = alloc[i] if chosen > 0 else 0
                    memo_fill[0] += 1
            # Spread each pair's kept records over its rows in row order (rows_from_pairs);
            # pair_n becomes what is left to place.
            for i in range(npairs):
                pair_n[i] = keep[i]
            _rows_from_pairs_into(pid, pair_n, counts, ret)
            # The evaluator's pairs: those with records kept, in pair order.
            for i in range(npairs):
                if keep[i] > 0:
                    kept_size[pair_class[i]] += keep[i]
                    kept_class[n_kept] = pair_class[i]
                    kept_sa[n_kept] = pair_sa[i]
                    kept_n[n_kept] = keep[i]
                    n_kept += 1
        else:  # k-anonymity alone: keep the classes of size >= k
            for c in range(m):
                kept_size[c] = size[c] if size[c] >= k else 0
            for h in range(n):
                c = cls[h]
                ret[h] = counts[h] if c >= 0 and size[c] >= k else 0
        _ad_into(kinds, kind_params, kept_size[:m], kept_class[:n_kept], kept_sa[:n_kept], kept_n[:n_kept], q, qq_all, n_pos_all,
                 ad_f1, ad_f2, ad_i, ad[p])
        td[p], kept = _td_by_class(g, codes, weight, cls, ret, m, seen, class_w)
        sup[p] = n_records - kept
    return retained, ad, td, sup
