"""DRASL first release (Alg. 1, docs/design/paper_notes.md §6): greedy clustering by the metric f_link.

The algorithm figure is missing from the paper's text; the prose gives it:

1. While at least K records are unassigned: start a group with a random unassigned record, then
   repeatedly add the unassigned record with the best ``f_link`` (eq. 14, higher is better,
   engine/methods/microaggregation/entropy.py) until the group has K records.
2. The fewer than K records left over join, one at a time in row order, the group where their
   ``f_link`` is best.

``f_link(G, G + r) = -alpha (H(G) - H(G + r)) - beta d(mu_G, r) - alpha Pr_SA(G + r)`` with mu_G
the centroid of G (``distances.centroid``). Ties (scores within 1e-12 of the best, so that the
two implementations' rounding cannot split them) go to the smallest row index.

``first_release`` runs on encoded arrays with the Numba distance kernel and vectorized entropy
and linkage updates; ``first_release_reference`` is its plain-Python twin on raw records, used
by the tests. Both draw the group seeds the same way from ``np.random.default_rng(seed)``, so
they return the same groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.engine.methods.microaggregation import _kernels
from ppdp.engine.methods.microaggregation.distances import (
    EncodedQids,
    QidSchema,
    centroid,
    encoded_centroid,
    record_distance,
)
from ppdp.engine.methods.microaggregation.entropy import (
    ALPHA,
    BETA,
    entropy,
    entropy_after_adding,
    entropy_of_counts,
)
from ppdp.engine.methods.microaggregation.linkage import (
    SensitiveCatalogue,
    linkage_probability,
    probability_after_adding,
)
from ppdp.errors import DataError

_TIE = 1e-12


@dataclass(frozen=True)
class Grouping:
    """The groups of a release: row indices per group, each group in the order it was built."""

    groups: tuple[tuple[int, ...], ...]

    def sizes(self) -> list[int]:
        return [len(g) for g in self.groups]


def _best(scores: Sequence[float] | np.ndarray) -> int:
    s = np.asarray(scores, dtype=np.float64)
    return int(np.flatnonzero(s >= s.max() - _TIE)[0])


def _check(n: int, k: int) -> None:
    if k < 1:
        raise DataError(f"K must be at least 1, got {k}. Hint: K is the minimum group size.")
    if n < k:
        raise DataError(f"The table has {n} records, fewer than K = {k}. Hint: lower K or add records.")


def first_release(enc: EncodedQids, sa_codes: np.ndarray, catalogue: SensitiveCatalogue, *, k: int,
                  alpha: float = ALPHA, beta: float = BETA, seed: int = 0, linkage: bool = True) -> Grouping:
    """Alg. 1 on encoded records (``distances.encode``) and SA codes (``catalogue.codes``).

    ``linkage=False`` drops the ``- alpha Pr_SA`` term, leaving eq. 9's f: the criterion of the
    DPP baseline (entropy increase and distance only)."""
    n = enc.n
    _check(n, k)
    sa_codes = np.asarray(sa_codes, dtype=np.int64)
    n_values = len(catalogue.values)
    all_codes = np.arange(n_values)
    rng = np.random.default_rng(seed)
    unassigned = np.ones(n, dtype=bool)
    groups: list[list[int]] = []
    counts_of: list[np.ndarray] = []
    remaining = n
    while remaining >= k:
        free = np.flatnonzero(unassigned)
        start = int(free[rng.integers(free.size)])
        members = [start]
        unassigned[start] = False
        counts = np.zeros(n_values, dtype=np.int64)
        counts[sa_codes[start]] += 1
        while len(members) < k:
            free = np.flatnonzero(unassigned)
            scores = _scores(enc, members, counts, free, sa_codes, catalogue, all_codes, alpha, beta, linkage)
            pick = int(free[_best(scores)])
            members.append(pick)
            unassigned[pick] = False
            counts[sa_codes[pick]] += 1
        groups.append(members)
        counts_of.append(counts)
        remaining -= k
    for r in np.flatnonzero(unassigned):
        rows = np.array([r], dtype=np.int64)
        group_scores = [_scores(enc, g, c, rows, sa_codes, catalogue, all_codes, alpha, beta, linkage)[0]
                        for g, c in zip(groups, counts_of, strict=True)]
        j = _best(group_scores)
        groups[j].append(int(r))
        counts_of[j][sa_codes[r]] += 1
    return Grouping(tuple(tuple(g) for g in groups))


def _scores(enc, members, counts, rows, sa_codes, catalogue, all_codes, alpha, beta, linkage=True) -> np.ndarray:
    """f_link of adding each of ``rows`` to the group ``members`` (SA ``counts``); f (eq. 9)
    without ``linkage``."""
    c_cont, c_sem, c_nom, c_ord = encoded_centroid(enc, np.asarray(members))
    d = _kernels.distances_to_rows(c_cont, c_sem, c_nom, c_ord, enc.cont, enc.sem, enc.nom, enc.ordn,
                                   enc.sem_table, enc.n_qids, rows)
    h_before = entropy_of_counts(counts)
    # Entropy and Pr after adding depend only on the candidate's SA value: one per catalogue value.
    h_after = entropy_after_adding(counts, all_codes)
    sa = sa_codes[rows]
    if not linkage:
        return -alpha * (h_before - h_after[sa]) - beta * d
    pr_after = probability_after_adding(counts, all_codes, catalogue)
    return -alpha * (h_before - h_after[sa]) - beta * d - alpha * pr_after[sa]


def first_release_reference(records: Sequence[Mapping[str, Any]], sa_values: Sequence[str], schema: QidSchema,
                            catalogue: SensitiveCatalogue, *, k: int, alpha: float = ALPHA, beta: float = BETA,
                            seed: int = 0) -> Grouping:
    """Alg. 1 in plain Python on raw records (the twin of ``first_release``; O(n^2 K))."""
    n = len(records)
    _check(n, k)
    rng = np.random.default_rng(seed)
    unassigned = list(range(n))
    groups: list[list[int]] = []

    def score(group: list[int], r: int) -> float:
        mu = centroid([records[i] for i in group], schema)
        before = [sa_values[i] for i in group]
        after = before + [sa_values[r]]
        f = -alpha * (entropy(before) - entropy(after)) - beta * record_distance(mu, records[r], schema)
        return f - alpha * linkage_probability(after, catalogue)

    while len(unassigned) >= k:
        start = unassigned.pop(int(rng.integers(len(unassigned))))
        group = [start]
        while len(group) < k:
            pick = unassigned[_best([score(group, r) for r in unassigned])]
            unassigned.remove(pick)
            group.append(pick)
        groups.append(group)
    for r in unassigned:
        j = _best([score(g, r) for g in groups])
        groups[j].append(r)
    return Grouping(tuple(tuple(g) for g in groups))
