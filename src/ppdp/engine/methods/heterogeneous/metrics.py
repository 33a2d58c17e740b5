"""Information loss of a heterogeneous k-anonymization: NCP/GCP (eq. 1-4) and SIL (eq. 5-7).

Full (non-incremental) NumPy recomputation; the reference the incremental structures of
``engine.methods.heterogeneous.incremental`` are checked against. Notation of the paper (docs/design/paper_notes.md §7):

NCP_num(q'_t, j) = (max_{t,j} - min_{t,j}) / (max^j - min^j)                        (eq. 1)
    over the k originals covered by q'_t; the domain range is the whole column's. A constant
    column (range 0) contributes 0.
NCP_cat(q'_t, j) = (|{values covered}| - 1) / (|domain_j| - 1)                         (eq. 2)
    the set-size form the paper defines (dummy variables, no hierarchy); |domain_j| is the
    number of categories of the QID (all dummy variables, not only those in the data). A
    one-value domain contributes 0. The paper prints "NCP = 1/6 = 1.66" for its Table 3 city
    example: 1/6 = 0.1667 is meant (the value must be in [0, 1]); we compute 1/6.
NCP(q'_t) = sum over numeric and categorical QIDs                                      (eq. 3)
GCP = sum_t NCP(q'_t) / (d * n), d = number of QIDs                                    (eq. 4)

SIL, after Sanchez et al.: each anonymized tuple q'_t is compared with its *own* original q_t
(the self edge; q'_t publishes q_t's other columns).
dist_num(t) = sqrt(sum_j ((x_{t,j} - mean_{t,j}) / sigma_j)^2)                          (eq. 5)
    mean over the k originals covered by q'_t; sigma_j is the population standard deviation of
    QID j (the paper writes sigma_i and mixes i and j: the scale is per attribute).
dist_cat(t) = sum_j [c_{t,j} != mode_{t,j}] / sigma_j                                  (eq. 6)
    The paper prints ``==``; a distance must be 0 when the value is kept, so the mismatch is
    meant. Ties for the mode are broken in favour of the tuple's own value (q'_t may publish
    q_t's value as representative whenever it is among the most frequent covered values).
    sigma_j of a categorical QID is the root of its nominal variance, the mean 0/1 distance of
    the column to its mode: sqrt(1 - p_mode) (the paper says only "the standard deviation").
SIL = sum_t (dist_num(t) + dist_cat(t)) / (d * n)                                      (eq. 7)
    As printed: the numeric part is a Euclidean norm, the categorical part a plain sum.
A zero sigma (constant column) is replaced by 1: every distance of that column is 0 anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.errors import DataError


@dataclass(frozen=True, eq=False)
class QidTable:
    """The QID columns of n tuples, encoded for the metrics.

    numeric:       (n, qn) float64 values.
    categorical:   (n, qc) int64 category codes, column j in 0..n_categories[j]-1.
    n_categories:  domain size of each categorical QID (number of dummy variables).
    """

    numeric: np.ndarray
    categorical: np.ndarray
    n_categories: tuple[int, ...]

    def __post_init__(self) -> None:
        num = np.ascontiguousarray(self.numeric, dtype=np.float64)
        cat = np.ascontiguousarray(self.categorical, dtype=np.int64)
        if num.ndim != 2 or cat.ndim != 2 or num.shape[0] != cat.shape[0]:
            raise DataError(
                f"QID arrays must be 2-D with one row per tuple, got numeric {num.shape} and "
                f"categorical {cat.shape}; hint: use shape (n, 0) for no QIDs of a kind"
            )
        sizes = tuple(int(c) for c in self.n_categories)
        if len(sizes) != cat.shape[1]:
            raise DataError(
                f"{cat.shape[1]} categorical QIDs but {len(sizes)} domain sizes; hint: give "
                f"n_categories one entry per categorical column"
            )
        if not np.isfinite(num).all():
            raise DataError("numeric QIDs hold NaN or infinite values; hint: impute or drop them")
        for j, size in enumerate(sizes):
            col = cat[:, j]
            if col.size and (col.min() < 0 or col.max() >= size):
                raise DataError(
                    f"categorical QID {j} has codes outside 0..{size - 1}; hint: encode each "
                    f"column as dense codes and pass its domain size"
                )
        if num.shape[1] + cat.shape[1] == 0:
            raise DataError("no QIDs given; hint: pass at least one numeric or categorical QID")
        for name, arr in (("numeric", num), ("categorical", cat)):
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "n_categories", sizes)

    @property
    def n(self) -> int:
        """Number of tuples."""
        return int(self.numeric.shape[0])

    @property
    def d(self) -> int:
        """Number of QIDs (the d of eq. 4 and 7)."""
        return int(self.numeric.shape[1] + self.categorical.shape[1])


@dataclass(frozen=True, eq=False)
class MetricScales:
    """Per-QID normalizers: domain ranges / sizes for NCP, standard deviations for SIL."""

    num_range: np.ndarray  # (qn,) max^j - min^j
    cat_domain: np.ndarray  # (qc,) |domain_j| as float
    num_sigma: np.ndarray  # (qn,) population std, 0 replaced by 1
    cat_sigma: np.ndarray  # (qc,) sqrt(1 - p_mode), 0 replaced by 1


def metric_scales(table: QidTable) -> MetricScales:
    """The normalizers of eq. 1, 2, 5 and 6 computed from the whole table."""
    num = table.numeric
    if table.n:
        num_range = num.max(axis=0) - num.min(axis=0) if num.shape[1] else np.zeros(0)
        num_sigma = num.std(axis=0)
    else:
        num_range = np.zeros(num.shape[1])
        num_sigma = np.zeros(num.shape[1])
    cat_sigma = np.empty(table.categorical.shape[1])
    for j, size in enumerate(table.n_categories):
        counts = np.bincount(table.categorical[:, j], minlength=size)
        p_mode = counts.max() / max(table.n, 1)
        cat_sigma[j] = np.sqrt(max(1.0 - p_mode, 0.0))
    return MetricScales(
        num_range=np.asarray(num_range, dtype=np.float64),
        cat_domain=np.asarray(table.n_categories, dtype=np.float64),
        num_sigma=np.where(num_sigma > 0, num_sigma, 1.0).astype(np.float64),
        cat_sigma=np.where(cat_sigma > 0, cat_sigma, 1.0).astype(np.float64),
    )


def ncp_numeric(values, domain_min: float, domain_max: float) -> float:
    """Eq. 1 for one anonymized tuple and one numeric QID: range of ``values`` / domain range."""
    values = np.asarray(values, dtype=np.float64)
    span = float(domain_max) - float(domain_min)
    return float((values.max() - values.min()) / span) if span > 0 else 0.0


def ncp_categorical(values, domain_size: int) -> float:
    """Eq. 2 for one anonymized tuple and one categorical QID: (distinct - 1) / (|domain| - 1)."""
    distinct = len(set(np.asarray(values).tolist()))
    return (distinct - 1) / (domain_size - 1) if domain_size > 1 else 0.0


def tuple_ncp(table: QidTable, graph: KRegularGraph, scales: MetricScales | None = None):
    """NCP(q'_t) of eq. 3 for every anonymized tuple t, shape (n,)."""
    _check_sizes(table, graph)
    scales = scales or metric_scales(table)
    cover = graph.cover
    total = np.zeros(graph.n)
    if table.numeric.shape[1]:
        vals = table.numeric[cover]  # (n, k, qn)
        spread = vals.max(axis=1) - vals.min(axis=1)
        rng = scales.num_range
        total += np.where(rng > 0, spread / np.where(rng > 0, rng, 1.0), 0.0).sum(axis=1)
    for j, size in enumerate(table.n_categories):
        if size <= 1:
            continue
        vals = np.sort(table.categorical[cover, j], axis=1)  # (n, k)
        distinct = 1 + (vals[:, 1:] != vals[:, :-1]).sum(axis=1)
        total += (distinct - 1) / (size - 1)
    return total


def gcp(table: QidTable, graph: KRegularGraph, scales: MetricScales | None = None) -> float:
    """GCP of eq. 4: the mean NCP per QID and tuple, in [0, 1]."""
    return float(tuple_ncp(table, graph, scales).sum() / (table.d * graph.n))


def tuple_sil_distance(table: QidTable, graph: KRegularGraph, scales: MetricScales | None = None):
    """dist_num(t) + dist_cat(t) of eq. 5-6 for every anonymized tuple t, shape (n,)."""
    _check_sizes(table, graph)
    scales = scales or metric_scales(table)
    cover = graph.cover
    own = np.arange(graph.n)
    dist = np.zeros(graph.n)
    if table.numeric.shape[1]:
        mean = table.numeric[cover].mean(axis=1)  # (n, qn)
        z = (table.numeric[own] - mean) / scales.num_sigma
        dist += np.sqrt((z * z).sum(axis=1))
    for j in range(table.categorical.shape[1]):
        vals = table.categorical[cover, j]  # (n, k)
        per_slot = (vals[:, :, None] == vals[:, None, :]).sum(axis=2)  # count of each slot's value
        own_count = (vals == table.categorical[own, j][:, None]).sum(axis=1)
        mismatch = own_count < per_slot.max(axis=1)  # own value not among the modes
        dist += mismatch / scales.cat_sigma[j]
    return dist


def sil(table: QidTable, graph: KRegularGraph, scales: MetricScales | None = None) -> float:
    """SIL of eq. 7."""
    return float(tuple_sil_distance(table, graph, scales).sum() / (table.d * graph.n))


def hierarchy_levels(rows, categories) -> np.ndarray:
    """Ancestor codes of each category: ``levels[v, h]`` codes v's ancestor at level h.

    ``rows`` are a hierarchy's rows ``(leaf, level1, ..., root)`` (engine.core.hierarchy.Hierarchy
    .rows); ``categories[v]`` is the leaf string of code v. Column 0 is v itself.
    """
    by_leaf = {row[0]: row for row in rows}
    missing = [c for c in categories if c not in by_leaf]
    if missing:
        raise DataError(
            f"hierarchy has no leaf {missing[0]!r}; hint: the hierarchy must cover every category"
        )
    table = [by_leaf[c] for c in categories]
    height = len(table[0]) if table else 1
    levels = np.empty((len(categories), height), dtype=np.int64)
    levels[:, 0] = np.arange(len(categories))
    for h in range(1, height):
        _, levels[:, h] = np.unique([row[h] for row in table], return_inverse=True)
    return levels


def tuple_ncp_lca(codes, levels: np.ndarray, graph: KRegularGraph) -> np.ndarray:
    """Hierarchy variant of eq. 2 for one categorical QID, per anonymized tuple, shape (n,).

    The paper has no hierarchies; where a QID has one, q'_t may publish the lowest common
    ancestor (LCA) of its covered values, and an analyst must then assume
    every leaf under it. So NCP = (|leaves under the LCA| - 1) / (|domain| - 1): 0 for a single
    value, 1 at the root, and never below eq. 2's set-size NCP. The incremental structures
    (incremental.py) implement eq. 2 only.
    """
    codes = np.asarray(codes, dtype=np.int64)
    domain = levels.shape[0]
    if domain <= 1:
        return np.zeros(graph.n)
    vals = codes[graph.cover]  # (n, k)
    leaves = np.ones(graph.n)
    done = np.zeros(graph.n, dtype=bool)
    for h in range(levels.shape[1]):
        anc = levels[vals, h]
        same = (anc == anc[:, :1]).all(axis=1) & ~done
        under = np.bincount(levels[:, h])  # leaves under each level-h value
        leaves[same] = under[anc[same, 0]]
        done |= same
    leaves[~done] = domain  # no common ancestor below an absent root: the whole domain
    return (leaves - 1) / (domain - 1)


def _check_sizes(table: QidTable, graph: KRegularGraph) -> None:
    if table.n != graph.n:
        raise DataError(
            f"the graph has {graph.n} tuples but the QID table {table.n}; hint: build both from "
            f"the same rows"
        )
