"""IKA, the improved K-anonymity clustering of the DRASL paper's ref. 26, on the eq. 6 record
distance. Static: updates re-cluster the changed table (``static.StaticAlgorithm``). The SA
plays no part.

The paper describes IKA only by its cost: the first cluster needs the distances from "the first
centroid" to the other x - 1 records, the second 2 (x - K - 2), the i-th about i times the
records left. Our reading, which gives exactly that count: cluster 1 starts from a random
record and takes its K - 1 nearest records; cluster i > 1 starts from the remaining record
farthest from the clusters built so far (the largest *sum* of distances to the centroids of
clusters 1..i-1: i - 1 distances per record) and takes the K - 1 remaining records nearest to
that seed (the i-th distance). The fewer than K records left at the end join the cluster with
the nearest centroid. The sums are kept as running totals, so the cost is O(n^2 / K) kernel
distance evaluations, not the paper's O(n^2) with a re-summation, and the groups are the same.
"""

from __future__ import annotations

import numpy as np

from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.methods.microaggregation.distances import EncodedQids, encoded_centroid
from ppdp.engine.methods.microaggregation.static import Centroids, StaticAlgorithm, distances, point


def ika_groups(enc: EncodedQids, k: int, seed: int) -> list[list[int]]:
    """IKA's groups (row indices) as read in the module docstring."""
    rng = np.random.default_rng(seed)
    n = enc.n
    free = np.ones(n, dtype=bool)
    far = np.zeros(n)  # sum of distances to the centroids of the clusters built so far
    groups: list[list[int]] = []
    start = int(rng.integers(n))
    while free.sum() >= k:
        rows = np.flatnonzero(free)
        if groups:
            start = int(rows[int(np.argmax(far[rows]))])
        d = distances(enc, point(enc, start), rows)
        d[rows == start] = -1.0
        g = rows[np.argsort(d, kind="stable")[:k]]
        free[g] = False
        groups.append(g.tolist())
        rest = np.flatnonzero(free)
        if rest.size:
            far[rest] += distances(enc, encoded_centroid(enc, g), rest)
    if free.any():
        cents = Centroids(enc, np.array([g[0] for g in groups]))
        for j, members in enumerate(groups):
            cents.update(j, members)
        for r in np.flatnonzero(free):
            j = int(np.argmin(cents.distances(int(r))))
            groups[j].append(int(r))
    return groups


class Ika(StaticAlgorithm):
    """Improved K-anonymity clustering, ref. 26 of the DRASL paper (module docstring)."""

    name = "ika"

    def groups(self, enc, sa_codes, catalogue, params):
        return ika_groups(enc, params.k, params.seed)


ALGORITHMS.register("ika")(Ika())
