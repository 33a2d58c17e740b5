"""Plain-Python twins of the lattice search's bound kernels (optimizers/bounds.py), for the
oracle tests: the meet vectors of a row's partners, the row bounds of a box and the class bounds,
each spelled out from the module docstring of bounds.py with dicts and loops.
"""

from __future__ import annotations

import numpy as np

from ppdp.engine.methods.generalization.optimizers.bounds import PartnerTable, min_class_size
from ppdp.engine.methods.generalization.problem import Problem


def meet_levels(h: int, codes: np.ndarray, gen: np.ndarray, heights: np.ndarray) -> np.ndarray:
    """m[p, q]: the lowest level at which rows h and p agree on QID q (at most heights[q]: every
    hierarchy has one root; heights[q] + 1, outside every box, otherwise), QID by QID over all
    rows at once."""
    n, nq = codes.shape
    m = np.empty((n, nq), dtype=np.int64)
    for q in range(nq):
        levels = gen[q, : heights[q] + 1]  # (levels, leaves): each leaf's value at each level
        agree = levels[:, codes[h, q]][:, None] == levels[:, codes[:, q]]  # (levels, n)
        m[:, q] = np.where(agree.any(axis=0), agree.argmax(axis=0), heights[q] + 1)
    return m


def row_partners_python(h: int, codes: np.ndarray, gen: np.ndarray, heights: np.ndarray, mult: np.ndarray,
                        need: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain-Python twin of ``_row_partners`` for the tests: meet vectors by walking the
    hierarchies, merged in a dict, sorted by (level sum, vector), the dominance rule spelled out."""
    merged: dict[tuple[int, ...], int] = {}
    for p in range(codes.shape[0]):
        if mult[p] > 0:
            vec = []
            for q in range(codes.shape[1]):
                j = 0
                while j <= heights[q] and gen[q, j, codes[h, q]] != gen[q, j, codes[p, q]]:
                    j += 1
                vec.append(j)
            merged[tuple(vec)] = merged.get(tuple(vec), 0) + int(mult[p])
    ordered = sorted(merged, key=lambda v: (sum(v), v))
    kept: list[tuple[int, ...]] = []
    for v in ordered:
        above = sum(merged[u] for u in kept if all(a <= b for a, b in zip(u, v, strict=True)))
        if above < need:
            kept.append(v)
    return (np.asarray(kept, dtype=np.int64).reshape(len(kept), codes.shape[1]),
            np.asarray([merged[v] for v in kept], dtype=np.int64))


def row_bounds_python(L: np.ndarray, U: np.ndarray, codes: np.ndarray, weight: np.ndarray,
                      table: PartnerTable) -> np.ndarray:
    """Plain-Python twin of ``_row_bounds``'s values for the tests, straight from the module
    docstring: per box and row, the need-th largest v (with multiplicity) over every partner
    inside U, sorted, 0 when too few, u_L(h) when need is 0 (each v summed over q in order)."""
    L, U = np.atleast_2d(L), np.atleast_2d(U)
    nq = codes.shape[1]
    out = np.zeros((len(L), codes.shape[0]))
    for i, (lo, hi) in enumerate(zip(L.tolist(), U.tolist(), strict=True)):
        for h, row in enumerate(codes.tolist()):
            k = int(table.need[h])
            if k <= 0:
                out[i, h] = sum(float(weight[q, lo[q], row[q]]) for q in range(nq))
                continue
            found = []
            for m, mu in zip(table.meet[table.start[h]:table.start[h + 1]].tolist(),
                             table.mult[table.start[h]:table.start[h + 1]].tolist(), strict=True):
                if all(m[q] <= hi[q] for q in range(nq)):
                    v = 0.0
                    for q in range(nq):
                        v += float(weight[q, max(lo[q], m[q]), row[q]])
                    found.append((v, int(mu)))
            acc = 0
            for v, mu in sorted(found, reverse=True):
                acc += mu
                if acc >= k:
                    out[i, h] = v
                    break
    return out


def class_bounds_python(problem: Problem, L: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Plain-Python twin of ``_class_bounds`` for the tests: classes as tuples of generalized
    codes at U, records per class by a dict."""
    t = problem.table
    gen, weight, _ = t.lookup
    kmin = min_class_size(problem)
    out = []
    for lo, hi in zip(np.atleast_2d(L).tolist(), np.atleast_2d(U).tolist(), strict=True):
        key = [tuple(int(gen[q, hi[q], c]) for q, c in enumerate(row)) for row in t.codes.tolist()]
        records: dict[tuple[int, ...], int] = {}
        for k, n in zip(key, t.counts.tolist(), strict=True):
            records[k] = records.get(k, 0) + int(n)
        out.append(sum(int(n) * sum(float(weight[q, lo[q], c]) for q, c in enumerate(row))
                       for row, k, n in zip(t.codes.tolist(), key, t.counts.tolist(), strict=True)
                       if records[k] >= kmin))
    return np.asarray(out, dtype=np.float64)
