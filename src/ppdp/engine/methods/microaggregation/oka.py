"""OKA, one-pass K-means for K-anonymization (Lin and Wei 2008; the DRASL paper's ref. 25), on
the eq. 6 record distance. Static:
updates re-cluster the changed table (``static.StaticAlgorithm``). The SA plays no part.

OKA, as Lin and Wei describe it:

1. Clustering stage: K' = floor(n / K) records drawn at random (``np.random.default_rng(seed)``)
   seed K' clusters. Every other record, in a random order, joins the cluster whose centroid is
   nearest (eq. 6 to ``encoded_centroid``; ties to the first cluster), and that cluster's
   centroid is updated at once: one pass over the records.
2. Adjustment stage: a cluster with more than K records keeps its K records nearest to its
   centroid (one ranking, ties by row) and gives up the others. Each given-up record, in that
   order, joins the nearest cluster that still has fewer than K records, or, once none has, the
   nearest cluster; centroids are updated as records join. Since n >= K' K every cluster ends
   with at least K records.

"""

from __future__ import annotations

import numpy as np

from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.methods.microaggregation.distances import EncodedQids
from ppdp.engine.methods.microaggregation.static import Centroids, StaticAlgorithm, distances


def oka_groups(enc: EncodedQids, k: int, seed: int) -> list[list[int]]:
    """OKA's groups (row indices) of an encoded table of at least K rows."""
    rng = np.random.default_rng(seed)
    n = enc.n
    order = rng.permutation(n)
    n_clusters = n // k
    seeds = order[:n_clusters]
    members: list[list[int]] = [[int(s)] for s in seeds]
    cents = Centroids(enc, seeds)
    for r in order[n_clusters:]:
        j = int(np.argmin(cents.distances(int(r))))
        members[j].append(int(r))
        cents.update(j, members[j])
    given_up: list[int] = []
    for j, m in enumerate(members):
        if len(m) > k:
            rows = np.asarray(m, dtype=np.int64)
            keep = np.argsort(distances(enc, cents.of(j), rows), kind="stable")
            members[j] = rows[keep[:k]].tolist()
            given_up.extend(rows[keep[k:]].tolist())
            cents.update(j, members[j])
    sizes = np.array([len(m) for m in members])
    for r in given_up:
        small = np.flatnonzero(sizes < k)
        which = small if small.size else np.arange(n_clusters)
        j = int(which[int(np.argmin(cents.distances(r, which)))])
        members[j].append(r)
        sizes[j] += 1
        cents.update(j, members[j])
    return members


class Oka(StaticAlgorithm):
    """One-pass K-means (module docstring)."""

    name = "oka"

    def groups(self, enc, sa_codes, catalogue, params):
        return oka_groups(enc, params.k, params.seed)


ALGORITHMS.register("oka")(Oka())
