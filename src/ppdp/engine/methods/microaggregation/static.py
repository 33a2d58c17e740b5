"""What the static baselines share: the per-change operations by re-clustering, and small
array helpers over ``EncodedQids``.

A static algorithm (MDAV, OKA, IKA, entropy l-diversity and t-closeness clustering) has no
update rule of its own. The DRASL paper realizes their updates "by performing corresponding
number of record insertion, deletion, and modification on the static dataset": each change
rebuilds the encoded table of the state's current real records (ids kept), applies the change,
and runs the algorithm's first release on it again with the state's K, weights and seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from ppdp.engine.methods.microaggregation import _kernels, dynamic
from ppdp.engine.methods.microaggregation.distances import EncodedQids, encoded_centroid
from ppdp.engine.methods.microaggregation.dynamic import DynamicState, Modification, NewRecord
from ppdp.errors import DataError

Point = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def check_size(n: int, k: int) -> None:
    """DataError unless K >= 1 and the table has at least K records."""
    if k < 1:
        raise DataError(f"K must be at least 1, got {k}. Hint: K is the minimum group size.")
    if n < k:
        raise DataError(f"The table has {n} records, fewer than K = {k}. Hint: lower K or add records.")


def point(enc: EncodedQids, row: int) -> Point:
    """Row ``row`` of ``enc`` as a point for the distance kernel."""
    return enc.cont[row], enc.sem[row], enc.nom[row], enc.ordn[row]


def distances(enc: EncodedQids, p: Point, rows: np.ndarray) -> np.ndarray:
    """Eq. 6 from the point ``p`` (a record or a centroid) to each of ``rows`` (int64)."""
    return _kernels.distances_to_rows(p[0], p[1], p[2], p[3], enc.cont, enc.sem, enc.nom, enc.ordn, enc.sem_table,
                                      enc.n_qids, np.asarray(rows, dtype=np.int64))


def distances_to_points(enc: EncodedQids, p: Point, points: Point) -> np.ndarray:
    """Eq. 6 from ``p`` to each row of the stacked points ``points`` (e.g. group centroids)."""
    return _kernels.distances_to_many(p[0], p[1], p[2], p[3], points[0], points[1], points[2], points[3],
                                      enc.sem_table, enc.n_qids)


def subset(enc: EncodedQids, rows: np.ndarray) -> EncodedQids:
    """The encoded table of ``rows`` only (same units, tables and nominal domains)."""
    rows = np.asarray(rows, dtype=np.int64)
    return dataclasses.replace(enc, cont=enc.cont[rows], sem=enc.sem[rows], nom=enc.nom[rows], ordn=enc.ordn[rows])


def append_row(enc: EncodedQids, qids: dynamic.EncodedRow) -> EncodedQids:
    """``enc`` with one more row."""
    def stack(a: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.vstack([a, np.asarray(v, dtype=a.dtype).reshape(1, a.shape[1])])

    return dataclasses.replace(enc, cont=stack(enc.cont, qids.cont), sem=stack(enc.sem, qids.sem),
                               nom=stack(enc.nom, qids.nom), ordn=stack(enc.ordn, qids.ordn))


def current_table(state: DynamicState) -> tuple[EncodedQids, np.ndarray, list[int]]:
    """The state's current real records as a table: (encoded QIDs, SA codes, ids), in pool order."""
    rows = np.array(sorted(state.real_row.values()), dtype=np.int64)
    return subset(state.pool, rows), state.sa[rows].astype(np.int64), [int(state.row_ids[r]) for r in rows]


class StaticAlgorithm:
    """Base of the static baselines: subclasses give ``groups`` (row indices per group)."""

    name = ""
    forges = False
    dynamic = False

    def groups(self, enc: EncodedQids, sa_codes: np.ndarray, catalogue, params) -> list[list[int]]:
        """Groups of at least K rows covering every row of ``enc`` once."""
        raise NotImplementedError

    def first_release(self, enc, sa_codes, ids: Sequence[int], catalogue, params) -> DynamicState:
        """Cluster the table and wrap the groups in a ``DynamicState`` (no forged records)."""
        check_size(enc.n, params.k)
        sa_codes = np.asarray(sa_codes, dtype=np.int64)
        groups = self.groups(enc, sa_codes, catalogue, params)
        return dynamic.from_grouping(enc, sa_codes, ids, groups, catalogue, k=params.k, alpha=params.alpha,
                                     beta=params.beta, seed=params.seed)

    def _recluster(self, state: DynamicState, enc: EncodedQids, sa: np.ndarray, ids: list[int]) -> DynamicState:
        # Imported here: the registry module imports the algorithm modules, which import this one.
        from ppdp.engine.methods.microaggregation.algorithms import Params

        params = Params(k=state.k, alpha=state.alpha, beta=state.beta, seed=state.seed)
        new = self.first_release(enc, sa, ids, state.catalogue, params)
        return dataclasses.replace(new, step=state.step + 1)

    def insert(self, state: DynamicState, record: NewRecord) -> DynamicState:
        """Re-cluster the current records plus ``record``."""
        if int(record.id) in state.real_row:
            raise DataError(f"Record id {record.id} is already in the release. Hint: use modify() to change it.")
        sa = dynamic._check_sa(state, record.sa)
        dynamic._check_qids(state, record.qids)
        enc, sas, ids = current_table(state)
        return self._recluster(state, append_row(enc, record.qids), np.append(sas, sa), ids + [int(record.id)])

    def delete(self, state: DynamicState, record_id: int) -> DynamicState:
        """Re-cluster the current records without ``record_id``."""
        state._row(record_id)
        enc, sas, ids = current_table(state)
        keep = np.array([i != int(record_id) for i in ids])
        if keep.sum() < state.k:
            raise DataError(f"Deleting record {record_id} would leave {int(keep.sum())} records, fewer than K = {state.k}. "
                            "Hint: a release needs at least K records.")
        return self._recluster(state, subset(enc, np.flatnonzero(keep)), sas[keep],
                               [i for i, kept in zip(ids, keep, strict=True) if kept])

    def modify(self, state: DynamicState, record_id: int, new_values: Modification) -> DynamicState:
        """Re-cluster the current records with the record's new QIDs and/or SA."""
        if new_values.qids is None and new_values.sa is None:
            raise DataError(f"The modification of record {record_id} changes nothing. Hint: give new QIDs, a new SA, or both.")
        state._row(record_id)
        enc, sas, ids = current_table(state)
        at = ids.index(int(record_id))
        if new_values.qids is not None:
            dynamic._check_qids(state, new_values.qids)
            for name in ("cont", "sem", "nom", "ordn"):
                getattr(enc, name)[at] = getattr(new_values.qids, name)  # enc is a fresh copy (fancy indexing)
        if new_values.sa is not None:
            sas[at] = dynamic._check_sa(state, new_values.sa)
        return self._recluster(state, enc, sas, ids)


class Centroids:
    """Stacked centroids of clusters (one row each), updated one cluster at a time."""

    def __init__(self, enc: EncodedQids, seeds: np.ndarray):
        self.enc = enc
        self.arrays = [enc.cont[seeds].copy(), enc.sem[seeds].copy(), enc.nom[seeds].copy(), enc.ordn[seeds].copy()]

    def update(self, j: int, members: list[int]) -> None:
        for arr, val in zip(self.arrays, encoded_centroid(self.enc, np.asarray(members)), strict=True):
            arr[j] = val

    def of(self, j: int):
        return tuple(a[j] for a in self.arrays)

    def distances(self, row: int, which: np.ndarray | None = None) -> np.ndarray:
        pts = self.arrays if which is None else [a[which] for a in self.arrays]
        return distances_to_points(self.enc, point(self.enc, row), tuple(pts))


_TIE = 1e-12


def greedy_sa_groups(enc: EncodedQids, sa_codes: np.ndarray, n_values: int, k: int, seed: int,
                     cost_after: Callable[[np.ndarray], np.ndarray], cost_now: Callable[[np.ndarray], float],
                     target: float) -> list[list[int]]:
    """The greedy clustering the DRASL paper describes for its SA-criterion baselines: each group
    starts with a random unassigned record and repeatedly takes the record that best serves the
    criterion, until it has at least K records and meets the criterion.

    ``cost_after(counts)`` gives, per SA code v, the group's cost after adding a record with SA v
    (``counts`` are the group's SA counts; lower is better), ``cost_now(counts)`` its cost now, and
    the criterion is met at ``cost_now <= target``. Each step takes, among the unassigned records
    whose SA has the lowest cost (within 1e-12), the one nearest to the group's centroid (eq. 6;
    ties to the first row). A group of at least K stops early when no unassigned record lowers
    its cost. The fewer than K records left at the end join, one at a time, the group with the
    lowest cost after adding them (ties: nearest centroid, then first group).
    """
    sa_codes = np.asarray(sa_codes, dtype=np.int64)
    rng = np.random.default_rng(seed)
    unassigned = np.ones(enc.n, dtype=bool)
    free_counts = np.bincount(sa_codes, minlength=n_values)
    remaining = enc.n
    groups: list[list[int]] = []
    counts_of: list[np.ndarray] = []

    def take(row: int, members: list[int], counts: np.ndarray) -> None:
        nonlocal remaining
        members.append(row)
        unassigned[row] = False
        counts[sa_codes[row]] += 1
        free_counts[sa_codes[row]] -= 1
        remaining -= 1

    while remaining >= k:
        free = np.flatnonzero(unassigned)
        members: list[int] = []
        counts = np.zeros(n_values, dtype=np.int64)
        take(int(free[rng.integers(free.size)]), members, counts)
        while remaining > 0:
            cost = cost_after(counts)
            present = free_counts > 0
            best = cost[present].min()
            if len(members) >= k:
                now = cost_now(counts)
                if now <= target + _TIE or best >= now - _TIE:
                    break
            good = present & (cost <= best + _TIE)
            free = np.flatnonzero(unassigned)
            cand = free[good[sa_codes[free]]]
            d = distances(enc, encoded_centroid(enc, np.asarray(members)), cand)
            take(int(cand[int(np.argmin(d))]), members, counts)
        groups.append(members)
        counts_of.append(counts)
    left = np.flatnonzero(unassigned)
    if left.size:
        cents = Centroids(enc, np.array([g[0] for g in groups]))
        for j, g in enumerate(groups):
            cents.update(j, g)
        for r in map(int, left):
            cost = np.array([cost_after(c)[sa_codes[r]] for c in counts_of])
            which = np.flatnonzero(cost <= cost.min() + _TIE)
            j = int(which[int(np.argmin(cents.distances(r, which)))])
            groups[j].append(r)
            counts_of[j][sa_codes[r]] += 1
            cents.update(j, groups[j])
    return groups
