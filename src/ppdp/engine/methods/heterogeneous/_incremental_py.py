"""Plain-Python twin of ``_incremental_kernels.py``: same names, signatures and structures.

Written for reading, not speed: each function states the rule of §5 directly (sorted covered
values, explicit support counts) so the Numba kernels can be checked against it. Used by the
tests and by ``IncrementalState(..., backend="python")`` where Numba is unwanted.
"""

from __future__ import annotations

import math

OBJECTIVE_GCP = 0
OBJECTIVE_SIL = 1


def swap_is_valid(cover, t1, s1, t2, s2):
    """True when exchanging cover[t1, s1] and cover[t2, s2] keeps the graph k-regular."""
    n, k = cover.shape
    if t1 == t2 or not (0 <= t1 < n and 0 <= t2 < n):
        return False
    if not (1 <= s1 < k and 1 <= s2 < k):
        return False
    row1 = set(cover[t1].tolist())
    row2 = set(cover[t2].tolist())
    return int(cover[t2, s2]) not in row1 and int(cover[t1, s1]) not in row2


def _recompute_numeric(t, cover, num, mn, mn2, mx, mx2, num_sum):
    rows = cover[t].tolist()
    for j in range(num.shape[1]):
        values = sorted(float(num[i, j]) for i in rows)
        mn[t, j] = values[0]
        mn2[t, j] = values[1] if len(values) > 1 else math.inf
        mx[t, j] = values[-1]
        mx2[t, j] = values[-2] if len(values) > 1 else -math.inf
        num_sum[t, j] = math.fsum(values)


def _ncp_of(t, num_range, cat_domain, mn, mx, cat_distinct):
    total = 0.0
    for j in range(mn.shape[1]):
        if num_range[j] > 0:
            total += (mx[t, j] - mn[t, j]) / num_range[j]
    for j in range(cat_distinct.shape[1]):
        if cat_domain[j] > 1:
            total += (cat_distinct[t, j] - 1) / (cat_domain[j] - 1)
    return float(total)


def _sil_of(t, k, num, cat, cat_off, num_sigma, cat_sigma, num_sum, cat_count, cat_max):
    sq = sum(((num[t, j] - num_sum[t, j] / k) / num_sigma[j]) ** 2 for j in range(num.shape[1]))
    dist = math.sqrt(sq)
    for j in range(cat.shape[1]):
        own_count = cat_count[t, cat_off[j] + cat[t, j]]
        if own_count < cat_max[t, j]:  # own value not among the modes
            dist += 1.0 / cat_sigma[j]
    return float(dist)


def build(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
          mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
          t_ncp, t_sil, totals):
    """Fill every structure from ``cover`` (O(n k d)); the other arrays are outputs."""
    n, k = cover.shape
    cat_count[:, :] = 0
    cat_hist[:, :, :] = 0
    totals[:] = 0.0
    for t in range(n):
        _recompute_numeric(t, cover, num, mn, mn2, mx, mx2, num_sum)
        for i in cover[t].tolist():
            for j in range(cat.shape[1]):
                cat_count[t, cat_off[j] + cat[i, j]] += 1
        for j in range(cat.shape[1]):
            counts = cat_count[t, cat_off[j]:cat_off[j + 1]].tolist()
            for c in counts:
                cat_hist[t, j, c] += 1
            cat_max[t, j] = max(counts)
            cat_distinct[t, j] = sum(1 for c in counts if c > 0)
        t_ncp[t] = _ncp_of(t, num_range, cat_domain, mn, mx, cat_distinct)
        t_sil[t] = _sil_of(t, k, num, cat, cat_off, num_sigma, cat_sigma, num_sum,
                           cat_count, cat_max)
        totals[0] += t_ncp[t]
        totals[1] += t_sil[t]


def _ncp_after(t, out_i, in_i, num, cat, cat_off, num_range, cat_domain,
               mn, mn2, mx, mx2, cat_count, cat_distinct):
    total = 0.0
    for j in range(num.shape[1]):
        if num_range[j] <= 0:
            continue
        x, y = num[out_i, j], num[in_i, j]
        # Without x the extremes are the second ones if x was an extreme; then y joins.
        lo = min(mn2[t, j] if x == mn[t, j] else mn[t, j], y)
        hi = max(mx2[t, j] if x == mx[t, j] else mx[t, j], y)
        total += (hi - lo) / num_range[j]
    for j in range(cat.shape[1]):
        if cat_domain[j] <= 1:
            continue
        off = cat_off[j]
        cx, cy = cat[out_i, j], cat[in_i, j]
        distinct = cat_distinct[t, j]
        if cx != cy:
            distinct += int(cat_count[t, off + cy] == 0) - int(cat_count[t, off + cx] == 1)
        total += (distinct - 1) / (cat_domain[j] - 1)
    return float(total)


def _sil_after(t, out_i, in_i, k, num, cat, cat_off, num_sigma, cat_sigma,
               num_sum, cat_count, cat_hist, cat_max):
    sq = 0.0
    for j in range(num.shape[1]):
        mean = (num_sum[t, j] - num[out_i, j] + num[in_i, j]) / k
        sq += ((num[t, j] - mean) / num_sigma[j]) ** 2
    dist = math.sqrt(sq)
    for j in range(cat.shape[1]):
        off = cat_off[j]
        cx, cy, own = cat[out_i, j], cat[in_i, j], cat[t, j]
        top = cat_max[t, j]
        own_count = cat_count[t, off + own]
        if cx != cy:
            sole_mode = cat_count[t, off + cx] == top and cat_hist[t, j, top] == 1
            top = max(top - 1 if sole_mode else top, cat_count[t, off + cy] + 1)
            own_count += int(cy == own) - int(cx == own)
        if own_count < top:
            dist += 1.0 / cat_sigma[j]
    return float(dist)


def swap_delta(objective, cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
               mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
               t_ncp, t_sil, totals, t1, s1, t2, s2):
    """Change of sum_t NCP (objective 0) or sum_t SIL distance (1) if the move were applied."""
    a, c = cover[t1, s1], cover[t2, s2]
    if objective == OBJECTIVE_GCP:
        after = (_ncp_after(t1, a, c, num, cat, cat_off, num_range, cat_domain,
                            mn, mn2, mx, mx2, cat_count, cat_distinct)
                 + _ncp_after(t2, c, a, num, cat, cat_off, num_range, cat_domain,
                              mn, mn2, mx, mx2, cat_count, cat_distinct))
        return after - t_ncp[t1] - t_ncp[t2]
    k = cover.shape[1]
    after = (_sil_after(t1, a, c, k, num, cat, cat_off, num_sigma, cat_sigma,
                        num_sum, cat_count, cat_hist, cat_max)
             + _sil_after(t2, c, a, k, num, cat, cat_off, num_sigma, cat_sigma,
                          num_sum, cat_count, cat_hist, cat_max))
    return after - t_sil[t1] - t_sil[t2]


def _move_category(t, j, off, v_out, v_in, cat_count, cat_hist, cat_max, cat_distinct):
    if v_out == v_in:
        return
    for v, step in ((v_out, -1), (v_in, +1)):
        c = cat_count[t, off + v]
        cat_hist[t, j, c] -= 1
        cat_hist[t, j, c + step] += 1
        cat_count[t, off + v] = c + step
        if c == 0 or c + step == 0:
            cat_distinct[t, j] += step
    top = cat_hist.shape[2] - 1
    while cat_hist[t, j, top] == 0:
        top -= 1
    cat_max[t, j] = top


def apply_swap(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
               mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
               t_ncp, t_sil, totals, t1, s1, t2, s2):
    """Apply a valid move and update the structures of the two rows it touches."""
    k = cover.shape[1]
    a, c = int(cover[t1, s1]), int(cover[t2, s2])
    cover[t1, s1], cover[t2, s2] = c, a
    for t, out_i, in_i in ((t1, a, c), (t2, c, a)):
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
