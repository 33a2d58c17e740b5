"""Fused Numba evaluation of a whole batch of solutions: one call per batch instead of five
kernel calls and a Python loop per solution (engine/methods/generalization/evaluators/numba_backend.py uses it).

The evolutionary optimizers evaluate one small batch per generation (ID-DGA: 20 children,
then the improved ones), so on a 400-record instance the Python glue around the kernels of
``_kernels.py`` (argument unboxing, ``ClassStats``, one ``model.ad`` call per model) costs
several times the kernels' own few microseconds. Here one ``njit`` function does, for each row
of the batch: classes, class sizes and TD from one key per row (``_kernels._classify_td_into``:
keys summed QID by QID over QID-major codes, classes found segment by segment in a cached slot
table, ids in first-seen row order; docs/design/evaluator.md), the (class, SA) pairs when a
model needs them, and AD per model, with scratch buffers allocated once per batch and what
depends on the table alone (``prepare_rows``) made once per table by the caller.

Exactly the same numbers as the per-solution path: the same class ids, and every sum over the
same terms in the same order (TD: one weight per class, from its first row, summed over rows
in order as ``_kernels.transparency`` sums it), so tests/oracles/test_batch_evaluator.py
compares both with ``==`` on random instances and against tests/support/reference.py.

Numba's on-disk cache (``cache=True``) is not invalidated when a function defined in another
file changes; ``guard`` (engine/kernels/cache.py) drops this module's cache files when
``_kernels.py`` (or this file) differs from the sources they were compiled against. Supported
AD computations: the codes of engine/kernels/kinds.py; a model without one uses the general
path.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[K])


@njit(cache=True)
def retained_batch(S, offsets):
    """(P, nR) per-record keep flags -> (P, H) retained records per histogram row."""
    P = S.shape[0]
    out = np.empty((P, offsets.shape[0] - 1), dtype=np.int64)
    for p in range(P):
        K._retained_into(S[p], offsets, out[p])
    return out


@njit(cache=True)
def prepare_rows(codes, gen):
    """What ``evaluate_prepared_into`` reads of the table besides its arrays, made once per table:
    (``K.qid_major(codes)``, or an empty (nq, 0) array when a hierarchy has more than 65,536
    leaves; leaves in use per QID; ``K.sorted_rows(codes)``; the slot table of
    ``K._classify_td_into``, all -1)."""
    n, nq = codes.shape
    small = gen.shape[2] <= 65536
    cols = K.qid_major(codes) if small else np.empty((nq, 0), dtype=np.uint16)
    n_leaves = np.zeros(nq, dtype=np.int64)  # codes are below it
    for h in range(n):
        for qi in range(nq):
            n_leaves[qi] = max(n_leaves[qi], codes[h, qi] + 1)
    slot = np.full((K._table_size(n) if small else 0, 2), -1, dtype=np.int64)
    return cols, n_leaves, K.sorted_rows(codes), slot


@njit(cache=True)
def evaluate_prepared_into(G, retained, codes, cols, n_leaves, rows_sorted, slot, gen, n_gen, weight, sa, n_sa, q,
                           kinds, kind_params, n_records, row_size):
    """AD per model (P, len(kinds)), TD (P,) and suppressed records (P,) of each (G[p], retained[p]),
    with ``prepare_rows(codes, gen)`` made by the caller, once per table (``slot`` is left all -1
    for the next call).

    ``kinds``: codes of engine/kernels/kinds.py (0 k-anonymity: smallest class, inf when empty;
    1 Euclidean t-closeness: largest class distance to ``q``, 0 when empty; 2 distinct l: fewest
    distinct SA values in a class; 3 entropy l: smallest exp(entropy) of a class; the others read
    their parameter row of ``kind_params``: ``PrivacyModel.kernel_params``, padded to one width).
    When ``row_size`` has P rows, the class size of every histogram row goes into ``row_size[p]``
    (0 where nothing is retained): what ID-DGA's improvement (§4.5) needs of an infeasible child
    (``record_class_sizes`` at each row's first record), which the fused ID-DGA kernel takes from
    the evaluation instead of classifying the child again."""
    P = G.shape[0]
    n, nq = codes.shape
    nm = kinds.shape[0]
    ad = np.zeros((P, nm))
    td = np.zeros(P)
    sup = np.zeros(P, dtype=np.int64)
    needs_pairs = False
    for j in range(nm):
        if kinds[j] != 0:
            needs_pairs = True
    # Scratch buffers, shared by all rows of the batch. Not zeroed: each is reset for the
    # classes or pairs in use before it is read (a batch of one node, as Flash sends, paid
    # ~1 MB of zeroing per node on adult).
    size_t = K._table_size(n)
    nb = max(n, 1)
    keys = np.empty(n, dtype=np.int64)
    high = np.empty(nb, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    size = np.empty(nb, dtype=np.int64)
    class_w = np.empty(nb)
    class_rep = np.empty(nb, dtype=np.int64)
    class_slot = np.empty(nb, dtype=np.int64)
    # Pair ids straight from class * n_sa + sa when that table is small (the same first-seen
    # ids as the hash, _kernels._class_sa_pairs_into); else by hash, in their own table.
    direct_pairs = needs_pairs and n * max(n_sa, 1) <= 4 * size_t
    pair_map = np.full(n * max(n_sa, 1) if direct_pairs else 0, -1, dtype=np.int32)
    pair_key = np.empty(size_t if needs_pairs and not direct_pairs else 0, dtype=np.int64)
    pair_slot = np.empty(pair_key.shape[0], dtype=np.int32)
    pid = np.empty(n if needs_pairs else 0, dtype=np.int32)
    pb = nb if needs_pairs else 0
    pair_class = np.empty(pb, dtype=np.int32)
    pair_sa = np.empty(pb, dtype=np.int32)
    pair_n = np.empty(pb, dtype=np.int64)
    ad_f1 = np.empty(pb)  # scratch of _kernels._ad_into (per class: only the pair models read it)
    ad_f2 = np.empty(pb)
    ad_i = np.empty(pb, dtype=np.int64)
    tab = np.empty((nq, gen.shape[2]), dtype=np.int64)
    qq, n_pos = K._q_terms(q)  # source distribution terms of t-closeness
    one_key = cols.shape[1] == n and slot.shape[0] >= 2 * n
    for p in range(P):
        g = G[p]
        ret = retained[p]
        bound = K._key_tables_into(g, gen, n_gen, tab) if one_key else -1
        if bound >= 0:  # classes, sizes and TD from one key per row
            m, kept, td[p] = K._classify_td_into(g, cols, gen, n_gen, n_leaves, weight, ret, tab, bound, rows_sorted,
                                                 high, keys, cls, size, class_w, class_rep, class_slot, slot)
        else:  # the key would overflow: classified with compression on the way
            slot_key = np.empty(size_t, dtype=np.int64)
            slot_id = np.empty(size_t, dtype=np.int32)
            m = K._classify_into(g, codes, gen, n_gen, ret, keys, cls, slot_key, slot_id)
            kept = K._class_sizes_into(cls, m, ret, size)
            td[p] = K.transparency(g, codes, ret, weight)
        sup[p] = n_records - kept
        if row_size.shape[0] > p:
            for h in range(n):
                row_size[p, h] = size[cls[h]] if cls[h] >= 0 else 0
        npairs = 0
        if needs_pairs:
            npairs = K._class_sa_pairs_into(cls, m, sa, n_sa, ret, ret, keys, pid, pair_class, pair_sa, pair_n,
                                            pair_key, pair_slot, pair_map)
        K._ad_into(kinds, kind_params, size[:m], pair_class[:npairs], pair_sa[:npairs], pair_n[:npairs], q, qq, n_pos,
                   ad_f1, ad_f2, ad_i, ad[p])
    return ad, td, sup


@njit(cache=True)
def record_class_sizes(g, ret, codes, gen, n_gen, offsets):
    """Class size of every record for one solution (0 for suppressed records): the first
    ret[h] records of row h are kept (``NumbaEvaluator.record_class_sizes``)."""
    n = codes.shape[0]
    keys = np.empty(n, dtype=np.int64)
    cls = np.empty(n, dtype=np.int32)
    size_t = K._table_size(n)
    slot_key = np.empty(size_t, dtype=np.int64)
    slot_id = np.empty(size_t, dtype=np.int32)
    m = K._classify_into(g, codes, gen, n_gen, ret, keys, cls, slot_key, slot_id)
    size = K.class_sizes(cls, m, ret)
    out = np.zeros(offsets[n], dtype=np.int64)
    for h in range(n):
        if cls[h] < 0:
            continue
        s = size[cls[h]]
        for r in range(offsets[h], offsets[h] + min(ret[h], offsets[h + 1] - offsets[h])):
            out[r] = s
    return out
