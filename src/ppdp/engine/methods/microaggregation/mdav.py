"""Classic MDAV (Domingo-Ferrer and Mateo-Sanz 2002; sdcMicro's ``mdav``), the field's reference
fixed-size microaggregation, on the encoded QIDs with the eq. 6 record distance.

While at least 3K records remain: c = centroid of the remaining records (``encoded_centroid``);
r = the remaining record farthest from c; a group of r and its K - 1 nearest remaining records;
s = the remaining record farthest from r; a group of s and its K - 1 nearest. Then, if at least
2K remain: one more group around the record farthest from their centroid, and the rest (K to
2K - 1 records) form the last group; otherwise the remaining records (K to 2K - 1, or all of a
table of fewer than 2K) form one group. The SA plays no part. Ties: the farthest is the first in row order; the
nearest are ordered by distance then row (the group's own record always comes first).

Static: updates re-cluster the changed table (``static.StaticAlgorithm``). Cost O(n^2 / K)
distance evaluations in the Numba kernel.
"""

from __future__ import annotations

import numpy as np

from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.methods.microaggregation.distances import EncodedQids, encoded_centroid
from ppdp.engine.methods.microaggregation.static import StaticAlgorithm, distances, point


def _nearest_group(enc: EncodedQids, seed: int, remaining: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(seed and its K - 1 nearest among ``remaining``, the rest of ``remaining``)."""
    d = distances(enc, point(enc, seed), remaining)
    d[remaining == seed] = -1.0  # duplicates of the seed must not push it out of its own group
    order = np.argsort(d, kind="stable")
    return remaining[order[:k]], np.sort(remaining[order[k:]])


def _farthest(enc: EncodedQids, p, remaining: np.ndarray) -> int:
    return int(remaining[int(np.argmax(distances(enc, p, remaining)))])


def mdav_groups(enc: EncodedQids, k: int) -> list[list[int]]:
    """MDAV's groups (row indices) of an encoded table of at least K rows."""
    remaining = np.arange(enc.n, dtype=np.int64)
    groups: list[list[int]] = []
    while remaining.size >= 3 * k:
        r = _farthest(enc, encoded_centroid(enc, remaining), remaining)
        g, remaining = _nearest_group(enc, r, remaining, k)
        groups.append(g.tolist())
        s = _farthest(enc, point(enc, r), remaining)
        g, remaining = _nearest_group(enc, s, remaining, k)
        groups.append(g.tolist())
    if remaining.size >= 2 * k:
        r = _farthest(enc, encoded_centroid(enc, remaining), remaining)
        g, remaining = _nearest_group(enc, r, remaining, k)
        groups.append(g.tolist())
    if remaining.size:
        groups.append(remaining.tolist())
    return groups


class Mdav(StaticAlgorithm):
    """Classic MDAV on the eq. 6 distance (module docstring)."""

    name = "mdav"

    def groups(self, enc, sa_codes, catalogue, params):
        return mdav_groups(enc, params.k)


ALGORITHMS.register("mdav")(Mdav())
