"""Per-class values of the sensitive-distribution models over ``ClassStats`` (the Numba kernels
of engine/kernels/distributions.py), each with its plain-Python twin over one class's
counts, which the tests compare with it.

- EMD of Li et al. 2007 ("t-Closeness: Privacy Beyond k-Anonymity and l-Diversity", §4.2) with
  equal, ordered and hierarchical ground distance, as ARX 3.9.2 computes it
  (criteria/EqualDistanceTCloseness, OrderedDistanceTCloseness, HierarchicalDistanceTCloseness);
- recursive (c, l)-diversity's ratio r_1 / (r_l + ... + r_m) (Machanavajjhala et al. 2007,
  Def. 4.1; ARX's RecursiveCLDiversity);
- beta-likeness's largest excess of a value's relative gain over its bound (Cao and Karras 2012,
  Def. 2 and the enhanced bound min(beta, -ln q) of §3; ARX's Basic/EnhancedBLikeness).

The ordered and hierarchical kernels are dense over the sensitive values of one class at a time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.engine.kernels import distributions as DK
from ppdp.engine.kernels import kinds
from ppdp.engine.privacy.base import ClassStats

# --- ground-distance data, bound to a table's sensitive codes -----------------------------------


@dataclass(frozen=True, eq=False)
class Order:
    """Ordered ground distance: ``rank[code]`` is the position of sensitive code ``code`` among
    the m values (0..m-1); |rank_i - rank_j| / (m - 1) is the distance of Li et al. §4.2."""

    rank: np.ndarray

    @property
    def m(self) -> int:
        return len(self.rank)


@dataclass(frozen=True, eq=False)
class Tree:
    """Hierarchical ground distance: ``node[j][code]`` is the id of sensitive code ``code``'s
    ancestor at level j (level 0: the leaf itself, level ``height``: the root); each node has one
    parent (ppdp's hierarchies are trees). The distance of two leaves is level(LCA) / height."""

    node: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.node) - 1


def sort_key(values: Sequence[tuple]) -> list[int]:
    """Codes in ordered-distance order: by each sensitive column in turn, by value when every
    non-NULL value of the column reads as a number, else by text in code-point order (which is
    Java's String order, ARX's default string type, for text in the Basic Multilingual Plane);
    NULL last."""
    numeric = []
    for j in range(len(values[0]) if values else 0):
        col = [v[j] for v in values if v[j] is not None]
        try:
            [float(x) for x in col]
            numeric.append(True)
        except (TypeError, ValueError):
            numeric.append(False)

    def key(code: int) -> tuple:
        parts = []
        for j, x in enumerate(values[code]):
            if x is None:
                parts.append((1, 0.0, ""))
            elif numeric[j]:
                parts.append((0, float(x), ""))
            else:
                parts.append((0, 0.0, str(x)))
        return tuple(parts)

    return sorted(range(len(values)), key=key)


def order_of(values: Sequence[tuple]) -> Order:
    """The ``Order`` of a table's sensitive values (``sort_key``)."""
    rank = np.empty(len(values), dtype=np.int64)
    rank[np.array(sort_key(values), dtype=np.int64)] = np.arange(len(values))
    return Order(rank)


def tree_of(level_ids: Sequence[Sequence[int]]) -> Tree:
    """A ``Tree`` from each code's ancestor ids per level (``level_ids[j][code]``)."""
    return Tree(tuple(np.asarray(ids, dtype=np.int64) for ids in level_ids))


# --- kernels: one value per class ---------------------------------------------------------------
# The Numba kernels of engine/kernels/distributions.py, the ones the fused evaluator
# runs (written once: the per-solution and the fused paths give the same bits); each model's
# parameters as the kernels read them (``PrivacyModel.kernel_params``).


def ordered_params(order: Order) -> np.ndarray:
    """ORDERED_EMD's kernel row: the code at each rank."""
    return np.argsort(order.rank, kind="stable").astype(np.float64)


def hierarchical_params(tree: Tree) -> np.ndarray:
    """HIERARCHICAL_EMD's kernel row: the height, then each level's node of every code, the
    node ids made dense per level (0 .. nodes - 1; the distance reads only which codes share one)."""
    dense = [np.unique(ids, return_inverse=True)[1].reshape(-1) for ids in tree.node]
    return np.concatenate([[float(tree.height)], *[d.astype(np.float64) for d in dense]])


def _values(kind: int, params: np.ndarray, stats: ClassStats) -> np.ndarray:
    return DK.class_values(kind, np.ascontiguousarray(params, dtype=np.float64), stats.size, stats.pair_class,
                           stats.pair_sa, stats.pair_n, stats.q)


def largest(kind: int, params: np.ndarray, stats: ClassStats) -> float:
    """AD of a release as the fused kernels compute it (``largest_class_value``)."""
    return float(DK.largest_class_value(kind, np.ascontiguousarray(params, dtype=np.float64), stats.size,
                                        stats.pair_class, stats.pair_sa, stats.pair_n, stats.q))


def equal_emd(stats: ClassStats) -> np.ndarray:
    """EMD with equal ground distance per class: 1/2 sum_i |p_i - q_i|, as ARX computes it,
    1/2 (1 + sum over present values (|p - q| - q))."""
    return _values(kinds.EQUAL_EMD, np.zeros(0), stats)


def ordered_emd(stats: ClassStats, order: Order) -> np.ndarray:
    """EMD with ordered ground distance per class: 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)| over
    the values in ``order``."""
    return _values(kinds.ORDERED_EMD, ordered_params(order), stats)


def hierarchical_emd(stats: ClassStats, tree: Tree) -> np.ndarray:
    """EMD with hierarchical ground distance per class (Li et al. §4.2): for every inner node N
    at level j, (j / height) * min(pos(N), neg(N)), where pos / neg sum the positive / negative
    net extras (p - q summed over the leaves below) of N's children."""
    return _values(kinds.HIERARCHICAL_EMD, hierarchical_params(tree), stats)


def recursive_ratio(stats: ClassStats, l_min: int) -> np.ndarray:
    """r_1 / (r_l + ... + r_m) per class (counts in descending order); inf with fewer than l values."""
    return _values(kinds.RECURSIVE_RATIO, np.array([float(l_min)]), stats)


def likeness_excess(stats: ClassStats, beta: float, enhanced: bool) -> np.ndarray:
    """max over a class's present values of (p - q) / q - bound(q), bound = beta or min(beta, -ln q);
    -inf for a class with no value (never in practice)."""
    return _values(kinds.LIKENESS_EXCESS, np.array([beta, 1.0 if enhanced else 0.0]), stats)


# --- plain-Python twins: one class, straight from the definitions --------------------------------


def equal_emd_ref(counts: Mapping[int, int], q: Sequence[float]) -> float:
    n = sum(counts.values())
    return 0.5 * sum(abs(counts.get(v, 0) / n - q[v]) for v in range(len(q)))


def ordered_emd_ref(counts: Mapping[int, int], q: Sequence[float], rank: Sequence[int]) -> float:
    n = sum(counts.values())
    m = len(q)
    by_rank = sorted(range(m), key=lambda v: rank[v])
    total, cum = 0.0, 0.0
    for v in by_rank:
        cum += counts.get(v, 0) / n - q[v]
        total += abs(cum)
    return total / max(m - 1, 1)


def hierarchical_emd_ref(counts: Mapping[int, int], q: Sequence[float], node: Sequence[Sequence[int]]) -> float:
    n = sum(counts.values())
    height = len(node) - 1
    extra = {v: counts.get(v, 0) / n - q[v] for v in range(len(q))}
    cost = 0.0
    for j in range(1, height + 1):
        net: dict[int, float] = {}  # child node at level j-1 -> its net extra
        parent_of: dict[int, int] = {}
        for v in range(len(q)):
            net[node[j - 1][v]] = net.get(node[j - 1][v], 0.0) + extra[v]
            parent_of[node[j - 1][v]] = node[j][v]
        pos: dict[int, float] = {}
        neg: dict[int, float] = {}
        for child, e in net.items():
            par = parent_of[child]
            pos[par] = pos.get(par, 0.0) + max(e, 0.0)
            neg[par] = neg.get(par, 0.0) + max(-e, 0.0)
        cost += sum(j * min(pos[par], neg[par]) for par in pos)
    return cost / max(height, 1)


def recursive_ratio_ref(counts: Mapping[int, int], l_min: int) -> float:
    r = sorted((c for c in counts.values() if c > 0), reverse=True)
    if len(r) < l_min:
        return math.inf
    return r[0] / sum(r[l_min - 1:])


def likeness_excess_ref(counts: Mapping[int, int], q: Sequence[float], beta: float, enhanced: bool) -> float:
    n = sum(counts.values())
    worst = -math.inf
    for v, c in counts.items():
        if c <= 0:
            continue
        if q[v] <= 0:
            return math.inf
        bound = min(beta, -math.log(q[v])) if enhanced else beta
        worst = max(worst, (c / n - q[v]) / q[v] - bound)
    return worst
