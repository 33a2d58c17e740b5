"""Flash as one Numba call (``flash_search``; ``flash._Flash`` is the plain-Python twin, and
tests/oracles/test_flash_kernel.py and test_flash_limit_kernel.py run both and compare the
checked nodes, in order, and the results).

Why: a check is a few hundred microseconds or less on small tables, while the Python traversal
around it (strategy keys, successor lists, the heap, tags, the evaluator and Tracker calls)
cost several times what ARX spends on a whole node. Here the traversal and the checks are one
call; the caller hands the checked nodes to the Tracker.

Same traversal as the twin, step for step: levels bottom-up, each level's untagged nodes in the
twin's ``sorted_level`` order (the same float operations: NumPy's pairwise sum of the relative
generalizations, then rounding to 12 decimals as ``np.round`` does, then a stable lexicographic
sort), paths along the first untagged successor by the strategy key (the same sequential sums
as ``_Flash.key``), the binary search along a path, predictive tagging of the n-dimensional
boxes above an anonymous node and below a non-anonymous one, and the priority queue ordered by
(key, flat index); with a positive limit also the twin's pruning by UB and its second phase.
The checks are those of the twin's evaluator, computed differently (``flash_search``).

The kernels of engine/kernels/classes.py are compiled into these; ``guard`` removes this
module's Numba cache when that source changes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import memo as MK
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[K, MK])

UNTAGGED, ANONYMOUS, NOT_ANONYMOUS = 0, 1, 2
PRUNED = 3  # the twin's _PRUNED: UB(node) <= the best TD, so is every successor's
# A node dominated by the best TD is pruned only while at least this share (numerator,
# denominator) of the checks so far found their node anonymous, else checked
# (``flash._Flash.prune_if_dominated``).
PRUNE_SHARE = (3, 20)
# NumPy sums a row of up to this many values with 8 partial sums (pairwise_sum in
# numpy/_core/src/umath/loops_utils.h); longer rows recurse, which ``_numpy_row_sum`` does not.
MAX_QIDS = 128


@njit(cache=True)
def _numpy_row_sum(x):
    """``x.sum()`` as NumPy computes it for a contiguous row of at most 128 values: in order
    below 8 values, else 8 partial sums combined pairwise, then the rest in order."""
    n = x.shape[0]
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[i]
        return res
    r = np.empty(8)
    for j in range(8):
        r[j] = x[j]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        for j in range(8):
            r[j] += x[i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += x[i]
        i += 1
    return res


@njit(cache=True)
def _round12(x):
    """``np.round(x, 12)``: multiply by 10**12, round half to even, divide."""
    return np.rint(x * 1e12) / 1e12


@njit(cache=True)
def _decode(idx, strides, node):
    """The levels of flat index ``idx`` into ``node``."""
    rest = idx
    for q in range(strides.shape[0]):
        node[q] = rest // strides[q]
        rest -= node[q] * strides[q]


@njit(cache=True)
def _node_key_into(node, prec_tab, dist_tab, max_level, out, o):
    """``_Flash.key`` of a node (its levels) into out[o, :]: level / max level, mean relative
    generalization, 1 - mean distinct ratio, each summed in QID order as the twin sums."""
    nq = node.shape[0]
    level = 0
    prec = 0.0
    dist = 0.0
    for q in range(nq):
        level += node[q]
        prec += prec_tab[q, node[q]]
        dist += dist_tab[q, node[q]]
    out[o, 0] = level / max_level
    out[o, 1] = prec / nq
    out[o, 2] = 1.0 - dist / nq


@njit(cache=True)
def _key_into(idx, strides, prec_tab, dist_tab, max_level, node, out, o):
    """``_node_key_into`` of a flat index."""
    _decode(idx, strides, node)
    _node_key_into(node, prec_tab, dist_tab, max_level, out, o)


@njit(cache=True)
def _before(ka, a, kb, b):
    """(key a, a) < (key b, b), the order of the twin's heap and successor lists."""
    for j in range(3):
        if ka[j] != kb[j]:
            return ka[j] < kb[j]
    return a < b


@njit(cache=True)
def _heap_push(heap, hkeys, n, idx, key):
    """Push (key, idx) on the binary min-heap heap[:n] (keys beside it); returns the heaps
    (grown when full)."""
    if n == heap.shape[0]:
        bigger = np.empty(2 * n, dtype=heap.dtype)
        bigger[:n] = heap
        heap = bigger
        bk = np.empty((2 * n, 3))
        bk[:n] = hkeys
        hkeys = bk
    i = n
    while i > 0:
        parent = (i - 1) // 2
        if not _before(key, idx, hkeys[parent], heap[parent]):
            break
        heap[i] = heap[parent]
        hkeys[i] = hkeys[parent]
        i = parent
    heap[i] = idx
    hkeys[i] = key
    return heap, hkeys


@njit(cache=True)
def _heap_pop(heap, hkeys, n):
    """Remove and return the smallest (key, idx) of heap[:n] (n > 0): its idx."""
    top = heap[0]
    n -= 1
    if n == 0:
        return top
    last = heap[n]
    lk = hkeys[n].copy()
    i = 0
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _before(hkeys[child + 1], heap[child + 1], hkeys[child], heap[child]):
            child += 1
        if not _before(hkeys[child], heap[child], lk, last):
            break
        heap[i] = heap[child]
        hkeys[i] = hkeys[child]
        i = child
    heap[i] = last
    hkeys[i] = lk
    return top


@njit(cache=True)
def _successors(idx, heights, strides, prec_tab, dist_tab, max_level, node, succ, skeys):
    """Direct successors of idx into succ, sorted by (key, index) as ``_Flash.successors``;
    returns how many. ``skeys``: nQ + 1 rows (the last one is the sort's scratch)."""
    _decode(idx, strides, node)
    nq = heights.shape[0]
    m = 0
    for q in range(nq):
        if node[q] < heights[q]:
            succ[m] = idx + strides[q]
            node[q] += 1  # the successor's levels, without decoding its index
            _node_key_into(node, prec_tab, dist_tab, max_level, skeys, m)
            node[q] -= 1
            m += 1
    # insertion sort: at most nQ entries
    ks = skeys[nq]
    for i in range(1, m):
        s = succ[i]
        ks[:] = skeys[i]
        j = i - 1
        while j >= 0 and _before(ks, s, skeys[j], succ[j]):
            succ[j + 1] = succ[j]
            skeys[j + 1] = skeys[j]
            j -= 1
        succ[j + 1] = s
        skeys[j + 1] = ks
    return m


@njit(cache=True)
def _fill_box(tags, shape, strides, lo, hi, value):
    """tags[lo[0]:hi[0]+1, ..., lo[n-1]:hi[n-1]+1] = value on the flat tag array."""
    nq = shape.shape[0]
    cur = lo.copy()
    base = 0
    for q in range(nq):
        base += lo[q] * strides[q]
    last = nq - 1
    while True:
        # the innermost dimension as one run
        start = base
        for c in range(lo[last], hi[last] + 1):
            tags[start + (c - lo[last]) * strides[last]] = value
        q = last - 1
        while q >= 0:
            if cur[q] < hi[q]:
                cur[q] += 1
                base += strides[q]
                break
            base -= (cur[q] - lo[q]) * strides[q]
            cur[q] = lo[q]
            q -= 1
        if q < 0:
            return


@njit(cache=True)
def _fill_down(tags, strides, hi, cur, bases):
    """tags[0:hi[0]+1, ..., 0:hi[n-1]+1] = NOT_ANONYMOUS on the flat tag array, skipping what is
    tagged so already: the nodes tagged not anonymous are a down-set (each tag is a whole box
    below a checked node, and no other tag overwrites one), so when the highest node of a slab
    (c[q] fixed, the later levels at their highest) is tagged, so is that slab and every slab
    below it in dimension q. The tags end as the full fill leaves them, at the cost of the nodes
    newly tagged and the slabs' corners. ``cur``, ``bases``: scratch of n + 1."""
    nq = hi.shape[0]
    q = 0
    bases[0] = 0
    cur[0] = hi[0]
    while q >= 0:
        off = bases[q] + cur[q] * strides[q]
        tail = 0  # the slab's highest node, from its base
        for r in range(q + 1, nq):
            tail += hi[r] * strides[r]
        if cur[q] < 0 or tags[off + tail] == NOT_ANONYMOUS:  # this slab and the lower ones are done
            q -= 1
            if q >= 0:
                cur[q] -= 1
            continue
        if q == nq - 1:
            tags[off] = NOT_ANONYMOUS
            cur[q] -= 1
        else:
            bases[q + 1] = off
            q += 1
            cur[q] = hi[q]


@njit(cache=True)
def _sorted_level(bucket, tags, strides, prec_tab, dist_tab, hdiv, node, row):
    """The untagged nodes of one level (``bucket``, flat indices ascending) in the order of
    ``_Flash.sorted_level``: by rounded mean relative generalization, then rounded
    1 - mean distinct ratio, then index."""
    nq = strides.shape[0]
    n = 0
    for i in range(bucket.shape[0]):
        if tags[bucket[i]] == UNTAGGED:
            n += 1
    idx = np.empty(n, dtype=np.int64)
    n = 0
    for i in range(bucket.shape[0]):
        if tags[bucket[i]] == UNTAGGED:
            idx[n] = bucket[i]
            n += 1
    if n <= 1:
        return idx
    prec = np.empty(n)
    dd = np.empty(n)
    for i in range(n):
        _decode(idx[i], strides, node)
        dist = 0.0
        for q in range(nq):
            row[q] = node[q] / hdiv[q]
            dist += dist_tab[q, node[q]]
        prec[i] = _round12(_numpy_row_sum(row) / nq)
        dd[i] = _round12(1.0 - dist / nq)
    # lexsort((idx, dd, prec)): stable sorts from the last key to the first (idx is ascending)
    order = np.argsort(dd, kind="mergesort")
    p2 = prec[order]
    order = order[np.argsort(p2, kind="mergesort")]
    return idx[order]


@njit(cache=True)
def _rollup_classes(g, codes, gen, n_gen, reps, sizes, keys, newid, ones, slot_key, slot_id, out_reps, out_sizes):
    """The classes of ``g`` from the classes of a node below it, given as ``reps`` (the first
    histogram row of each class, ascending) and ``sizes`` (its records): one row per class is
    classified (``K._rank_rows_into``) and the sizes of the classes it merges are added.
    Writes the first row of each class of g (ascending) to ``out_reps`` and its records to
    ``out_sizes``; returns how many classes. The rows themselves are never read beyond one per
    class: a check costs the parent's classes, not the table (ARX's roll-up of class
    snapshots). With no node below g: ``_classify_classes``."""
    mp = reps.shape[0]
    m = K._rank_rows_into(g, codes, gen, n_gen, reps, keys, newid[:mp], ones, slot_key, slot_id)
    for c in range(m):
        out_sizes[c] = 0
    seen = 0
    for c in range(mp):
        j = newid[c]
        if j == seen:  # ids are given in first-seen order: a new class, at its first row
            out_reps[seen] = reps[c]
            seen += 1
        out_sizes[j] += sizes[c]
    return m


@njit(cache=True)
def _classify_classes(g, codes, gen, n_gen, counts, keys, cls, ones, slot_key, slot_id, out_reps, out_sizes):
    """The classes of ``g`` from every row (``K._classify_into``, into ``cls``), as
    ``_rollup_classes`` gives them: the first row (ascending) and the records of each class.
    Returns how many."""
    m = K._classify_into(g, codes, gen, n_gen, ones, keys, cls, slot_key, slot_id)
    for c in range(m):
        out_sizes[c] = 0
    seen = 0
    for h in range(codes.shape[0]):
        c = cls[h]
        if c == seen:  # ids are given in first-seen order
            out_reps[seen] = h
            seen += 1
        out_sizes[c] += counts[h]
    return m




@njit(cache=True)
def _check_within_limit(g, k, max_suppressed, codes, gen, n_gen, weight, counts, keys, cls, ones, slot_key, slot_id,
                        size, kept, ret, seen, class_w):
    """One check of Flash with a positive limit, as the twin's ``_Flash.evaluate`` makes it:
    S*(G) under k (the classes of fewer than k records suppressed) when it suppresses at most
    ``max_suppressed`` records, else nothing suppressed. Returns (AD, TD, suppressed): AD the
    smallest kept class (``_kernels.evaluate_optimal_batch``'s k-anonymity AD, inf when none
    is kept), TD by ``_td_by_class`` over the kept rows (the same bits as the fused oracle's and
    ``unsuppressed_batch``'s)."""
    m = K._classify_into(g, codes, gen, n_gen, ones, keys, cls, slot_key, slot_id)
    K._class_sizes_into(cls, m, counts, size)
    sup = 0
    for c in range(m):
        if size[c] < k:
            sup += size[c]
    if sup <= max_suppressed:
        for c in range(m):
            kept[c] = size[c] if size[c] >= k else 0
        for h in range(codes.shape[0]):
            ret[h] = counts[h] if size[cls[h]] >= k else 0
        td, _ = K._td_by_class(g, codes, weight, cls, ret, m, seen, class_w)
        return K.ad_k_anonymity(kept[:m]), td, sup
    td, _ = K._td_by_class(g, codes, weight, cls, counts, m, seen, class_w)
    return K.ad_k_anonymity(size[:m]), td, 0




@njit(cache=True)
def _by_level(heights, size, top):
    """(level of each flat index, start of each level in the bucket list, the flat indices
    bucketed by level, ascending within a level)."""
    nq = heights.shape[0]
    level_of = np.zeros(size, dtype=np.int32)
    node = np.zeros(nq, dtype=np.int64)
    level_count = np.zeros(top + 2, dtype=np.int64)
    s = 0  # the level of node, counted up as an odometer over the flat indices (no division)
    for idx in range(size):
        level_of[idx] = s
        level_count[s + 1] += 1
        q = nq - 1
        while q >= 0 and node[q] == heights[q]:
            s -= node[q]
            node[q] = 0
            q -= 1
        if q >= 0:
            node[q] += 1
            s += 1
    for j in range(top + 1):
        level_count[j + 1] += level_count[j]
    fill = level_count[:-1].copy()
    by_level = np.empty(size, dtype=np.int64)
    for idx in range(size):
        s = level_of[idx]
        by_level[fill[s]] = idx
        fill[s] += 1
    return level_of, level_count, by_level


@njit(cache=True)
def flash_search(heights, k, max_suppressed, budget, prec_tab, dist_tab, level_td, codes, gen, n_gen, weight, counts,
                 td_margin, memo_capacity, pool_limit):
    """Flash over the lattice of ``heights``, k-anonymity with ``k``, at most ``max_suppressed``
    records suppressed, at most ``budget`` checks: the twin's ``_Flash.run`` step for step.

    ``prec_tab[q, c]`` = c / h[q] (0 when h[q] = 0) and ``dist_tab[q, c]`` = distinct values at
    level c / at level 0, the twin's tables; ``level_td[q, c]``: the twin's UB terms
    (``EncodedTable.level_td``). Returns (checked flat indices in order, AD, TD and suppressed
    records of each, nodes pruned, second-phase candidates, complete): complete is False when
    the budget ran out before every node was tagged.

    A check starts from the classes of the node alone, rolled up from a class snapshot of a
    remembered node below it (the first row and the records of each class, ARX's roll-up of its
    history; ``_rollup_classes``), or classified from every row when none is below
    (``_classify_classes``); only nodes that are not anonymous are remembered (every node above
    an anonymous one is tagged, never checked in the traversal). S*(G) suppresses the classes
    smaller than k; the node is anonymous when they hold at most ``max_suppressed`` records. AD
    is then the smallest kept class and TD that of (G, S*(G)); when S*(G) suppresses something
    both come from a classification of every row (``_check_within_limit``, the twin's oracle,
    bit for bit). A node that is not anonymous is reported with nothing suppressed: AD the
    smallest class.

    TD (a pass over every row and QID, most of a check's time once the classes are rolled up) is
    computed only where a Tracker reads it, the checks that improve its best, and where the
    pruning reads it: every anonymous check whose TD may exceed that of every earlier anonymous
    check, and a check whose smallest class exceeds every earlier one (its violation is then the
    smallest yet). Elsewhere it is NaN. "May exceed" (nothing suppressed): UB, the sum over the
    QIDs of weight x records summed over the leaves at the node's level (TD with nothing
    suppressed is separable over the QIDs), is the node's TD up to rounding; ``td_margin``
    bounds that rounding relative to it (``flash.td_margin``), so a node with
    ``UB * (1 + td_margin) < best`` has a TD below the best. ``memo_capacity``: nodes whose
    classes are kept for the roll-up, ``pool_limit``: the classes kept in all (12 bytes each).

    With a positive limit a node whose UB (summed from ``level_td`` in QID order) is at most the
    best TD is tagged pruned with its successors and not checked (while ``PRUNE_SHARE`` of the
    checks so far found their node anonymous; else it is checked), and the second phase checks the
    anonymous nodes tagged by prediction and never checked, by UB descending then index, while UB
    exceeds the best TD (each from every row).
    """
    nq = heights.shape[0]
    n_rows = codes.shape[0]
    shape = heights + 1
    strides = np.ones(nq, dtype=np.int64)
    for q in range(nq - 2, -1, -1):
        strides[q] = strides[q + 1] * shape[q + 1]
    size = strides[0] * shape[0]
    top = 0
    for q in range(nq):
        top += heights[q]
    max_level = max(top, 1)
    hdiv = np.empty(nq)
    for q in range(nq):
        hdiv[q] = max(heights[q], 1)
    level_of, level_count, by_level = _by_level(heights, size, top)

    tags = np.zeros(size, dtype=np.int8)
    evaluated = np.zeros(size, dtype=np.bool_)
    heap = np.empty(64, dtype=np.int64)
    hkeys = np.empty((64, 3))
    n_heap = 0
    key = np.empty((1, 3))
    node = np.zeros(nq, dtype=np.int64)
    succ = np.empty(nq, dtype=np.int64)
    skeys = np.empty((nq + 1, 3))
    row = np.empty(nq)
    lo = np.zeros(nq, dtype=np.int64)
    hi = np.zeros(nq, dtype=np.int64)
    path = np.empty(top + 1, dtype=np.int64)
    g = np.zeros(nq, dtype=np.int64)
    fill_cur = np.empty(nq + 1, dtype=np.int64)
    fill_bases = np.empty(nq + 1, dtype=np.int64)

    # Scratch of a check: the hash table and per-row buffers.
    n = max(n_rows, 1)
    size_t = K._table_size(n)
    keys_b = np.empty(n, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    ones = np.ones(n, dtype=np.bool_)
    slot_key = np.empty(size_t, dtype=np.int64)
    slot_id = np.empty(size_t, dtype=np.int32)
    csize = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    ret = np.zeros(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    class_w = np.zeros(n)
    out_reps = np.empty(n, dtype=np.int32)
    out_sizes = np.empty(n, dtype=np.int64)

    # The classes of checked nodes that are not anonymous (only those can be below a later
    # check: every node above an anonymous one is tagged), as class snapshots: the first row and
    # the records of each class, kept in one pool (slot s: pool[memo_off[s]:][:memo_m[s]]) that
    # grows up to pool_limit entries and is then emptied (a node whose parent was forgotten is
    # rolled up from a lower one, or from every row: the same classes). The nodes' ring is
    # ``memo_capacity`` slots long.
    cap = max(memo_capacity, 1)
    pool_reps = np.empty(min(2 * n, pool_limit), dtype=np.int32)
    pool_sizes = np.empty(pool_reps.shape[0], dtype=np.int64)
    pool_top = 0
    memo_off = np.zeros(cap, dtype=np.int64)
    memo_m = np.zeros(cap, dtype=np.int64)
    memo_nodes = np.zeros((cap, nq), dtype=np.int64)
    memo_levels = np.full(cap, -1, dtype=np.int64)
    memo_next = 0
    memo_filled = 0
    best_smallest = -np.inf
    best_td = -np.inf  # the largest TD of an anonymous check so far
    # UB's terms for the zero limit's TD skip: records per leaf, then per QID and level the sum
    # over the leaves
    per_leaf = np.zeros((nq, weight.shape[2]))
    for h in range(n_rows):
        for q in range(nq):
            per_leaf[q, codes[h, q]] += counts[h]
    level_ub = np.zeros((nq, weight.shape[1]))
    for q in range(nq):
        for j in range(heights[q] + 1):
            acc = 0.0
            for c in range(weight.shape[2]):
                acc += weight[q, j, c] * per_leaf[q, c]
            level_ub[q, j] = acc

    out_idx = np.empty(64, dtype=np.int64)
    out_ad = np.empty(64)
    out_td = np.empty(64)
    out_sup = np.empty(64, dtype=np.int64)
    checked = 0
    n_anonymous = 0
    pruned = 0

    for level in range(top + 1):
        bucket = by_level[level_count[level]:level_count[level + 1]]
        for start in _sorted_level(bucket, tags, strides, prec_tab, dist_tab, hdiv, node, row):
            if tags[start] != UNTAGGED:
                continue
            _key_into(start, strides, prec_tab, dist_tab, max_level, node, key, 0)
            heap, hkeys = _heap_push(heap, hkeys, n_heap, start, key[0])
            n_heap += 1
            while n_heap > 0:
                head = _heap_pop(heap, hkeys, n_heap)
                n_heap -= 1
                if tags[head] != UNTAGGED:
                    continue
                # the path: always the first untagged successor
                plen = 1
                path[0] = head
                while True:
                    m = _successors(path[plen - 1], heights, strides, prec_tab, dist_tab, max_level, node, succ, skeys)
                    nxt = -1
                    for i in range(m):
                        if tags[succ[i]] == UNTAGGED:
                            nxt = succ[i]
                            break
                    if nxt < 0:
                        break
                    path[plen] = nxt
                    plen += 1
                # binary search for the lowest anonymous node of the path
                low, high = 0, plen - 1
                while low <= high:
                    mid = (low + high) // 2
                    idx = path[mid]
                    if tags[idx] == UNTAGGED:
                        _decode(idx, strides, g)
                        ub = 0.0
                        for q in range(nq):
                            ub += level_td[q, g[q]]
                        # pruned: the twin's prune_if_dominated
                        if (max_suppressed > 0 and ub <= best_td
                                and PRUNE_SHARE[1] * n_anonymous >= PRUNE_SHARE[0] * checked):
                            for q in range(nq):
                                lo[q] = g[q]
                                hi[q] = heights[q]
                            _fill_box(tags, shape, strides, lo, hi, PRUNED)
                            pruned += 1
                        else:
                            if checked >= budget:
                                return (out_idx[:checked], out_ad[:checked], out_td[:checked], out_sup[:checked], pruned,
                                        0, False)
                            # classes of g: rolled up from the highest remembered node below it
                            parent = MK.highest_below(g, memo_nodes, memo_levels, memo_filled)
                            if parent >= 0:
                                o = memo_off[parent]
                                mp = memo_m[parent]
                                mc = _rollup_classes(g, codes, gen, n_gen, pool_reps[o:o + mp], pool_sizes[o:o + mp],
                                                     keys_b, cls, ones, slot_key, slot_id, out_reps, out_sizes)
                            else:
                                mc = _classify_classes(g, codes, gen, n_gen, counts, keys_b, cls, ones, slot_key,
                                                       slot_id, out_reps, out_sizes)
                            ad = K.ad_k_anonymity(out_sizes[:mc])  # the smallest class
                            sup = 0  # S*(G): the records of the classes smaller than k
                            if ad < k:
                                for c in range(mc):
                                    if out_sizes[c] < k:
                                        sup += out_sizes[c]
                            td = np.nan
                            if sup > max_suppressed:  # not anonymous: reported with nothing suppressed
                                sup = 0
                                if ad > best_smallest:
                                    td = K.transparency(g, codes, counts, weight)
                            elif sup > 0:  # anonymous with S*(G): AD, TD from every row, as the twin's oracle
                                ad, td, sup = _check_within_limit(g, k, max_suppressed, codes, gen, n_gen, weight,
                                                                  counts, keys_b, cls, ones, slot_key, slot_id, csize,
                                                                  kept, ret, seen, class_w)
                                best_td = max(best_td, td)
                            else:  # anonymous, nothing suppressed
                                ubz = 0.0
                                for q in range(nq):
                                    ubz += level_ub[q, g[q]]
                                if ubz * (1.0 + td_margin) >= best_td:  # may improve the best
                                    td = K.transparency(g, codes, counts, weight)
                                    best_td = max(best_td, td)
                            best_smallest = max(best_smallest, ad)
                            if ad < k:  # remembered (see above)
                                if pool_top + mc > pool_reps.shape[0]:
                                    if pool_top + mc <= pool_limit:  # grow
                                        grown = min(max(2 * pool_reps.shape[0], pool_top + mc), pool_limit)
                                        r2 = np.empty(grown, dtype=np.int32)
                                        r2[:pool_top] = pool_reps[:pool_top]
                                        pool_reps = r2
                                        s2 = np.empty(grown, dtype=np.int64)
                                        s2[:pool_top] = pool_sizes[:pool_top]
                                        pool_sizes = s2
                                    else:  # full: forget every snapshot
                                        pool_top = 0
                                        memo_levels[:] = -1
                                        memo_next = 0
                                        memo_filled = 0
                                if pool_top + mc <= pool_reps.shape[0]:
                                    slot = memo_next
                                    memo_next = (memo_next + 1) % cap
                                    memo_filled = max(memo_filled, slot + 1)
                                    memo_off[slot] = pool_top
                                    memo_m[slot] = mc
                                    pool_reps[pool_top:pool_top + mc] = out_reps[:mc]
                                    pool_sizes[pool_top:pool_top + mc] = out_sizes[:mc]
                                    pool_top += mc
                                    memo_nodes[slot] = g
                                    memo_levels[slot] = level_of[idx]
                            if checked == out_idx.shape[0]:
                                out_idx, out_ad, out_td, out_sup = _grown(out_idx, out_ad, out_td, out_sup, checked)
                            out_idx[checked] = idx
                            out_ad[checked] = ad
                            out_td[checked] = td
                            out_sup[checked] = sup
                            checked += 1
                            evaluated[idx] = True
                            if ad >= k:  # anonymous: so is every successor
                                n_anonymous += 1
                                for q in range(nq):
                                    lo[q] = g[q]
                                    hi[q] = heights[q]
                                _fill_box(tags, shape, strides, lo, hi, ANONYMOUS)
                            else:  # not anonymous: nor is any predecessor; successors join the queue
                                _fill_down(tags, strides, g, fill_cur, fill_bases)
                                m = _successors(idx, heights, strides, prec_tab, dist_tab, max_level, node, succ, skeys)
                                for i in range(m):
                                    if tags[succ[i]] == UNTAGGED:
                                        heap, hkeys = _heap_push(heap, hkeys, n_heap, succ[i], skeys[i])
                                        n_heap += 1
                    if tags[idx] == ANONYMOUS or tags[idx] == PRUNED:  # the lowest anonymous node is lower
                        high = mid - 1
                    else:
                        low = mid + 1
    if max_suppressed == 0:  # no second phase: an anonymous node suppresses nothing, TD = UB
        return out_idx[:checked], out_ad[:checked], out_td[:checked], out_sup[:checked], pruned, 0, True
    # second phase: anonymous by prediction, never checked, by UB descending then index
    n_cand = 0
    for idx in range(size):
        if tags[idx] == ANONYMOUS and not evaluated[idx]:
            n_cand += 1
    cand = np.empty(n_cand, dtype=np.int64)
    neg_ub = np.empty(n_cand)
    n_cand = 0
    for idx in range(size):
        if tags[idx] == ANONYMOUS and not evaluated[idx]:
            _decode(idx, strides, g)
            ub = 0.0
            for q in range(nq):
                ub += level_td[q, g[q]]
            cand[n_cand] = idx
            neg_ub[n_cand] = -ub
            n_cand += 1
    phase_two = 0
    for i in range(n_cand):
        if -neg_ub[i] > best_td:
            phase_two += 1
    order = np.argsort(neg_ub, kind="mergesort")
    for i in order:
        if -neg_ub[i] <= best_td:
            break
        if checked >= budget:
            return out_idx[:checked], out_ad[:checked], out_td[:checked], out_sup[:checked], pruned, phase_two, False
        _decode(cand[i], strides, g)
        ad, td, sup = _check_within_limit(g, k, max_suppressed, codes, gen, n_gen, weight, counts, keys_b, cls, ones,
                                          slot_key, slot_id, csize, kept, ret, seen, class_w)
        if checked == out_idx.shape[0]:
            out_idx, out_ad, out_td, out_sup = _grown(out_idx, out_ad, out_td, out_sup, checked)
        out_idx[checked] = cand[i]
        out_ad[checked] = ad
        out_td[checked] = td
        out_sup[checked] = sup
        checked += 1
        if ad >= k:
            best_td = max(best_td, td)
    return out_idx[:checked], out_ad[:checked], out_td[:checked], out_sup[:checked], pruned, phase_two, True


@njit(cache=True)
def _grown(a, b, c, d, n):
    """The four output arrays at twice their length, their first n entries kept."""
    a2 = np.empty(2 * n, dtype=a.dtype)
    a2[:n] = a[:n]
    b2 = np.empty(2 * n)
    b2[:n] = b[:n]
    c2 = np.empty(2 * n)
    c2[:n] = c[:n]
    d2 = np.empty(2 * n, dtype=d.dtype)
    d2[:n] = d[:n]
    return a2, b2, c2, d2
