"""Numba kernels of the sensitive-distribution models, one value per class: EMD
t-closeness with equal, ordered and hierarchical ground distance (Li et al. 2007, as ARX 3.9.2's
EqualDistanceTCloseness, OrderedDistanceTCloseness, HierarchicalDistanceTCloseness), recursive
(c, l)-diversity's r_1 / (r_l + ... + r_m) (Machanavajjhala et al. 2007, Def. 4.1) and
beta-likeness's largest excess of a relative gain over its bound (Cao and Karras 2012).

Written once: the models' ``class_ad`` (engine/privacy/distributions.py) calls ``class_values``
and the fused kernels (``_kernels._ad_into``, so ``batch.evaluate_prepared_into`` and
``_kernels.evaluate_optimal_batch``) call ``largest_class_value``, so the per-solution and the
fused paths give the same bits. Their plain-Python twins are the ``*_ref`` functions of
engine/privacy/distributions.py (tests/oracles/test_distribution_kernels.py compares them).

A model's parameters reach the kernels as one float64 row (``PrivacyModel.kernel_params``):
  RECURSIVE_RATIO      [l]
  EQUAL_EMD            []
  ORDERED_EMD          [code at rank 0, code at rank 1, ...]  (n_sa entries)
  HIERARCHICAL_EMD     [height, node of code v at level j for j = 0..height, v = 0..n_sa-1]
                       (node ids dense per level, 0 .. nodes at that level - 1)
  LIKENESS_EXCESS      [beta, 1 if enhanced else 0]
(kinds.py holds the codes.) Conventions: pairs (pair_class, pair_sa, pair_n) with pair_n > 0
in any order, ``size[c]`` the class's retained records (classes of size 0 are skipped, as the
fused oracle leaves them); ``q`` the source distribution over the n_sa codes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ppdp.engine.kernels import kinds as KI
from ppdp.engine.kernels.cache import guard

guard(__file__)

_RECURSIVE = KI.RECURSIVE_RATIO
_EQUAL = KI.EQUAL_EMD
_ORDERED = KI.ORDERED_EMD
_HIERARCHICAL = KI.HIERARCHICAL_EMD
_LIKENESS = KI.LIKENESS_EXCESS


@njit(cache=True)
def _by_class(pair_class, m, first, order):
    """Counting sort of the pairs by class: the pairs of class c at order[first[c]:first[c + 1]],
    in pair order."""
    for c in range(m + 1):
        first[c] = 0
    for p in range(pair_class.shape[0]):
        first[pair_class[p] + 1] += 1
    for c in range(m):
        first[c + 1] += first[c]
    fill = first[:m].copy()
    for p in range(pair_class.shape[0]):
        c = pair_class[p]
        order[fill[c]] = p
        fill[c] += 1


@njit(cache=True)
def _recursive(size, pair_class, pair_n, l_min, out):
    """r_1 / (r_l + ... + r_m) per class (inf with fewer than l values): the tail is the class's
    total minus its l - 1 largest counts, all integers, so the ratio is one exact division."""
    m = size.shape[0]
    w = max(l_min - 1, 1)
    largest = np.zeros((m, w), dtype=np.int64)  # the l - 1 largest counts of a class, descending
    top = np.zeros(m, dtype=np.int64)
    total = np.zeros(m, dtype=np.int64)
    distinct = np.zeros(m, dtype=np.int64)
    for p in range(pair_class.shape[0]):
        n = pair_n[p]
        if n <= 0:
            continue
        c = pair_class[p]
        distinct[c] += 1
        total[c] += n
        if n > top[c]:
            top[c] = n
        if l_min > 1:
            row = largest[c]
            i = l_min - 2
            if n > row[i]:
                while i > 0 and row[i - 1] < n:
                    row[i] = row[i - 1]
                    i -= 1
                row[i] = n
    for c in range(m):
        if distinct[c] < l_min:
            out[c] = math.inf
            continue
        head = 0
        if l_min > 1:
            for i in range(l_min - 1):
                head += largest[c, i]
        out[c] = float(top[c]) / float(total[c] - head)


@njit(cache=True)
def _equal(size, pair_class, pair_sa, pair_n, q, out):
    """1/2 sum_v |p_v - q_v| per class, as ARX sums it: 1/2 (1 + sum over present values
    (|p - q| - q)), the absent values adding q each."""
    m = size.shape[0]
    for c in range(m):
        out[c] = 0.0
    for p in range(pair_class.shape[0]):
        c = pair_class[p]
        qv = q[pair_sa[p]]
        out[c] += abs(pair_n[p] / max(size[c], 1) - qv) - qv
    for c in range(m):
        out[c] = 0.5 * (1.0 + out[c])


@njit(cache=True)
def _ordered(size, pair_class, pair_sa, pair_n, q, by_rank, out):
    """1/(n_sa - 1) sum_i |sum_{rank <= i} (p - q)| per class, values in rank order."""
    m = size.shape[0]
    n_sa = q.shape[0]
    first = np.empty(m + 1, dtype=np.int64)
    order = np.empty(pair_class.shape[0], dtype=np.int64)
    _by_class(pair_class, m, first, order)
    x = np.empty(n_sa)
    scale = max(n_sa - 1, 1)
    for c in range(m):
        out[c] = 0.0
        if size[c] <= 0:  # a class the fused oracle suppressed whole: not part of the release
            continue
        for v in range(n_sa):
            x[v] = -q[v]
        for i in range(first[c], first[c + 1]):
            p = order[i]
            x[pair_sa[p]] += pair_n[p] / max(size[c], 1)
        cum = 0.0
        total = 0.0
        for r in range(n_sa):
            cum += x[by_rank[r]]
            total += abs(cum)
        out[c] = total / scale


@njit(cache=True)
def _hierarchical(size, pair_class, pair_sa, pair_n, q, height, node, out):
    """Li et al. §4.2 per class: for every inner node N at level j, (j / height) min(pos(N),
    neg(N)), pos / neg summing the positive / negative net extras (p - q over the leaves below)
    of N's children. ``node[j, v]``: the (dense) node of code v at level j.

    Sparse in the class's values: a child with no value of the class below it has net extra
    -Q(child) <= 0, so a node with none below it costs nothing (pos = 0), and a node with some
    gets neg = (its touched children's negative extras) + Q(node) - Q(touched children)."""
    m = size.shape[0]
    n_sa = q.shape[0]
    first = np.empty(m + 1, dtype=np.int64)
    order = np.empty(pair_class.shape[0], dtype=np.int64)
    _by_class(pair_class, m, first, order)
    width = 1
    for j in range(height + 1):
        for v in range(n_sa):
            width = max(width, node[j, v] + 1)
    qnode = np.zeros((height + 1, width))  # Q of each node: its leaves' q
    for j in range(height + 1):
        for v in range(n_sa):
            qnode[j, node[j, v]] += q[v]
    parent = np.zeros((max(height, 1), width), dtype=np.int64)  # parent[j - 1, child at level j - 1]
    for j in range(1, height + 1):
        for v in range(n_sa):
            parent[j - 1, node[j - 1, v]] = node[j, v]
    net = np.zeros(width)
    pos = np.zeros(width)
    neg = np.zeros(width)
    q_touched = np.zeros(width)
    child_mark = np.full(width, -1, dtype=np.int64)
    parent_mark = np.full(width, -1, dtype=np.int64)
    children = np.empty(n_sa, dtype=np.int64)
    parents = np.empty(n_sa, dtype=np.int64)
    scale = max(height, 1)
    stamp = 0
    for c in range(m):
        out[c] = 0.0
        if size[c] <= 0:
            continue
        lo, hi = first[c], first[c + 1]
        cost = 0.0
        for j in range(1, height + 1):
            stamp += 1
            nc = 0
            for i in range(lo, hi):
                p = order[i]
                ch = node[j - 1, pair_sa[p]]
                if child_mark[ch] != stamp:
                    child_mark[ch] = stamp
                    net[ch] = -qnode[j - 1, ch]
                    children[nc] = ch
                    nc += 1
                net[ch] += pair_n[p] / max(size[c], 1)
            npar = 0
            for i in range(nc):
                ch = children[i]
                u = parent[j - 1, ch]
                if parent_mark[u] != stamp:
                    parent_mark[u] = stamp
                    pos[u] = 0.0
                    neg[u] = 0.0
                    q_touched[u] = 0.0
                    parents[npar] = u
                    npar += 1
                e = net[ch]
                if e > 0.0:
                    pos[u] += e
                else:
                    neg[u] -= e
                q_touched[u] += qnode[j - 1, ch]
            level = 0.0
            for i in range(npar):
                u = parents[i]
                untouched = max(qnode[j, u] - q_touched[u], 0.0)  # the children with none of the class's values
                level += min(pos[u], neg[u] + untouched)
            cost += j * level
        out[c] = cost / scale


@njit(cache=True)
def _likeness(size, pair_class, pair_sa, pair_n, q, beta, enhanced, out):
    """max over a class's present values of (p - q) / q - bound(q), bound = beta, or
    min(beta, -ln q) when enhanced; -inf for a class without values."""
    m = size.shape[0]
    for c in range(m):
        out[c] = -math.inf
    for p in range(pair_class.shape[0]):
        if pair_n[p] <= 0:
            continue
        c = pair_class[p]
        qv = q[pair_sa[p]]
        if qv > 0.0:
            gain = (pair_n[p] / max(size[c], 1) - qv) / qv
            bound = min(beta, -np.log(qv)) if enhanced else beta
            e = gain - bound
        else:
            e = math.inf
        if e > out[c]:
            out[c] = e


@njit(cache=True)
def class_values(kind, params, size, pair_class, pair_sa, pair_n, q):
    """The model's value of each class (``kind`` a code of kinds.py, ``params`` its row)."""
    out = np.empty(size.shape[0])
    if kind == _RECURSIVE:
        _recursive(size, pair_class, pair_n, int(params[0]), out)
    elif kind == _EQUAL:
        _equal(size, pair_class, pair_sa, pair_n, q, out)
    elif kind == _ORDERED:
        n_sa = q.shape[0]
        by_rank = np.empty(n_sa, dtype=np.int64)
        for r in range(n_sa):
            by_rank[r] = int(params[r])
        _ordered(size, pair_class, pair_sa, pair_n, q, by_rank, out)
    elif kind == _HIERARCHICAL:
        n_sa = q.shape[0]
        height = int(params[0])
        node = np.empty((height + 1, n_sa), dtype=np.int64)
        for j in range(height + 1):
            for v in range(n_sa):
                node[j, v] = int(params[1 + j * n_sa + v])
        _hierarchical(size, pair_class, pair_sa, pair_n, q, height, node, out)
    else:
        _likeness(size, pair_class, pair_sa, pair_n, q, params[0], params[1] > 0.5, out)
    return out


@njit(cache=True)
def largest_class_value(kind, params, size, pair_class, pair_sa, pair_n, q):
    """AD of a release: the largest ``class_values`` over classes that keep records; 0 when none
    (the empty release of t-closeness and recursive (c, l)), -inf for beta-likeness."""
    values = class_values(kind, params, size, pair_class, pair_sa, pair_n, q)
    worst = -math.inf if kind == _LIKENESS else 0.0
    for c in range(size.shape[0]):
        if size[c] > 0 and values[c] > worst:
            worst = values[c]
    return worst
