"""Sums of per-record shares for the objectives (objectives.py), in one Numba pass per batch,
next to its plain-Python twin ``share_sums_twin`` (tests/search/test_objectives.py).

``share_sums(G, kept, shares)[i, d]`` = sum over histogram rows r, in row order, of
kept[i, r] * shares[d, G[i, d], r]. The bounds and the scores of objectives.py both go through
it, so a node with nothing suppressed scores its bound bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)


@njit(cache=True)
def share_sums(G, kept, shares):  # pragma: no cover - compiled; share_sums_twin is the tested twin
    P, D = G.shape
    R = kept.shape[1]
    out = np.zeros((P, D))
    for i in range(P):
        for d in range(D):
            lv = G[i, d]
            acc = 0.0
            for r in range(R):
                acc += kept[i, r] * shares[d, lv, r]
            out[i, d] = acc
    return out


def share_sums_twin(G: np.ndarray, kept: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``share_sums`` in plain Python (the same sums in the same order)."""
    P, D = G.shape
    out = np.zeros((P, D))
    for i in range(P):
        for d in range(D):
            acc = 0.0
            for r in range(kept.shape[1]):
                acc += float(kept[i, r]) * float(shares[d, G[i, d], r])
            out[i, d] = acc
    return out
