"""Initial k-regular graphs for the local search (§5.5 of the paper, docs/design/paper_notes.md §7).

Four starting points, each returning a validated ``KRegularGraph`` (self edge in slot 0):

``k_member``       Byun et al.'s greedy k-member clustering: the first seed is a random tuple,
                   every later seed is the tuple furthest from the previous seed; a cluster
                   grows by the tuple whose addition costs the least information loss, until it
                   has k tuples; the < k tuples left over each join the cluster whose total
                   loss |c| * NCP(c) grows least. Clusters of k..2k-1 tuples, converted below.
``l_greedy``       Liang and Samavi's l-greedy as this paper describes it ("sorts the dataset to
                   incrementally create clusters with the best k elements", O(n^2)): tuples are
                   sorted lexicographically on their normalized QIDs (numeric first, then
                   categorical codes); the first unclustered tuple in that order seeds a cluster
                   that grows, like k-member, by the cheapest tuple among the next ``window``
                   unclustered tuples in sort order (``window=None``: all of them, the O(n^2)
                   the paper quotes). Left-overs as in k-member.
``hungarian``      Doka et al.'s heuristic: k successive perfect matchings. The first is the
                   identity (the self edges); each later one is a minimum-cost assignment of
                   originals to anonymized tuples, the cost of (i, t) being the NCP increase of
                   q'_t if it also covered i given the edges already chosen, and existing edges
                   forbidden. Our own O(n^3) Hungarian algorithm (scipy is not installed): fine
                   up to a few thousand tuples, which is also the paper's remark on its runtime.
``from_clusters``  §5.5: a homogeneous clustering (groups of >= k tuples, e.g. any ppdp
                   generalization or microaggregation release) to a k-regular graph. A group of
                   exactly k is a clique. A group of m > k is, in the paper, the clique with
                   m - k perfect matchings that avoid the self edges removed. We remove the
                   circulant ones: on a (seeded) random order of the group, member p covers
                   members p, p+1, .., p+k-1 (mod m); the removed matchings are the shifts
                   k..m-1, each perfect and free of self edges, so the result is exactly what
                   the paper's procedure can produce, in O(m k) instead of augmenting paths.

Cost model of the greedy heuristics (all GCP-driven, as the paper's baselines are): numeric QIDs
min-max normalized to [0, 1] (a constant column contributes 0) and a categorical value counts
1 / (|domain| - 1) the first time it enters a set, i.e. eq. 1-2's NCP of the cluster.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.errors import DataError

guard(__file__)

_HINT = "hint: pass groups that partition the row indices 0..n-1, each of at least k rows"


# --- shared preprocessing ------------------------------------------------------------------------

def _encode(table: QidTable):
    """Normalized numeric values, category codes, flat offsets and per-QID category weights."""
    num = np.asarray(table.numeric, dtype=np.float64)
    if num.shape[1] and num.shape[0]:
        lo = num.min(axis=0)
        span = num.max(axis=0) - lo
        z = np.where(span > 0, (num - lo) / np.where(span > 0, span, 1.0), 0.0)
    else:
        z = np.zeros_like(num)
    sizes = np.asarray(table.n_categories, dtype=np.int64)
    cat_off = np.zeros(sizes.size + 1, dtype=np.int64)
    cat_off[1:] = np.cumsum(sizes)
    weight = np.where(sizes > 1, 1.0 / np.maximum(sizes - 1, 1), 0.0).astype(np.float64)
    return (np.ascontiguousarray(z), np.ascontiguousarray(table.categorical, dtype=np.int64),
            cat_off, weight)


def _check_k(table: QidTable, k: int) -> None:
    if not (1 <= k <= table.n):
        raise DataError(
            f"k={k} must be between 1 and the number of tuples n={table.n}; hint: lower k or "
            f"anonymize more rows"
        )


# --- Numba kernels -------------------------------------------------------------------------------

@njit(cache=True)
def _add_cost(x, z, cat, cat_off, weight, lo, hi, present):
    """NCP increase (eq. 1-2 units) of a cluster with ranges lo/hi and category counts present."""
    cost = 0.0
    for j in range(z.shape[1]):
        v = z[x, j]
        if v < lo[j]:
            cost += lo[j] - v
        elif v > hi[j]:
            cost += v - hi[j]
    for j in range(cat.shape[1]):
        if present[cat_off[j] + cat[x, j]] == 0:
            cost += weight[j]
    return cost


@njit(cache=True)
def _add_member(x, z, cat, cat_off, lo, hi, present):
    for j in range(z.shape[1]):
        v = z[x, j]
        if v < lo[j]:
            lo[j] = v
        if v > hi[j]:
            hi[j] = v
    for j in range(cat.shape[1]):
        present[cat_off[j] + cat[x, j]] += 1


@njit(cache=True)
def _pair_distance(a, b, z, cat, weight):
    d = 0.0
    for j in range(z.shape[1]):
        d += abs(z[a, j] - z[b, j])
    for j in range(cat.shape[1]):
        if cat[a, j] != cat[b, j]:
            d += weight[j]
    return d


@njit(cache=True)
def _cluster_ncp(members, count, extra, z, cat, cat_off, weight, scratch):
    """NCP of the cluster members[:count] (plus ``extra`` when >= 0); scratch is all zeros."""
    ncp = 0.0
    for j in range(z.shape[1]):
        lo = np.inf
        hi = -np.inf
        for p in range(count + (1 if extra >= 0 else 0)):
            x = members[p] if p < count else extra
            v = z[x, j]
            lo = min(lo, v)
            hi = max(hi, v)
        ncp += hi - lo
    for j in range(cat.shape[1]):
        distinct = 0
        for p in range(count + (1 if extra >= 0 else 0)):
            x = members[p] if p < count else extra
            f = cat_off[j] + cat[x, j]
            if scratch[f] == 0:
                distinct += 1
            scratch[f] += 1
        for p in range(count + (1 if extra >= 0 else 0)):
            x = members[p] if p < count else extra
            scratch[cat_off[j] + cat[x, j]] = 0
        ncp += (distinct - 1) * weight[j]
    return ncp


@njit(cache=True)
def _greedy_clusters(z, cat, cat_off, weight, k, order, furthest_seed, window, first):
    """Cluster labels (n,) of k-member (furthest_seed) or l-greedy (seed = first in ``order``).

    ``order`` is the scan order of the pool (kept in that order); ``window`` bounds how many
    unclustered tuples, from the start of the pool, a cluster may choose from (<= 0: all).
    """
    n = z.shape[0]
    qn = z.shape[1]
    labels = np.full(n, -1, dtype=np.int64)
    pool = order.copy()
    m = n
    taken = np.zeros(n, dtype=np.bool_)
    lo = np.empty(qn)
    hi = np.empty(qn)
    present = np.zeros(cat_off[-1], dtype=np.int64)
    members = np.empty(k, dtype=np.int64)
    n_clusters = 0
    last = first
    while m >= k:
        if furthest_seed:
            best = -1.0
            seed = pool[0]
            for p in range(m):
                x = pool[p]
                d = _pair_distance(last, x, z, cat, weight)
                if d > best:
                    best = d
                    seed = x
        else:
            seed = pool[0]
        lo[:] = np.inf
        hi[:] = -np.inf
        _add_member(seed, z, cat, cat_off, lo, hi, present)
        taken[seed] = True
        members[0] = seed
        labels[seed] = n_clusters
        for size in range(1, k):
            best_cost = np.inf
            pick = -1
            seen = 0
            for p in range(m):
                x = pool[p]
                if taken[x]:
                    continue
                c = _add_cost(x, z, cat, cat_off, weight, lo, hi, present)
                if c < best_cost:
                    best_cost = c
                    pick = x
                seen += 1
                if window > 0 and seen >= window:
                    break
            _add_member(pick, z, cat, cat_off, lo, hi, present)
            taken[pick] = True
            members[size] = pick
            labels[pick] = n_clusters
        for s in range(k):  # reset the category counts touched by this cluster
            for j in range(cat.shape[1]):
                present[cat_off[j] + cat[members[s], j]] = 0
        last = members[k - 1]
        kept = 0
        for p in range(m):  # compact the pool, keeping its order
            if not taken[pool[p]]:
                pool[kept] = pool[p]
                kept += 1
        m = kept
        n_clusters += 1
    # Left-overs (< k tuples): each joins the cluster whose |c| * NCP(c) grows least.
    if m > 0:
        sizes = np.zeros(n_clusters, dtype=np.int64)
        for x in range(n):
            if labels[x] >= 0:
                sizes[labels[x]] += 1
        # Lay the clusters out with room for every left-over (at most m more per cluster).
        fill = np.zeros(n_clusters, dtype=np.int64)
        offs = np.zeros(n_clusters + 1, dtype=np.int64)
        for c in range(n_clusters):
            offs[c + 1] = offs[c] + sizes[c] + m
        flat = np.empty(offs[-1], dtype=np.int64)
        for c in range(n_clusters):
            fill[c] = offs[c]
        for x in range(n):
            c = labels[x]
            if c >= 0:
                flat[fill[c]] = x
                fill[c] += 1
        scratch = np.zeros(cat_off[-1], dtype=np.int64)
        for p in range(m):
            x = pool[p]
            best_cost = np.inf
            pick = 0
            for c in range(n_clusters):
                cnt = fill[c] - offs[c]
                seg = flat[offs[c]:fill[c]]
                before = _cluster_ncp(seg, cnt, -1, z, cat, cat_off, weight, scratch)
                after = _cluster_ncp(seg, cnt, x, z, cat, cat_off, weight, scratch)
                cost = (cnt + 1) * after - cnt * before
                if cost < best_cost:
                    best_cost = cost
                    pick = c
            flat[fill[pick]] = x
            fill[pick] += 1
            labels[x] = pick
    return labels


@njit(cache=True)
def _hungarian(a):
    """Minimum-cost perfect assignment of the square matrix ``a``: col_of_row (n,)."""
    n = a.shape[0]
    inf = np.inf
    u = np.zeros(n + 1)
    v = np.zeros(n + 1)
    p = np.zeros(n + 1, dtype=np.int64)
    way = np.zeros(n + 1, dtype=np.int64)
    minv = np.empty(n + 1)
    used = np.zeros(n + 1, dtype=np.bool_)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv[:] = inf
        used[:] = False
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = inf
            j1 = 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = a[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    col_of_row = np.empty(n, dtype=np.int64)
    for j in range(1, n + 1):
        col_of_row[p[j] - 1] = j - 1
    return col_of_row


@njit(cache=True)
def _matching_costs(cover, filled, z, cat, cat_off, weight, forbidden):
    """cost[t, i]: NCP increase of q'_t (slots < filled) if it also covered i; edges forbidden."""
    n = cover.shape[0]
    qn = z.shape[1]
    cost = np.empty((n, n))
    lo = np.empty(qn)
    hi = np.empty(qn)
    present = np.zeros(cat_off[-1], dtype=np.int64)
    for t in range(n):
        lo[:] = np.inf
        hi[:] = -np.inf
        for s in range(filled):
            _add_member(cover[t, s], z, cat, cat_off, lo, hi, present)
        for i in range(n):
            cost[t, i] = _add_cost(i, z, cat, cat_off, weight, lo, hi, present)
        for s in range(filled):
            cost[t, cover[t, s]] = forbidden
            for j in range(cat.shape[1]):
                present[cat_off[j] + cat[cover[t, s], j]] = 0
    return cost


# --- public functions ----------------------------------------------------------------------------

def from_clusters(groups, k: int, *, n: int | None = None, seed: int = 0) -> KRegularGraph:
    """§5.5: a homogeneous clustering (groups of >= k row indices) as a k-regular graph.

    ``groups`` must partition 0..n-1 (n defaults to the number of rows they hold). Each group of
    m rows becomes, on a seeded random order of its members, the circulant "member p covers
    members p..p+k-1 (mod m)": the clique minus m - k perfect matchings without self edges.
    """
    groups = [np.asarray(g, dtype=np.int64).reshape(-1) for g in groups]
    total = sum(g.size for g in groups)
    n = total if n is None else int(n)
    if not groups or total != n:
        raise DataError(f"the groups hold {total} rows, not the n={n} tuples to cover; {_HINT}")
    if k < 1:
        raise DataError(f"k={k} must be at least 1; {_HINT}")
    small = [g.size for g in groups if g.size < k]
    if small:
        raise DataError(f"a group has {small[0]} rows, fewer than k={k}; {_HINT}")
    flat = np.concatenate(groups)
    if flat.min() < 0 or flat.max() >= n or np.unique(flat).size != n:
        raise DataError(f"the groups repeat a row or name one outside 0..{n - 1}; {_HINT}")
    rng = np.random.default_rng(seed)
    cover = np.empty((n, k), dtype=np.int64)
    shifts = np.arange(k, dtype=np.int64)
    for g in groups:
        order = g[rng.permutation(g.size)] if g.size > k else g
        pos = (np.arange(g.size, dtype=np.int64)[:, None] + shifts[None, :]) % g.size
        cover[order] = order[pos]
    return KRegularGraph(cover)


def _groups_from_labels(labels: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, cuts)


def k_member_clusters(table: QidTable, k: int, *, seed: int = 0) -> list[np.ndarray]:
    """Byun et al.'s greedy k-member clusters (k..2k-1 rows each) as arrays of row indices."""
    _check_k(table, k)
    z, cat, cat_off, weight = _encode(table)
    first = int(np.random.default_rng(seed).integers(table.n))
    order = np.arange(table.n, dtype=np.int64)
    labels = _greedy_clusters(z, cat, cat_off, weight, k, order, True, 0, first)
    return _groups_from_labels(labels)


def l_greedy_clusters(table: QidTable, k: int, *, window: int | None = None) -> list[np.ndarray]:
    """l-greedy clusters (k..2k-1 rows each): sorted order, best k among the next ``window``."""
    _check_k(table, k)
    if window is not None and window < k:
        raise DataError(f"window={window} must be at least k={k}; hint: use None for all rows")
    z, cat, cat_off, weight = _encode(table)
    keys = [cat[:, j] for j in reversed(range(cat.shape[1]))]
    keys += [z[:, j] for j in reversed(range(z.shape[1]))]
    order = np.lexsort(keys).astype(np.int64) if keys else np.arange(table.n, dtype=np.int64)
    labels = _greedy_clusters(z, cat, cat_off, weight, k, order, False, window or 0,
                              int(order[0]))
    return _groups_from_labels(labels)


def k_member(table: QidTable, k: int, *, seed: int = 0) -> KRegularGraph:
    """k-member clustering converted to a k-regular graph (``from_clusters``)."""
    return from_clusters(k_member_clusters(table, k, seed=seed), k, n=table.n, seed=seed)


def l_greedy(table: QidTable, k: int, *, window: int | None = None,
             seed: int = 0) -> KRegularGraph:
    """l-greedy clustering converted to a k-regular graph (``from_clusters``)."""
    return from_clusters(l_greedy_clusters(table, k, window=window), k, n=table.n, seed=seed)


def hungarian(table: QidTable, k: int) -> KRegularGraph:
    """Doka et al.'s k successive perfect matchings (identity first); O(k n^3) time, O(n^2) memory."""
    _check_k(table, k)
    z, cat, cat_off, weight = _encode(table)
    n = table.n
    cover = np.empty((n, k), dtype=np.int64)
    cover[:, 0] = np.arange(n)
    # Larger than any assignment that avoids existing edges (each edge costs at most d), so the
    # optimum never uses one: the complement of an r-regular bipartite graph (r < n) is
    # (n - r)-regular and therefore has a perfect matching.
    forbidden = float(4 * (table.d + 1) * n)
    for s in range(1, k):
        cost = _matching_costs(cover, s, z, cat, cat_off, weight, forbidden)
        cover[:, s] = _hungarian(cost)
    return KRegularGraph(cover)
