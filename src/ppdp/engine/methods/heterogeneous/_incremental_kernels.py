"""Numba kernels of the incremental structures of §5 (plain-Python twin: ``_incremental_py.py``).

Arrays in, arrays out; no Python objects. Every function here has a twin of the same name and
signature in ``_incremental_py.py``; tests/methods/heterogeneous/test_core.py checks that both agree.

Read-only inputs (see engine/methods/heterogeneous/metrics.py for the metrics):
  num[i, j]          value of numeric QID j of original i                     (n, qn) float64
  cat[i, j]          code of categorical QID j of original i                  (n, qc) int64
  cat_off[j]         offset of QID j's categories in the flat count arrays   (qc + 1,) int64
  num_range[j]       max^j - min^j (0: the QID costs nothing)                 (qn,) float64
  cat_domain[j]      |domain_j|                                               (qc,) float64
  num_sigma[j], cat_sigma[j]  SIL scales (never 0)
Mutable structures, per anonymized tuple t:
  cover[t, s]        s-th original covered by q'_t, slot 0 = t (self edge)    (n, k) int64
  mn, mn2, mx, mx2   min, second min, max, second max of QID j over the k covered originals
                     (multiset order: mn2 == mn when the minimum occurs twice; +-inf if k == 1)
  num_sum[t, j]      sum of QID j over the covered originals (Upsilon of §5.3, for SIL means)
  cat_count[t, cat_off[j] + v]  support count of category v of QID j (eq. 8)
  cat_hist[t, j, c]  number of categories of QID j with support count c, c = 0..k
  cat_max[t, j]      largest support count (the mode's count)
  cat_distinct[t, j] number of categories with support > 0 (the set size of eq. 2)
  t_ncp[t], t_sil[t] NCP(q'_t) (eq. 3) and dist_num + dist_cat of q'_t (eq. 5-6)
  totals[0], totals[1]  sum of t_ncp and of t_sil

A move (t1, s1, t2, s2) exchanges cover[t1, s1] and cover[t2, s2]: q'_t1 loses original a and
gains c, q'_t2 loses c and gains a. Its delta needs only the two rows' structures: O(d), not
O(n) (and not O(k): the second min/max and the count histogram avoid rescanning the row); the
validity check scans the two rows, O(k).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)

OBJECTIVE_GCP = 0
OBJECTIVE_SIL = 1


@njit(cache=True)
def swap_is_valid(cover, t1, s1, t2, s2):
    """True when exchanging cover[t1, s1] and cover[t2, s2] keeps the graph k-regular."""
    n, k = cover.shape
    if t1 == t2 or t1 < 0 or t2 < 0 or t1 >= n or t2 >= n:
        return False
    if s1 < 1 or s2 < 1 or s1 >= k or s2 >= k:  # slot 0 is the self edge: never moved
        return False
    a = cover[t1, s1]
    c = cover[t2, s2]
    for s in range(k):
        if cover[t1, s] == c or cover[t2, s] == a:  # would duplicate an edge (or a == c)
            return False
    return True


@njit(cache=True)
def _recompute_numeric(t, cover, num, mn, mn2, mx, mx2, num_sum):
    k = cover.shape[1]
    for j in range(num.shape[1]):
        lo = np.inf
        lo2 = np.inf
        hi = -np.inf
        hi2 = -np.inf
        total = 0.0
        for s in range(k):
            v = num[cover[t, s], j]
            total += v
            if v < lo:
                lo2 = lo
                lo = v
            elif v < lo2:
                lo2 = v
            if v > hi:
                hi2 = hi
                hi = v
            elif v > hi2:
                hi2 = v
        mn[t, j] = lo
        mn2[t, j] = lo2
        mx[t, j] = hi
        mx2[t, j] = hi2
        num_sum[t, j] = total


@njit(cache=True)
def _ncp_of(t, num_range, cat_domain, mn, mx, cat_distinct):
    total = 0.0
    for j in range(mn.shape[1]):
        if num_range[j] > 0:
            total += (mx[t, j] - mn[t, j]) / num_range[j]
    for j in range(cat_distinct.shape[1]):
        if cat_domain[j] > 1:
            total += (cat_distinct[t, j] - 1) / (cat_domain[j] - 1)
    return total


@njit(cache=True)
def _sil_of(t, k, num, cat, cat_off, num_sigma, cat_sigma, num_sum, cat_count, cat_max):
    sq = 0.0
    for j in range(num.shape[1]):
        z = (num[t, j] - num_sum[t, j] / k) / num_sigma[j]
        sq += z * z
    dist = np.sqrt(sq)
    for j in range(cat.shape[1]):
        if cat_count[t, cat_off[j] + cat[t, j]] < cat_max[t, j]:
            dist += 1.0 / cat_sigma[j]
    return dist


@njit(cache=True)
def build(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
          mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
          t_ncp, t_sil, totals):
    """Fill every structure from ``cover`` (O(n k d)); the other arrays are outputs."""
    n, k = cover.shape
    qc = cat.shape[1]
    cat_count[:, :] = 0
    cat_hist[:, :, :] = 0
    totals[:] = 0.0
    for t in range(n):
        _recompute_numeric(t, cover, num, mn, mn2, mx, mx2, num_sum)
        for s in range(k):
            i = cover[t, s]
            for j in range(qc):
                cat_count[t, cat_off[j] + cat[i, j]] += 1
        for j in range(qc):
            best = 0
            distinct = 0
            for v in range(cat_off[j], cat_off[j + 1]):
                c = cat_count[t, v]
                cat_hist[t, j, c] += 1
                if c > best:
                    best = c
                if c > 0:
                    distinct += 1
            cat_max[t, j] = best
            cat_distinct[t, j] = distinct
        t_ncp[t] = _ncp_of(t, num_range, cat_domain, mn, mx, cat_distinct)
        t_sil[t] = _sil_of(t, k, num, cat, cat_off, num_sigma, cat_sigma, num_sum,
                           cat_count, cat_max)
        totals[0] += t_ncp[t]
        totals[1] += t_sil[t]


@njit(cache=True)
def _ncp_after(t, out_i, in_i, num, cat, cat_off, num_range, cat_domain,
               mn, mn2, mx, mx2, cat_count, cat_distinct):
    """NCP(q'_t) if original out_i were replaced by in_i among its covered originals."""
    total = 0.0
    for j in range(num.shape[1]):
        if num_range[j] <= 0:
            continue
        x = num[out_i, j]
        y = num[in_i, j]
        lo = mn2[t, j] if x == mn[t, j] else mn[t, j]  # x leaves: the second min takes over
        hi = mx2[t, j] if x == mx[t, j] else mx[t, j]
        if y < lo:
            lo = y
        if y > hi:
            hi = y
        total += (hi - lo) / num_range[j]
    for j in range(cat.shape[1]):
        if cat_domain[j] <= 1:
            continue
        distinct = cat_distinct[t, j]
        cx = cat[out_i, j]
        cy = cat[in_i, j]
        if cx != cy:
            if cat_count[t, cat_off[j] + cx] == 1:
                distinct -= 1
            if cat_count[t, cat_off[j] + cy] == 0:
                distinct += 1
        total += (distinct - 1) / (cat_domain[j] - 1)
    return total


@njit(cache=True)
def _sil_after(t, out_i, in_i, k, num, cat, cat_off, num_sigma, cat_sigma,
               num_sum, cat_count, cat_hist, cat_max):
    """dist_num + dist_cat of q'_t if original out_i were replaced by in_i."""
    sq = 0.0
    for j in range(num.shape[1]):
        mean = (num_sum[t, j] - num[out_i, j] + num[in_i, j]) / k
        z = (num[t, j] - mean) / num_sigma[j]
        sq += z * z
    dist = np.sqrt(sq)
    for j in range(cat.shape[1]):
        off = cat_off[j]
        cx = cat[out_i, j]
        cy = cat[in_i, j]
        own = cat[t, j]
        top = cat_max[t, j]
        own_count = cat_count[t, off + own]
        if cx != cy:
            cnt_x = cat_count[t, off + cx]
            if cnt_x == top and cat_hist[t, j, top] == 1:  # cx was the only mode
                top -= 1
            cnt_y = cat_count[t, off + cy] + 1
            if cnt_y > top:
                top = cnt_y
            if cx == own:
                own_count -= 1
            elif cy == own:
                own_count += 1
        if own_count < top:
            dist += 1.0 / cat_sigma[j]
    return dist


@njit(cache=True)
def swap_delta(objective, cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
               mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
               t_ncp, t_sil, totals, t1, s1, t2, s2):
    """Change of sum_t NCP (objective 0) or sum_t SIL distance (1) if the move were applied.

    The move must be valid (swap_is_valid); negative = improvement.
    """
    a = cover[t1, s1]
    c = cover[t2, s2]
    if objective == OBJECTIVE_GCP:
        return (_ncp_after(t1, a, c, num, cat, cat_off, num_range, cat_domain,
                           mn, mn2, mx, mx2, cat_count, cat_distinct)
                + _ncp_after(t2, c, a, num, cat, cat_off, num_range, cat_domain,
                             mn, mn2, mx, mx2, cat_count, cat_distinct)
                - t_ncp[t1] - t_ncp[t2])
    k = cover.shape[1]
    return (_sil_after(t1, a, c, k, num, cat, cat_off, num_sigma, cat_sigma,
                       num_sum, cat_count, cat_hist, cat_max)
            + _sil_after(t2, c, a, k, num, cat, cat_off, num_sigma, cat_sigma,
                         num_sum, cat_count, cat_hist, cat_max)
            - t_sil[t1] - t_sil[t2])


@njit(cache=True)
def _move_category(t, j, off, v_out, v_in, cat_count, cat_hist, cat_max, cat_distinct):
    if v_out == v_in:
        return
    c = cat_count[t, off + v_out]
    cat_hist[t, j, c] -= 1
    cat_hist[t, j, c - 1] += 1
    cat_count[t, off + v_out] = c - 1
    if c == cat_max[t, j] and cat_hist[t, j, c] == 0:
        cat_max[t, j] = c - 1
    if c == 1:
        cat_distinct[t, j] -= 1
    c = cat_count[t, off + v_in]
    cat_hist[t, j, c] -= 1
    cat_hist[t, j, c + 1] += 1
    cat_count[t, off + v_in] = c + 1
    if c + 1 > cat_max[t, j]:
        cat_max[t, j] = c + 1
    if c == 0:
        cat_distinct[t, j] += 1


@njit(cache=True)
def apply_swap(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
               mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
               t_ncp, t_sil, totals, t1, s1, t2, s2):
    """Apply a valid move and update the structures of the two rows it touches (O(k d)).

    The numeric min/max pairs and sums are rescanned from the k covered originals (a removed
    minimum needs the third smallest, which is not kept; rescanning also stops the sums from
    drifting); category counts are updated in O(1).
    """
    k = cover.shape[1]
    a = cover[t1, s1]
    c = cover[t2, s2]
    cover[t1, s1] = c
    cover[t2, s2] = a
    for side in range(2):
        t = t1 if side == 0 else t2
        out_i = a if side == 0 else c
        in_i = c if side == 0 else a
        for j in range(cat.shape[1]):
            _move_category(t, j, cat_off[j], cat[out_i, j], cat[in_i, j],
                           cat_count, cat_hist, cat_max, cat_distinct)
        _recompute_numeric(t, cover, num, mn, mn2, mx, mx2, num_sum)
        new_ncp = _ncp_of(t, num_range, cat_domain, mn, mx, cat_distinct)
        new_sil = _sil_of(t, k, num, cat, cat_off, num_sigma, cat_sigma, num_sum,
                          cat_count, cat_max)
        totals[0] += new_ncp - t_ncp[t]
        totals[1] += new_sil - t_sil[t]
        t_ncp[t] = new_ncp
        t_sil[t] = new_sil
