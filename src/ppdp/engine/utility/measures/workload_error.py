"""Workload error: the mean relative error |estimate - true| / max(true, 1) of a seeded workload
of COUNT(*) queries with QID predicates (``random_workload``), the release answering each by
spreading a published row uniformly over the leaves of its value; withheld rows count 0."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register

QUERIES = 200
SEED = 0


def random_workload(leaf_counts: Sequence[int], *, queries: int, seed: int) -> list[list[tuple[int, np.ndarray]]]:
    """Queries as lists of (qid index, boolean mask over that QID's leaves in hierarchy order).

    Each query constrains 1 to 3 QIDs; per QID it selects a contiguous run of leaves in the
    hierarchy's leaf order (a range for ordered attributes, a block of related values for
    categorical ones) covering 10-50% of the leaves.
    """
    rng = np.random.default_rng(seed)
    n_qids = len(leaf_counts)
    out = []
    for _ in range(queries):
        n_pred = int(rng.integers(1, min(3, n_qids) + 1))
        preds = []
        for q in rng.choice(n_qids, size=n_pred, replace=False):
            n_leaves = int(leaf_counts[q])
            width = max(1, int(round(n_leaves * rng.uniform(0.1, 0.5))))
            start = int(rng.integers(0, n_leaves - width + 1))
            mask = np.zeros(n_leaves, dtype=bool)
            mask[start : start + width] = True
            preds.append((int(q), mask))
        out.append(preds)
    return out


def workload_error(inp: UtilityInput, *, queries: int = QUERIES, seed: int = SEED) -> float:
    arx = inp.arx
    index = [{r[0]: i for i, r in enumerate(h.rows)} for h in arx]
    cells = inp.cells
    counts = np.array([c.count for c in cells], dtype=np.float64)
    kept = np.array([0.0 if c.outputs is None else c.count for c in cells])
    # per QID: each cell's input leaf index, and the leaves its published value covers
    leaf = [np.array([index[q].get(c.inputs[q], -1) for c in cells]) for q in range(len(arx))]
    covers: list[dict[str, np.ndarray]] = []
    for h in arx:
        by_value: dict[str, list[int]] = {}
        for i, r in enumerate(h.rows):
            for v in set(r):
                by_value.setdefault(v, []).append(i)
        covers.append({v: np.array(ix) for v, ix in by_value.items()})
    errors = np.empty(queries)
    for n, preds in enumerate(random_workload([h.domain for h in arx], queries=queries, seed=seed)):
        true_w = np.ones(len(cells))
        est_w = np.ones(len(cells))
        for q, mask in preds:
            true_w *= np.where(leaf[q] >= 0, mask[np.maximum(leaf[q], 0)], False)
            frac: dict[str, float] = {}
            for j, c in enumerate(cells):
                if c.outputs is None:
                    continue
                v = c.outputs[q]
                if v not in frac:
                    ix = covers[q].get(v)
                    frac[v] = float(mask[ix].mean()) if ix is not None else 0.0
                est_w[j] *= frac[v]
        truth = float((true_w * counts).sum())
        estimate = float((est_w * kept).sum())
        errors[n] = abs(estimate - truth) / max(truth, 1.0)
    return float(errors.mean())


register(UtilityMeasure("workload-error", "workload error (mean relative)", workload_error, order=3))
