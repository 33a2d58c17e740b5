"""Numba kernels of DRASL: arrays in, arrays out (layout of ``distances.EncodedQids``).

The plain-Python twin of ``distances_to_many`` is ``distances.record_distance`` (eq. 6 on the
records' raw values); tests/methods/microaggregation/test_drasl_core.py checks that both agree on random tables.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)


@njit(cache=True)
def distances_to_many(a_cont, a_sem, a_nom, a_ord, cont, sem, nom, ordn, sem_table, n_qids):
    """Eq. 6 from one point ``a`` (a record or a centroid) to every row of ``cont/sem/nom/ordn``.

    The same kernel serves "one record to many centroids" and "one centroid to many records"
    because the distance is symmetric. The non-semantic nominal QIDs give one term together
    (eq. 3, as Example 1 reads it).
    """
    return distances_to_rows(a_cont, a_sem, a_nom, a_ord, cont, sem, nom, ordn, sem_table, n_qids,
                             np.arange(cont.shape[0], dtype=np.int64))


@njit(cache=True)
def distances_to_rows(a_cont, a_sem, a_nom, a_ord, cont, sem, nom, ordn, sem_table, n_qids, rows):
    """``distances_to_many`` restricted to ``rows`` (int64 row indices), in that order: the
    clustering loop asks for the still unassigned records only."""
    m = rows.shape[0]
    mc = cont.shape[1]
    ms = sem.shape[1]
    mn = nom.shape[1]
    mo = ordn.shape[1]
    out = np.empty(m, dtype=np.float64)
    for t in range(m):
        i = rows[t]
        total = 0.0
        for q in range(mc):
            total += abs(cont[i, q] - a_cont[q])
        for q in range(ms):
            total += sem_table[q, sem[i, q], a_sem[q]]
        if mn > 0:
            mismatches = 0
            for q in range(mn):
                if nom[i, q] != a_nom[q]:
                    mismatches += 1
            total += mismatches / mn
        for q in range(mo):
            total += abs(ordn[i, q] - a_ord[q])
        out[t] = total / n_qids
    return out
