"""DRASL dynamic updates (Alg. 2-5, docs/design/paper_notes.md §6): insertion, deletion and modification on
an in-memory state of groups, with forged records. Pure functions, no database.

The algorithm figures are missing from the paper's text; the prose fixes the rules below. Where
the prose leaves a choice open, the choice is marked **(ours)**.

State. Every record (real or forged) is one row of an encoded pool (``EncodedQids`` layout plus
an SA code). A group is its real member rows and its forged rows. Real records are addressed by
their caller-given id; forged records by ids from a private counter (a separate namespace: the
published surrogate ids are the pipeline's business). The metric sees the group *as published*:
centroid, SA counts, entropy and linkage are over real + forged members **(ours)**, because an
attacker sees forged rows as ordinary rows.

Alg. 2 (insert): "using the improved microaggregation metric against synonymous linkage
(Definition 11) as the criteria to find a best equivalent group for the insert records": the new
record r joins the group with the highest
``f_link(G, G + r) = -alpha (H(G) - H(G + r)) - beta d(mu_G, r) - alpha Pr_SA(G + r)``
(eq. 14, sign as in entropy.py; ties to the first group), then Alg. 3 runs on that group with r.

Alg. 3 (protect), quoting the paper: "Lines 3-4 deal with the situation that there is already a
forged record fg_r in the group gid_j. The algorithm randomly changes the sensitive value of the
forged record into a new value D_SA_random in D_SA, so that the sensitive value of the forged
record and the new record are different and have no synonymous linkage
(Link_SA(D_SA_random, SA_r) = 0). Lines 5-6 aims at the situation that there is no forged record
in the group gid_j. The algorithm generates a new forged record fg_r in gid_j with a random
sensitive value D_SA_random in D_SA" with the same condition. As implemented:

- D_SA is the catalogue's value list; D_SA_random is drawn uniformly from the values whose
  catalogue category differs from SA_r's (Link = 0 means different value *and* category).
- A group therefore holds at most one forged record: Alg. 3 rewrites it rather than adding one.
- A new forged record's QIDs **(ours)**: a copy of the QIDs of the group's real member closest
  to the group centroid (eq. 6, first on ties). The paper's Example 4 publishes fg_r with the
  group's generalized values ([21-23], [12***-15***]); any values inside the group's
  generalization give that, and a real member's values are always domain values (a centroid's
  mean age need not be). ``ForgedRecord.template`` names that member so a caller can copy its
  raw values; the copy is not updated if the member later leaves.

Alg. 4 (delete): remove r from its group g. If g still has at least K members (real + forged),
run Alg. 3 on g with the deleted r (the paper: "Algorithm 3 will be recalled and the deleted
record r and equivalent group gid_j will be used as the input"). Otherwise delete g, and take
its real records out one at a time in random order; each joins the best remaining group by
f_link and Alg. 3 runs on that group with it. The dissolved group's forged record is dropped
**(ours)**: it stands for nobody, and Alg. 3 on the receiving groups covers every moved record.
If g is the only group it cannot dissolve **(ours)**: Alg. 3 runs on it, and if it still has
fewer than K members the deletion is refused (DataError).

Alg. 5 (modify): "If the modification happened on quasi-identifiers, the old record should be
deleted by calling back Algorithm 4 and the modified new record should be inserted into a most
suitable equivalent group by calling back Algorithm 2 ... If the modification happened on
sensitive value, Algorithm 3 will be called back": a QID change (with or without an SA change)
is ``delete`` then ``insert`` under the same id; an SA-only change rewrites the record's SA in
place and runs Alg. 3 on its group with the new SA.

Variant for the DPP baseline (``linkage=False, forge_unlinked=False`` on the state): the metric
is eq. 9's f (no ``- alpha Pr_SA`` term) and Alg. 3's forged value is drawn uniformly from the
values *different* from SA_r, with no catalogue condition: Situations 1 and 2 of the paper, the
method of its ref. [20] that DRASL improves on. DRASL's defaults are ``True, True``.

Randomness is a pure function of the state: each operation draws from
``np.random.default_rng([seed, step])`` and increments ``step``.

Speed: the best-group search scores every group at once (the Numba kernel
``_kernels.distances_to_many`` from the record to all group centroids; entropy and linkage from
a groups x values count matrix), so one operation costs O(groups x values) array work plus the
copy of the state; ``group_scores_reference`` is its plain-Python twin, checked by the tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp.engine.methods.microaggregation import _kernels
from ppdp.engine.methods.microaggregation.distances import (
    EncodedQids,
    QidSchema,
    encoded_centroid,
    ordinal_phi,
)
from ppdp.engine.methods.microaggregation.entropy import ALPHA, BETA, entropy
from ppdp.engine.methods.microaggregation.linkage import SensitiveCatalogue, linkage_probability
from ppdp.errors import DataError

_TIE = 1e-12


@dataclass(frozen=True, eq=False)
class EncodedRow:
    """One record's QIDs in the units of ``EncodedQids`` (one row of cont, sem, nom, ordn)."""

    cont: np.ndarray
    sem: np.ndarray
    nom: np.ndarray
    ordn: np.ndarray

    @classmethod
    def of(cls, enc: EncodedQids, row: int) -> EncodedRow:
        """Row ``row`` of an encoded table."""
        return cls(enc.cont[row].copy(), enc.sem[row].copy(), enc.nom[row].copy(), enc.ordn[row].copy())


@dataclass(frozen=True, eq=False)
class NewRecord:
    """A record to insert: its id (unique among the state's real records), QIDs and SA code."""

    id: int
    qids: EncodedRow
    sa: int


@dataclass(frozen=True, eq=False)
class Modification:
    """New values of a record: QIDs, SA code, or both (at least one)."""

    qids: EncodedRow | None = None
    sa: int | None = None


@dataclass(frozen=True)
class Group:
    """A group: stable id, pool rows of its real members and of its forged records."""

    gid: int
    real: tuple[int, ...]
    forged: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return len(self.real) + len(self.forged)

    @property
    def rows(self) -> tuple[int, ...]:
        return self.real + self.forged


@dataclass(frozen=True, eq=False)
class ForgedRecord:
    """A forged record as the caller publishes it: id, group, QIDs, SA code, and the real record
    whose QIDs it copied (private; never published)."""

    id: int
    gid: int
    qids: EncodedRow
    sa: int
    template: int


@dataclass(frozen=True, eq=False)
class DynamicState:
    """Groups of a microaggregation release with their forged records (see the module docstring).

    pool           every row ever added (real and forged), ``EncodedQids`` layout
    sa             SA code of each pool row
    row_ids        id of each pool row (real id, or forged id for forged rows)
    real_row       real id -> pool row, for the records currently in a group
    groups         the current groups, in order (group i <-> row i of centroids and counts)
    centroids      (cont, sem, nom, ordn): per group, the centroid of its members (``encoded_centroid``)
    counts         int64 [groups, catalogue values]: SA counts per group, forged included
    stats          per group, cached from ``counts`` for the scoring: (sum of c log10 c over the
                   values, Tlink of eq. 12, int64 [groups, categories] category counts)
    forged_template  forged pool row -> real id whose QIDs it copied
    forged_created   forged records created so far; ``forged_rewrites`` forged SA values changed
    linkage        the metric has the ``- alpha Pr_SA`` term (eq. 14; False: eq. 9, for DPP)
    forge_unlinked Alg. 3 draws forged values with Link = 0 to SA_r (False: any other value, for DPP)
    """

    pool: EncodedQids
    sa: np.ndarray
    row_ids: np.ndarray
    real_row: dict[int, int]
    groups: tuple[Group, ...]
    centroids: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    counts: np.ndarray
    stats: tuple[np.ndarray, np.ndarray, np.ndarray]
    forged_template: dict[int, int]
    catalogue: SensitiveCatalogue
    k: int
    alpha: float = ALPHA
    beta: float = BETA
    seed: int = 0
    step: int = 0
    next_forged_id: int = 0
    forged_created: int = 0
    forged_rewrites: int = 0
    linkage: bool = True
    forge_unlinked: bool = True

    @property
    def forged_count(self) -> int:
        """Forged records currently in the release."""
        return sum(len(g.forged) for g in self.groups)

    @property
    def real_count(self) -> int:
        return len(self.real_row)

    def group_of(self, record_id: int) -> int:
        """Index (in ``groups``) of the group holding real record ``record_id``."""
        row = self._row(record_id)
        for i, g in enumerate(self.groups):
            if row in g.real:
                return i
        raise AssertionError("every real record is in a group")  # pragma: no cover

    def member_ids(self, index: int) -> tuple[int, ...]:
        """Real ids of group ``index``."""
        return tuple(int(self.row_ids[r]) for r in self.groups[index].real)

    def forged_records(self) -> tuple[ForgedRecord, ...]:
        """Every forged record currently published, group by group."""
        out = []
        for g in self.groups:
            for r in g.forged:
                out.append(ForgedRecord(int(self.row_ids[r]), g.gid, _row_of(self.pool, r), int(self.sa[r]),
                                        self.forged_template[r]))
        return tuple(out)

    def _row(self, record_id: int) -> int:
        try:
            return self.real_row[int(record_id)]
        except KeyError:
            raise DataError(f"Record id {record_id} is not in the release. "
                            "Hint: delete or modify only records that are published (forged records cannot be).") from None


def _row_of(pool: EncodedQids, row: int) -> EncodedRow:
    return EncodedRow.of(pool, row)


def from_grouping(enc: EncodedQids, sa_codes: np.ndarray, ids: Sequence[int], groups: Sequence[Sequence[int]],
                  catalogue: SensitiveCatalogue, *, k: int, alpha: float = ALPHA, beta: float = BETA,
                  seed: int = 0, linkage: bool = True, forge_unlinked: bool = True) -> DynamicState:
    """The state after a first release: ``groups`` are row indices of ``enc`` (``Grouping.groups``
    of ``cluster.first_release``), ``ids`` the records' ids (one per row), no forged records.
    Group ids (``Group.gid``) are the groups' positions."""
    return restore(enc, sa_codes, ids, groups, catalogue, k=k, alpha=alpha, beta=beta, seed=seed, linkage=linkage,
                   forge_unlinked=forge_unlinked)


def restore(enc: EncodedQids, sa_codes: np.ndarray, ids: Sequence[int], groups: Sequence[Sequence[int]],
            catalogue: SensitiveCatalogue, *, k: int, gids: Sequence[int] | None = None,
            forged: Sequence[ForgedRecord] = (), alpha: float = ALPHA, beta: float = BETA, seed: int = 0,
            step: int = 0, forged_created: int = 0, forged_rewrites: int = 0, linkage: bool = True,
            forge_unlinked: bool = True) -> DynamicState:
    """A state rebuilt from what a caller stored after an earlier version: the current real
    records (``enc`` rows, ``sa_codes``, ``ids``), ``groups`` as row indices with their ``gids``,
    the forged records (``DynamicState.forged_records()``, matched to groups by gid) and the
    counters (``step`` continues the random stream, so a restored state makes the same draws as
    the state it was stored from)."""
    if k < 1:
        raise DataError(f"K must be at least 1, got {k}. Hint: K is the minimum group size.")
    ids = [int(i) for i in ids]
    if len(ids) != enc.n or len(set(ids)) != len(ids):
        raise DataError(f"Expected {enc.n} distinct record ids, got {len(ids)} ({len(set(ids))} distinct). "
                        "Hint: give one unique id per encoded row.")
    gids = list(range(len(groups))) if gids is None else [int(g) for g in gids]
    if len(gids) != len(groups) or len(set(gids)) != len(gids):
        raise DataError(f"Expected {len(groups)} distinct group ids, got {len(gids)}. Hint: give one id per group.")
    sa_codes = np.asarray(sa_codes, dtype=np.int64)
    placed = [r for g in groups for r in g]
    if len(set(placed)) != len(placed):
        raise DataError("A record is in two groups. Hint: pass each record's group once.")
    forged_of: dict[int, list[ForgedRecord]] = {g: [] for g in gids}
    for f in forged:
        if f.gid not in forged_of:
            raise DataError(f"Forged record {f.id} belongs to group {f.gid}, which is not among the groups. "
                            "Hint: store forged records with the groups they belong to.")
        forged_of[f.gid].append(f)
    small = [(gid, len(g) + len(forged_of[gid])) for gid, g in zip(gids, groups, strict=True)
             if len(g) + len(forged_of[gid]) < k]
    if small:
        raise DataError(f"Group {small[0][0]} has {small[0][1]} rows, fewer than K = {k}. "
                        "Hint: pass the groups of first_release (or of a stored state) with the same K.")
    state = DynamicState(
        pool=enc, sa=sa_codes.copy(), row_ids=np.asarray(ids, dtype=np.int64),
        real_row={ids[r]: int(r) for r in placed}, groups=(),
        centroids=_empty_centroids(enc, 0), counts=np.zeros((0, len(catalogue.values)), dtype=np.int64),
        stats=_stats(np.zeros((0, len(catalogue.values)), dtype=np.int64), catalogue),
        forged_template={}, catalogue=catalogue, k=k, alpha=alpha, beta=beta, seed=seed, step=step,
        next_forged_id=max((f.id + 1 for f in forged), default=0), forged_created=forged_created,
        forged_rewrites=forged_rewrites, linkage=linkage, forge_unlinked=forge_unlinked)
    w = _Work(state)
    group_list = []
    for gid, g in zip(gids, groups, strict=True):
        rows = []
        for f in forged_of[gid]:
            rows.append(w.add_row(f.qids, _check_sa(state, f.sa), f.id))
            w.forged_template[rows[-1]] = int(f.template)
        group_list.append(Group(gid, tuple(int(r) for r in g), tuple(rows)))
    extra = np.asarray(w.extra_ids, dtype=np.int64)
    state = dataclasses.replace(state, pool=w.pool, sa=w.sa, row_ids=np.concatenate([state.row_ids, extra]),
                                groups=tuple(group_list), forged_template=w.forged_template)
    return _rebuild_group_arrays(state)


def _empty_centroids(enc: EncodedQids, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (np.zeros((n, enc.cont.shape[1])), np.zeros((n, enc.sem.shape[1]), dtype=np.int32),
            np.zeros((n, enc.nom.shape[1]), dtype=np.int32), np.zeros((n, enc.ordn.shape[1])))


def _rebuild_group_arrays(state: DynamicState) -> DynamicState:
    n = len(state.groups)
    cents = _empty_centroids(state.pool, n)
    counts = np.zeros((n, len(state.catalogue.values)), dtype=np.int64)
    for i, g in enumerate(state.groups):
        for arr, val in zip(cents, encoded_centroid(state.pool, np.asarray(g.rows)), strict=True):
            arr[i] = val
        np.add.at(counts[i], state.sa[list(g.rows)], 1)
    return dataclasses.replace(state, centroids=cents, counts=counts, stats=_stats(counts, state.catalogue))


def _stats(counts: np.ndarray, catalogue: SensitiveCatalogue) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sum c log10 c, Tlink, category counts) per row of a counts matrix (see ``DynamicState``)."""
    counts = np.atleast_2d(counts)
    cat_counts = np.zeros((counts.shape[0], len(catalogue.categories)), dtype=np.int64)
    np.add.at(cat_counts.T, catalogue.category_code, counts.T)
    # Tlink = 2 * (pairs of equal values) + (pairs in one category - pairs of equal values).
    tlink = _pairs(counts).sum(axis=1) + _pairs(cat_counts).sum(axis=1)
    return _xlogx(counts).sum(axis=1), tlink, cat_counts


# --- scoring ------------------------------------------------------------------------------


def _xlogx(c: np.ndarray) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    return np.where(c > 0, c * np.log10(np.where(c > 0, c, 1.0)), 0.0)


def _pairs(c: np.ndarray) -> np.ndarray:
    return c * (c - 1) // 2


def group_scores(state: DynamicState, qids: EncodedRow, sa: int) -> np.ndarray:
    """f_link (eq. 14, higher is better) of adding a record (``qids``, SA code ``sa``) to each
    group, vectorized over the groups; f (eq. 9) when the state has ``linkage=False``."""
    pool = state.pool
    c_cont, c_sem, c_nom, c_ord = state.centroids
    d = _kernels.distances_to_many(np.asarray(qids.cont, dtype=np.float64), np.asarray(qids.sem, dtype=np.int32),
                                   np.asarray(qids.nom, dtype=np.int32), np.asarray(qids.ordn, dtype=np.float64),
                                   c_cont, c_sem, c_nom, c_ord, pool.sem_table, pool.n_qids)
    counts = state.counts
    s, tlink, cat_counts = state.stats
    n = counts.sum(axis=1).astype(np.float64)
    h_before = np.log10(n) - s / n
    c = counts[:, sa]
    n1 = n + 1.0
    h_after = np.log10(n1) - (s - _xlogx(c) + _xlogx(c + 1.0)) / n1
    if not state.linkage:
        return -state.alpha * (h_before - h_after) - state.beta * d
    # A record with SA s adds 2 links per equal value and 1 per other value of its category.
    added = c + cat_counts[:, state.catalogue.category_code[sa]]
    pr_after = (tlink + added) / (n1 * (n1 - 1.0))
    return -state.alpha * (h_before - h_after) - state.beta * d - state.alpha * pr_after


def group_scores_reference(state: DynamicState, qids: EncodedRow, sa: int) -> list[float]:
    """Plain-Python twin of ``group_scores``: per group, the centroid from its members' rows, eq. 6
    term by term, entropy and Pr from the lists of SA values (entropy.py, linkage.py)."""
    pool, cat = state.pool, state.catalogue
    out = []
    for g in state.groups:
        rows = list(g.rows)
        cc, cs, cn, co = encoded_centroid(pool, np.asarray(rows))
        total = sum(abs(float(qids.cont[q]) - float(cc[q])) for q in range(len(cc)))
        total += sum(float(pool.sem_table[q, int(qids.sem[q]), int(cs[q])]) for q in range(len(cs)))
        if len(cn):
            total += sum(1 for q in range(len(cn)) if int(qids.nom[q]) != int(cn[q])) / len(cn)
        total += sum(abs(float(qids.ordn[q]) - float(co[q])) for q in range(len(co)))
        d = total / pool.n_qids
        before = [cat.values[int(state.sa[r])] for r in rows]
        after = before + [cat.values[sa]]
        f = -state.alpha * (entropy(before) - entropy(after)) - state.beta * d
        out.append(f - state.alpha * linkage_probability(after, cat) if state.linkage else f)
    return out


def _best(scores: np.ndarray) -> int:
    scores = np.asarray(scores, dtype=np.float64)
    return int(np.flatnonzero(scores >= scores.max() - _TIE)[0])


# --- a mutable working copy used inside one operation ------------------------------------


class _Work:
    """The state's fields copied once per operation and changed in place; ``freeze`` returns
    the new state. Keeps the public functions pure without copying per sub-step."""

    def __init__(self, state: DynamicState):
        self.s = state
        self.rng = np.random.default_rng([state.seed, state.step])
        self.pool = state.pool
        self.sa = state.sa
        self.sa_copied = False
        self.extra_ids: list[int] = []
        self.real_row = dict(state.real_row)
        self.groups = list(state.groups)
        self.cents = [a.copy() for a in state.centroids]
        self.counts = state.counts.copy()
        self.stats = [a.copy() for a in state.stats]
        self.forged_template = dict(state.forged_template)
        self.next_forged_id = state.next_forged_id
        self.forged_created = state.forged_created
        self.forged_rewrites = state.forged_rewrites

    # pool rows ----------------------------------------------------------------
    def add_row(self, qids: EncodedRow, sa: int, row_id: int) -> int:
        """Append one row to the pool (a copy: the previous state's arrays stay as they were)."""
        pool = self.pool
        row = pool.n

        def stack(a: np.ndarray, v: np.ndarray) -> np.ndarray:
            return np.vstack([a, np.asarray(v, dtype=a.dtype).reshape(1, a.shape[1])])

        self.pool = dataclasses.replace(pool, cont=stack(pool.cont, qids.cont), sem=stack(pool.sem, qids.sem),
                                        nom=stack(pool.nom, qids.nom), ordn=stack(pool.ordn, qids.ordn))
        self.sa = np.append(self.sa, np.int64(sa))
        self.sa_copied = True
        self.extra_ids.append(int(row_id))
        return row

    def set_sa(self, row: int, sa: int) -> None:
        if not self.sa_copied:
            self.sa = self.sa.copy()
            self.sa_copied = True
        self.sa[row] = sa

    # groups -------------------------------------------------------------------
    def view(self) -> DynamicState:
        """A state over the working copy, for scoring (group arrays are the working ones)."""
        return dataclasses.replace(self.s, pool=self.pool, sa=self.sa, groups=tuple(self.groups),
                                   centroids=self.centroid_arrays(), counts=self.counts,
                                   stats=self.stat_arrays())

    def centroid_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The working centroids as ``DynamicState.centroids`` holds them: (cont, sem, nom, ordn)."""
        cont, sem, nom, ordn = self.cents
        return cont, sem, nom, ordn

    def stat_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The working stats as ``DynamicState.stats`` holds them."""
        s, tlink, cat_counts = self.stats
        return s, tlink, cat_counts

    def refresh(self, i: int) -> None:
        """Recompute group i's centroid and SA counts from its rows."""
        g = self.groups[i]
        for arr, val in zip(self.cents, encoded_centroid(self.pool, np.asarray(g.rows)), strict=True):
            arr[i] = val
        self.counts[i] = np.bincount(self.sa[list(g.rows)], minlength=self.counts.shape[1])
        for arr, val in zip(self.stats, _stats(self.counts[i], self.s.catalogue), strict=True):
            arr[i] = val[0]

    def append_group(self, group: Group) -> None:
        """Add a group at the end, with its centroid, SA counts and stats."""
        self.groups.append(group)
        self.cents = [np.vstack([a, np.zeros((1, *a.shape[1:]), dtype=a.dtype)]) for a in self.cents]
        self.counts = np.vstack([self.counts, np.zeros((1, self.counts.shape[1]), dtype=self.counts.dtype)])
        self.stats = [np.concatenate([a, np.zeros((1, *a.shape[1:]), dtype=a.dtype)]) for a in self.stats]
        self.refresh(len(self.groups) - 1)

    def remove_group(self, i: int) -> Group:
        g = self.groups.pop(i)
        self.cents = [np.delete(a, i, axis=0) for a in self.cents]
        self.counts = np.delete(self.counts, i, axis=0)
        self.stats = [np.delete(a, i, axis=0) for a in self.stats]
        for r in g.forged:
            del self.forged_template[r]
        return g

    def best_group(self, qids: EncodedRow, sa: int) -> int:
        return _best(group_scores(self.view(), qids, sa))

    def protect(self, i: int, sa_r: int) -> None:
        """Alg. 3 on group i for a record with SA code ``sa_r``."""
        cat = self.s.catalogue
        codes = cat.category_code if self.s.forge_unlinked else np.arange(len(cat.values))
        candidates = np.flatnonzero(codes != codes[sa_r])
        if candidates.size == 0 and not self.s.forge_unlinked:
            raise DataError(f"The catalogue lists only {cat.values[sa_r]!r}, so no forged value can differ from it. "
                            "Hint: the catalogue needs at least two values.")
        if candidates.size == 0:
            raise DataError(f"Every catalogued sensitive value is synonymous with {cat.values[sa_r]!r}, "
                            "so no forged value can hide it. Hint: the catalogue needs at least two categories.")
        g = self.groups[i]
        if g.forged:
            # "changes the sensitive value of the forged record into a new value": redrawing the
            # value it has would leave the newcomer's value the group's only visible change
            # (the attack harness found such draws revealing the exact value)
            fresh = candidates[candidates != self.sa[g.forged[0]]]
            candidates = fresh if fresh.size else candidates
        value = int(candidates[self.rng.integers(candidates.size)])
        if g.forged:
            self.set_sa(g.forged[0], value)
            self.forged_rewrites += 1
        else:
            real = np.asarray(g.real, dtype=np.int64)
            cc, cs, cn, co = (a[i] for a in self.cents)
            d = _kernels.distances_to_rows(cc, cs, cn, co, self.pool.cont, self.pool.sem, self.pool.nom,
                                           self.pool.ordn, self.pool.sem_table, self.pool.n_qids, real)
            template = int(real[int(np.argmin(d))])
            fid = self.next_forged_id
            self.next_forged_id += 1
            row = self.add_row(_row_of(self.pool, template), value, fid)
            self.forged_template[row] = self.row_id(template)
            self.groups[i] = dataclasses.replace(g, forged=g.forged + (row,))
            self.forged_created += 1
        self.refresh(i)

    def row_id(self, row: int) -> int:
        base = self.s.row_ids
        return int(base[row]) if row < base.size else self.extra_ids[row - base.size]

    def add_to_group(self, i: int, row: int) -> None:
        g = self.groups[i]
        self.groups[i] = dataclasses.replace(g, real=g.real + (row,))
        self.refresh(i)

    def find_group(self, row: int) -> int:
        for i, g in enumerate(self.groups):
            if row in g.real:
                return i
        raise AssertionError("every real record is in a group")  # pragma: no cover

    def freeze(self) -> DynamicState:
        extra = np.asarray(self.extra_ids, dtype=np.int64)
        row_ids = np.concatenate([self.s.row_ids, extra]) if extra.size else self.s.row_ids
        return dataclasses.replace(
            self.s, pool=self.pool, sa=self.sa, row_ids=row_ids, real_row=self.real_row,
            groups=tuple(self.groups), centroids=self.centroid_arrays(), counts=self.counts,
            stats=self.stat_arrays(), forged_template=self.forged_template, step=self.s.step + 1, next_forged_id=self.next_forged_id,
            forged_created=self.forged_created, forged_rewrites=self.forged_rewrites)


# --- the operations -----------------------------------------------------------------------


def encode_record(state: DynamicState, schema: QidSchema, values: Mapping[str, Any]) -> tuple[DynamicState, EncodedRow]:
    """One new record's raw QID values (column -> value) in the units of the state's pool, with
    the first release's ``schema`` (``fit_schema``): continuous values scaled by the first
    release's range (values outside it give coordinates outside [0, 1], which eq. 1 allows),
    semantic values by leaf code, ordinal values by phi. A nominal value the release has not
    seen gets the next free code; the returned state records it in ``pool.nom_values``."""
    missing = [c for c in schema.columns if c not in values]
    if missing:
        raise DataError(f"The new record has no value for QID {missing[0]!r}. Hint: give every QID column.")
    cont = []
    for k in schema.of_kind("continuous"):
        lo, hi = schema.ranges[k.column]
        try:
            x = float(values[k.column])
        except (TypeError, ValueError):
            raise DataError(f"Continuous QID {k.column!r} has the value {values[k.column]!r}. Hint: give a number.") from None
        if not np.isfinite(x):
            raise DataError(f"Continuous QID {k.column!r} has the value {x}. Hint: remove missing values first.")
        cont.append(0.0 if hi <= lo else (x - lo) / (hi - lo))
    sem = []
    for k in schema.of_kind("semantic"):
        code = k.tree.leaf_code.get(str(values[k.column]))
        if code is None:
            raise DataError(f"Value {values[k.column]!r} of {k.column!r} is not a leaf of its hierarchy ({k.tree.source}). "
                            "Hint: add it to the hierarchy file.")
        sem.append(code)
    nom, domains = [], list(state.pool.nom_values)
    for i, k in enumerate(schema.of_kind("nominal")):
        v = values[k.column]
        if v not in domains[i]:
            domains[i] = domains[i] + (v,)
        nom.append(domains[i].index(v))
    ordn = []
    for k in schema.of_kind("ordinal"):
        order = schema.orders[k.column]
        if values[k.column] not in order:
            raise DataError(f"Ordinal QID {k.column!r} has the value {values[k.column]!r}, outside its order. "
                            "Hint: list every value in 'order'.")
        ordn.append(ordinal_phi(order.index(values[k.column]) + 1, len(order)))
    row = EncodedRow(np.array(cont, dtype=np.float64), np.array(sem, dtype=np.int32), np.array(nom, dtype=np.int32),
                     np.array(ordn, dtype=np.float64))
    if tuple(domains) != state.pool.nom_values:
        state = dataclasses.replace(state, pool=dataclasses.replace(state.pool, nom_values=tuple(domains)))
    return state, row


def _check_sa(state: DynamicState, sa: int) -> int:
    sa = int(sa)
    if not 0 <= sa < len(state.catalogue.values):
        raise DataError(f"SA code {sa} is not a value of the catalogue ({len(state.catalogue.values)} values). "
                        "Hint: encode sensitive values with catalogue.code().")
    return sa


def _check_qids(state: DynamicState, qids: EncodedRow) -> None:
    pool = state.pool
    for name, width in (("cont", pool.cont.shape[1]), ("sem", pool.sem.shape[1]), ("nom", pool.nom.shape[1]),
                        ("ordn", pool.ordn.shape[1])):
        if np.asarray(getattr(qids, name)).shape != (width,):
            raise DataError(f"The new record's {name!r} QIDs have shape {np.asarray(getattr(qids, name)).shape}, "
                            f"the release has {width}. Hint: encode new records with the release's schema.")
    sem = np.asarray(qids.sem)
    # Semantic codes index the eq. 2 table in the Numba kernel, which does not bounds-check.
    if sem.size and (sem.min() < 0 or np.any(sem >= pool.sem_table.shape[1])):
        raise DataError("The new record has a semantic QID code outside its hierarchy. "
                        "Hint: encode new records with the release's schema (hierarchy leaf codes).")


def _insert(w: _Work, record: NewRecord) -> None:
    sa = _check_sa(w.s, record.sa)
    _check_qids(w.s, record.qids)
    if int(record.id) in w.real_row:
        raise DataError(f"Record id {record.id} is already in the release. Hint: use modify() to change it.")
    if not w.groups:
        raise DataError("The release has no group to insert into. Hint: start from a first release.")
    row = w.add_row(record.qids, sa, record.id)
    w.real_row[int(record.id)] = row
    i = w.best_group(record.qids, sa)
    w.add_to_group(i, row)
    w.protect(i, sa)


def _delete(w: _Work, record_id: int) -> None:
    try:
        row = w.real_row.pop(int(record_id))
    except KeyError:
        raise DataError(f"Record id {record_id} is not in the release. "
                        "Hint: delete or modify only records that are published (forged records cannot be).") from None
    i = w.find_group(row)
    g = w.groups[i]
    w.groups[i] = dataclasses.replace(g, real=tuple(r for r in g.real if r != row))
    sa_r = int(w.sa[row])
    k = w.s.k
    keeps = w.groups[i].size >= k and bool(w.groups[i].real)  # a group of forged rows only stands for nobody
    if keeps or len(w.groups) == 1:
        if not w.groups[i].real:
            raise DataError(f"Deleting record {record_id} would leave the release without records. "
                            "Hint: a release needs at least K records.")
        w.refresh(i)
        w.protect(i, sa_r)
        if w.groups[i].size < k:
            raise DataError(f"Deleting record {record_id} would leave {w.groups[i].size} rows, fewer than K = {k}. "
                            "Hint: a release needs at least K records.")
        return
    dissolved = w.remove_group(i)
    for row_m in w.rng.permutation(np.asarray(dissolved.real, dtype=np.int64)):
        row_m = int(row_m)
        qids, sa_m = _row_of(w.pool, row_m), int(w.sa[row_m])
        j = w.best_group(qids, sa_m)
        w.add_to_group(j, row_m)
        w.protect(j, sa_m)


def insert(state: DynamicState, record: NewRecord) -> DynamicState:
    """Alg. 2 + 3: the record joins the group with the best f_link, then Alg. 3 on that group."""
    w = _Work(state)
    _insert(w, record)
    return w.freeze()


def delete(state: DynamicState, record_id: int) -> DynamicState:
    """Alg. 4: remove a real record; Alg. 3 if its group keeps K members, else dissolve the group."""
    w = _Work(state)
    _delete(w, record_id)
    return w.freeze()


def modify(state: DynamicState, record_id: int, new_values: Modification) -> DynamicState:
    """Alg. 5: a QID change is delete + insert under the same id (the new SA, if given, goes with
    it); an SA-only change rewrites the SA in place and runs Alg. 3 on the record's group."""
    if new_values.qids is None and new_values.sa is None:
        raise DataError(f"The modification of record {record_id} changes nothing. Hint: give new QIDs, a new SA, or both.")
    w = _Work(state)
    row = state._row(record_id)
    if new_values.qids is not None:
        sa = int(state.sa[row]) if new_values.sa is None else _check_sa(state, new_values.sa)
        _delete(w, record_id)
        _insert(w, NewRecord(int(record_id), new_values.qids, sa))
    elif new_values.sa is not None:  # (neither given was rejected above)
        sa = _check_sa(state, new_values.sa)
        i = w.find_group(row)
        w.set_sa(row, sa)
        w.refresh(i)
        w.protect(i, sa)
    return w.freeze()


def add_groups(state: DynamicState, records: Sequence[NewRecord], groups: Sequence[Sequence[int]]) -> DynamicState:
    """New groups made only of new records (``groups``: indices into ``records``), each of at least
    K; no forged record is needed, since a new group has no earlier version to be compared with.
    Group ids continue after the largest one in use **(ours)**."""
    w = _Work(state)
    next_gid = max((g.gid for g in w.groups), default=-1) + 1
    for members in groups:
        if len(members) < state.k:
            raise DataError(f"A new group has {len(members)} records, fewer than K = {state.k}. Hint: group at least K new records.")
        rows = []
        for m in members:
            r = records[m]
            _check_qids(w.s, r.qids)
            if int(r.id) in w.real_row:
                raise DataError(f"Record id {r.id} is already in the release. Hint: use modify() to change it.")
            rows.append(w.add_row(r.qids, _check_sa(w.s, r.sa), r.id))
            w.real_row[int(r.id)] = rows[-1]
        w.append_group(Group(next_gid, tuple(rows)))
        next_gid += 1
    return w.freeze()
