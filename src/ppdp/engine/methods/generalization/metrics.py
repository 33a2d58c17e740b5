"""Utility metrics, registered by name. Each maps (encoded table, G, retained) to a number.

TD and query precision follow docs/design/paper_notes.md §1; ``workload_error`` is our workload-based
precision (random COUNT queries answered on the source and on the release).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.kernels import classes as K
from ppdp.registry import Registry, registry

Metric = Callable[[EncodedTable, np.ndarray, np.ndarray], float]
METRICS: Registry[Metric] = registry("metric")


@METRICS.register("td")
def transparency_degree(table: EncodedTable, g: np.ndarray, retained: np.ndarray) -> float:
    """TD = sum over retained records and QIDs of 1/|v_g| (docs/design/paper_notes.md §1). Higher is better."""
    _, weight, _ = table.lookup
    return float(K.transparency(np.asarray(g, dtype=np.int64), table.codes, np.asarray(retained, dtype=np.int64), weight))


@METRICS.register("query_precision")
def query_precision(table: EncodedTable, g: np.ndarray, retained: np.ndarray) -> float:
    """100 * TD / (nR * nQID): the ID-DGA paper's precision (Table 3, docs/design/paper_notes.md §1)."""
    return precision_from_td(table, transparency_degree(table, g, retained))


def precision_from_td(table: EncodedTable, td: float) -> float:
    """Query precision of a release whose TD is known (rows withheld for NULL QIDs count in nR)."""
    n = table.n_records + table.excluded_null_rows
    return 100.0 * td / (n * table.n_qids)


@METRICS.register("suppressed")
def suppressed_records(table: EncodedTable, g: np.ndarray, retained: np.ndarray) -> float:
    """Source rows withheld from the release (including rows withheld for NULL QIDs)."""
    return float(table.n_records - int(np.sum(retained)) + table.excluded_null_rows)


def workload_error(table: EncodedTable, g: np.ndarray, retained: np.ndarray, *, queries: int = 200, seed: int = 0) -> float:
    """Mean relative error of a seeded workload of COUNT(*) queries with QID predicates."""
    return float(workload_errors(table, g, retained, queries=queries, seed=seed).mean())


# Registered by a call, not the decorator: the decorator would retype the function as a plain
# Metric and hide the queries/seed keywords that report_metrics passes.
METRICS.register("workload_error")(workload_error)


def report_metrics(table: EncodedTable, g: np.ndarray, retained: np.ndarray, names: tuple[str, ...] | list[str], *,
                   workload_queries: int = 200, workload_seed: int = 0) -> dict[str, float]:
    """The named metrics of one release, each computed once: query precision reuses TD instead
    of a second pass over the histogram (the release used to compute TD for both)."""
    out: dict[str, float] = {}
    td: float | None = None
    for name in names:
        if name in ("td", "query_precision"):
            if td is None:
                td = transparency_degree(table, g, retained)
            out[name] = td if name == "td" else precision_from_td(table, td)
        elif name == "workload_error":
            out[name] = workload_error(table, g, retained, queries=workload_queries, seed=workload_seed)
        else:
            out[name] = METRICS.get(name)(table, g, retained)
    return out


def random_workload(table: EncodedTable, *, queries: int, seed: int) -> list[list[tuple[int, np.ndarray]]]:
    """Queries as lists of (qid index, boolean mask over that QID's leaves).

    Each query constrains 1 to 3 QIDs; per QID it selects a contiguous run of leaves in the
    hierarchy's leaf order (a range for ordered attributes, a block of related values for
    categorical ones) covering 10-50% of the leaves.
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(queries):
        n_pred = int(rng.integers(1, min(3, table.n_qids) + 1))
        preds = []
        for q in rng.choice(table.n_qids, size=n_pred, replace=False):
            n_leaves = len(table.hierarchies[q].rows)
            width = max(1, int(round(n_leaves * rng.uniform(0.1, 0.5))))
            start = int(rng.integers(0, n_leaves - width + 1))
            mask = np.zeros(n_leaves, dtype=bool)
            mask[start : start + width] = True
            preds.append((int(q), mask))
        out.append(preds)
    return out


def workload_errors(table: EncodedTable, g: np.ndarray, retained: np.ndarray, *, queries: int = 200, seed: int = 0) -> np.ndarray:
    """Relative error |estimate - true| / max(true, 1) of each workload query.

    The release answers a query by spreading each record uniformly over the leaves of its
    generalized value: a record with value v_g matches with probability
    |leaves(v_g) ∩ predicate| / |v_g| per constrained QID. Suppressed records count 0.

    The two sums per query are plain numpy reductions, not ``np.dot``: a dot product of two
    histogram-length vectors goes to multi-threaded OpenBLAS, whose threads spin against the
    other processes on a loaded machine (many times slower under load than on a quiet one).
    """
    counts = table.counts.astype(np.float64)
    kept = np.asarray(retained, dtype=np.float64)
    leaf_codes: dict[int, np.ndarray] = {}  # per QID: the leaf code of each histogram row
    gen_codes: dict[int, np.ndarray] = {}  # per QID: the generalized code of each row at level g[q]
    errors = np.empty(queries)
    for i, preds in enumerate(random_workload(table, queries=queries, seed=seed)):
        true_w = np.ones(table.n_rows)
        est_w = np.ones(table.n_rows)
        for q, mask in preds:
            h = table.hierarchies[q]
            level = int(g[q])
            gen = h.level_codes[level]
            if q not in leaf_codes:
                leaf_codes[q] = table.codes[:, q]
                gen_codes[q] = gen[leaf_codes[q]]
            matched_per_gen = np.bincount(gen, weights=mask.astype(np.float64), minlength=len(h.leaf_counts[level]))
            frac = matched_per_gen / h.leaf_counts[level]
            true_w *= mask[leaf_codes[q]]
            est_w *= frac[gen_codes[q]]
        truth = float(np.multiply(true_w, counts).sum())
        estimate = float(np.multiply(est_w, kept).sum())
        errors[i] = abs(estimate - truth) / max(truth, 1.0)
    return errors


def class_size_summary(table: EncodedTable, g: np.ndarray, retained: np.ndarray) -> dict[str, float]:
    """Number of classes and min / median / mean / max class size of the release."""
    gen, _, n_gen = table.lookup
    ret = np.asarray(retained, dtype=np.int64)
    cls, m = K.classify(np.asarray(g, dtype=np.int64), table.codes, gen, n_gen, ret > 0)
    sizes = K.class_sizes(cls, m, ret)
    sizes = sizes[sizes > 0]
    if sizes.size == 0:
        return {"classes": 0, "min": 0, "median": 0, "mean": 0, "max": 0}
    return {"classes": int(sizes.size), "min": int(sizes.min()), "median": float(np.median(sizes)),
            "mean": float(sizes.mean()), "max": int(sizes.max())}
