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
    counts = inp.counts.astype(np.float64)
    kept = np.where(inp.kept, counts, 0.0)
    # per QID: each cell's input leaf index (-1: not a leaf)
    leaf: list[np.ndarray] = []
    for h, inputs in zip(arx, inp.input_codes, strict=True):
        leaf.append(inputs.get({r[0]: i for i, r in enumerate(h.rows)}, -1, np.int64))
    # per QID: each cell's published value as an index into that QID's shown values (withheld:
    # the last row, which covers no leaf), and each value's leaves as a (values, leaves) matrix
    value_ix: list[np.ndarray] = []
    member: list[np.ndarray] = []
    for h, shown in zip(arx, inp.shown_codes, strict=True):
        published = np.zeros(len(shown.values), dtype=bool)
        published[shown.index[inp.kept]] = True
        m = np.zeros((len(shown.values) + 1, h.domain))
        for j in np.flatnonzero(published).tolist():
            v = shown.values[j]
            own = h.extra.get(v)
            for i, r in enumerate(h.rows):
                if (r[0] in own) if own is not None else (v in r):
                    m[j, i] = 1.0
        sizes = m.sum(axis=1)
        m[sizes > 0] /= sizes[sizes > 0, None]
        value_ix.append(np.where(inp.kept, shown.index, len(shown.values)))
        member.append(m)
    errors = np.empty(queries)
    for n, preds in enumerate(random_workload([h.domain for h in arx], queries=queries, seed=seed)):
        inside: np.ndarray | None = None
        est_w: np.ndarray | None = None
        for q, mask in preds:
            held = np.append(mask, False)[leaf[q]]  # a cell whose input is no leaf (-1) is outside
            frac = (member[q] * mask).sum(axis=1)  # share of each value's leaves the predicate holds
            inside = held if inside is None else inside & held
            est_w = frac[value_ix[q]] if est_w is None else est_w * frac[value_ix[q]]
        assert inside is not None and est_w is not None  # every query has a predicate
        truth = float(counts[inside].sum())  # a sum of whole numbers: exact in any order
        estimate = float((est_w * kept).sum())
        errors[n] = abs(estimate - truth) / max(truth, 1.0)
    return float(errors.mean())


register(UtilityMeasure("workload-error", "workload error (mean relative)", workload_error, order=3))
