"""Any homogeneous release as a starting graph (§5.5): classes -> k-regular graph.

A ppdp generalization or microaggregation release partitions (most of) its source records into
classes of at least k; ``from_clusters`` turns such a partition into a k-regular graph, which the
local search then improves. A release rarely partitions *today's* records exactly, so the classes
are first made a partition of them:

* records the release does not place (suppressed by a generalization, withheld, or joined the
  source after it) and the members of classes smaller than k (a microaggregation group padded by
  forged records, a generalization under a smaller k) form the *leftover pool*;
* a pool of at least k records is clustered by k-member (the default starting heuristic) over
  the pool alone, so the release's own classes stay untouched;
* a pool of 1..k-1 records joins the class whose QID box (ranges and value sets) its records
  widen least, the cost of the greedy heuristics (initial.py's normalized NCP): the class
  still holds at least k, and the search can move them afterwards.

Members of the release that left the source are simply absent (a class may then fall below k and
join the pool). Pure: no database; engine/methods/heterogeneous/method.py reads the classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.initial import from_clusters, k_member_clusters
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.errors import DataError


@dataclass(frozen=True)
class Conversion:
    """The starting graph from a release's classes, and how the classes were made a partition."""

    graph: KRegularGraph
    classes_kept: int  # the release's classes of >= k present records, converted as they are
    pooled: int  # records in the leftover pool (unplaced records and members of small classes)
    pool_clusters: int  # k-member clusters over a pool of >= k (0 when the pool joined a class)


def _subset(table: QidTable, rows: np.ndarray) -> QidTable:
    return QidTable(table.numeric[rows], table.categorical[rows], table.n_categories)


def _widening(table: QidTable, group: np.ndarray, extra: np.ndarray) -> float:
    """Normalized NCP increase of ``group``'s QID box if it also held ``extra`` (summed over QIDs)."""
    cost = 0.0
    num = table.numeric
    if num.shape[1]:
        span = num.max(axis=0) - num.min(axis=0)
        lo, hi = num[group].min(axis=0), num[group].max(axis=0)
        lo2, hi2 = np.minimum(lo, num[extra].min(axis=0)), np.maximum(hi, num[extra].max(axis=0))
        scale = np.where(span > 0, span, 1.0)
        cost += float((((hi2 - lo2) - (hi - lo)) / scale).sum())
    for j, size in enumerate(table.n_categories):
        if size > 1:
            before = np.unique(table.categorical[group, j]).size
            after = np.unique(np.concatenate([table.categorical[group, j], table.categorical[extra, j]])).size
            cost += (after - before) / (size - 1)
    return cost


def graph_from_classes(table: QidTable, labels: list, k: int, *, seed: int = 0) -> Conversion:
    """The k-regular graph of a release's classes over ``table``'s rows.

    ``labels[i]`` is row i's class in the release (any hashable) or None when the release does
    not place it. Classes of at least ``k`` rows are converted by ``from_clusters``; the rest
    form the leftover pool (module docstring).
    """
    n = table.n
    if len(labels) != n:
        raise DataError(f"{len(labels)} class labels for {n} rows; hint: give one label (or None) per row")
    if n < k:
        raise DataError(f"{n} rows cannot form a class of k = {k}; hint: lower k or add rows")
    members: dict = {}
    for i, label in enumerate(labels):
        if label is not None:
            members.setdefault(label, []).append(i)
    groups = [np.array(m, dtype=np.int64) for m in members.values() if len(m) >= k]
    placed = np.zeros(n, dtype=bool)
    for g in groups:
        placed[g] = True
    pool = np.flatnonzero(~placed)
    pool_clusters = 0
    if pool.size >= k:
        clusters = k_member_clusters(_subset(table, pool), k, seed=seed)
        groups += [pool[c] for c in clusters]
        pool_clusters = len(clusters)
    elif pool.size:
        best = min(range(len(groups)), key=lambda g: (_widening(table, groups[g], pool), g))
        groups[best] = np.concatenate([groups[best], pool])
    kept = len(groups) - pool_clusters
    return Conversion(from_clusters(groups, k, n=n, seed=seed), kept, int(pool.size), pool_clusters)
