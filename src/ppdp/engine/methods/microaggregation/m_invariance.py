"""m-invariance (Xiao and Tao 2007), the classic answer to re-publication, adapted to the
per-change interface of ``algorithms.MicroAlgorithm``: the strongest dynamic baseline DRASL is compared with.

Xiao and Tao publish versions of a table; a version is *m-unique* when every QI group has at
least m rows with pairwise distinct SA values, the *signature* of a row is the set of SA values
of its group, and a sequence of versions is *m-invariant* when every version is m-unique and
every individual's signature is the same in every version holding it. Counterfeit rows (our
``ForgedRecord``) fill the gaps that deletions leave.

Our adaptation, one change at a time:

- m = K. A group has at least K rows (real + counterfeit) with pairwise distinct SA values, so
  K-anonymity and m-uniqueness coincide; any m < K would allow repeated values in a group of K,
  and m > K is not asked for. Distinct values in a group of K need at least K values in the
  *catalogue* (counterfeits may take any catalogued value, so the data may have fewer): with
  fewer catalogued values than K the first release raises DataError (lower K or extend the
  catalogue), since no group of K can be m-unique.
- A group's signature is fixed when it is created and never changes while it holds a real
  record, so the signature of every record whose SA does not change stays constant.
- First release (Xiao and Tao's bucketization, as in Anatomy): while at least K SA values still
  have unassigned records, a group takes one record of each of the K values with the most
  unassigned records (ties: smallest code): a random record (``default_rng(seed)``) of the
  largest, then, of each other value, the record nearest to it (eq. 6; ties: first row). Each
  record left over joins, in row order, the group with the nearest centroid among those
  without its SA value; if every group has it, the record opens a new group with K - 1
  counterfeits (see insertion).
- Delete: the record's row is replaced in its group by a counterfeit with the same SA (Xiao and
  Tao's counterfeit), so the signature stays; QIDs copied from the group's real member nearest to
  its centroid (as DRASL's forged records, dynamic.py). A group left without real records is
  dropped (no live record has its signature). The release's last real record cannot be deleted.
- Insert (a record new to the release has no signature yet): if some group has a counterfeit
  with the record's SA, the record takes that counterfeit's place (the group with the nearest
  centroid among them; the signature is unchanged). Otherwise it opens a new group with K - 1
  counterfeits whose values are the K - 1 most frequent SA values among the current real records
  other than its own (ties: smallest code), so that later insertions are likely to fill them;
  their QIDs copy the record's.
- Modify: a QID-only change keeps the record in its group (new QIDs, same signature); an SA
  change is delete + insert under the same id (the old SA leaves a counterfeit, the record gets a
  new signature: Xiao and Tao treat SA values as fixed for an individual's lifetime, so no rule
  keeps it).

Randomness is a pure function of the state (dynamic.py): only the first release draws.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ppdp.engine.methods.microaggregation import dynamic
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params
from ppdp.engine.methods.microaggregation.distances import EncodedQids, encoded_centroid
from ppdp.engine.methods.microaggregation.dynamic import (
    DynamicState,
    EncodedRow,
    ForgedRecord,
    Group,
    Modification,
    NewRecord,
)
from ppdp.engine.methods.microaggregation.static import (
    Centroids,
    check_size,
    distances,
    distances_to_points,
    point,
)
from ppdp.errors import DataError


def _check_catalogue(n_values: int, k: int) -> None:
    if n_values < k:
        raise DataError(f"m-invariance with m = K = {k} needs at least {k} catalogued sensitive values, the catalogue "
                        f"has {n_values}. Hint: lower K or list more values in the catalogue.")


def _counterfeit_values(real_sa: np.ndarray, n_values: int, k: int, own: int) -> list[int]:
    """The K - 1 most frequent SA codes among ``real_sa`` other than ``own`` (ties: smallest)."""
    counts = np.bincount(np.asarray(real_sa, dtype=np.int64), minlength=n_values).astype(np.float64)
    counts[own] = -1.0
    return [int(v) for v in np.argsort(-counts, kind="stable")[:k - 1]]


def m_unique_groups(enc: EncodedQids, sa_codes: np.ndarray, n_values: int, k: int,
                    seed: int) -> tuple[list[list[int]], list[tuple[int, int, int]]]:
    """The first release's groups (row indices) and counterfeits (group index, SA code, row whose
    QIDs it copies), as the module docstring says."""
    sa_codes = np.asarray(sa_codes, dtype=np.int64)
    rng = np.random.default_rng(seed)
    buckets = [np.flatnonzero(sa_codes == v).tolist() for v in range(n_values)]
    groups: list[list[int]] = []
    while True:
        sizes = np.array([len(b) for b in buckets])
        if int((sizes > 0).sum()) < k:
            break
        order = np.argsort(-sizes, kind="stable")[:k]
        lead = buckets[int(order[0])]
        first = lead.pop(int(rng.integers(len(lead))))
        group = [first]
        p = point(enc, first)
        for v in order[1:]:
            bucket = buckets[int(v)]
            group.append(bucket.pop(int(np.argmin(distances(enc, p, np.asarray(bucket, dtype=np.int64))))))
        groups.append(group)
    left = sorted(r for b in buckets for r in b)
    counterfeits: list[tuple[int, int, int]] = []
    if not left:
        return groups, counterfeits
    counts = np.zeros((len(groups), n_values), dtype=np.int64)
    for j, g in enumerate(groups):
        counts[j, sa_codes[g]] = 1
    cents = Centroids(enc, np.array([g[0] for g in groups], dtype=np.int64))
    for j, g in enumerate(groups):
        cents.update(j, g)
    for r in left:
        s = int(sa_codes[r])
        open_groups = np.flatnonzero(counts[:, s] == 0)
        if open_groups.size:
            j = int(open_groups[int(np.argmin(cents.distances(r, open_groups)))])
            groups[j].append(r)
            counts[j, s] = 1
            cents.update(j, groups[j])
            continue
        j = len(groups)
        groups.append([r])
        row_counts = np.zeros((1, n_values), dtype=np.int64)
        row_counts[0, s] = 1
        for v in _counterfeit_values(sa_codes, n_values, k, s):
            counterfeits.append((j, v, r))
            row_counts[0, v] = 1
        counts = np.vstack([counts, row_counts])
        cents.arrays = [np.vstack([a, src[r:r + 1]]) for a, src in zip(cents.arrays, (enc.cont, enc.sem, enc.nom, enc.ordn),
                                                                         strict=True)]
    return groups, counterfeits


# --- the per-change operations on a working copy (dynamic._Work) -------------------------------


def _add_counterfeit(w: dynamic._Work, qids: EncodedRow, sa: int, template_id: int) -> int:
    fid = w.next_forged_id
    w.next_forged_id += 1
    row = w.add_row(qids, sa, fid)
    w.forged_template[row] = int(template_id)
    w.forged_created += 1
    return row


def _delete(w: dynamic._Work, record_id: int, *, allow_empty: bool = False) -> None:
    try:
        row = w.real_row.pop(int(record_id))
    except KeyError:
        raise DataError(f"Record id {record_id} is not in the release. "
                        "Hint: delete or modify only records that are published (counterfeits cannot be).") from None
    i = w.find_group(row)
    g = w.groups[i]
    real = tuple(r for r in g.real if r != row)
    if not real:
        if len(w.groups) == 1 and not allow_empty:
            raise DataError(f"Deleting record {record_id} would leave the release without records. "
                            "Hint: a release needs at least K records.")
        w.groups[i] = dataclasses.replace(g, real=real)
        w.remove_group(i)
        return
    rows = np.asarray(real, dtype=np.int64)
    template = int(rows[int(np.argmin(distances(w.pool, encoded_centroid(w.pool, rows), rows)))])
    fake = _add_counterfeit(w, dynamic.EncodedRow.of(w.pool, template), int(w.sa[row]), w.row_id(template))
    w.groups[i] = dataclasses.replace(g, real=real, forged=g.forged + (fake,))
    w.refresh(i)


def _insert(w: dynamic._Work, record: NewRecord) -> None:
    sa = dynamic._check_sa(w.s, record.sa)
    dynamic._check_qids(w.s, record.qids)
    if int(record.id) in w.real_row:
        raise DataError(f"Record id {record.id} is already in the release. Hint: use modify() to change it.")
    row = w.add_row(record.qids, sa, record.id)
    w.real_row[int(record.id)] = row
    slots = [(i, f) for i, g in enumerate(w.groups) for f in g.forged if int(w.sa[f]) == sa]
    if slots:
        which = np.array([i for i, _ in slots], dtype=np.int64)
        c_cont, c_sem, c_nom, c_ord = w.cents
        d = distances_to_points(w.pool, point(w.pool, row), (c_cont[which], c_sem[which], c_nom[which], c_ord[which]))
        i, fake = slots[int(np.argmin(d))]
        g = w.groups[i]
        w.groups[i] = dataclasses.replace(g, real=g.real + (row,), forged=tuple(f for f in g.forged if f != fake))
        del w.forged_template[fake]
        w.refresh(i)
        return
    real_sa = w.sa[np.fromiter(w.real_row.values(), dtype=np.int64)]
    values = _counterfeit_values(real_sa, len(w.s.catalogue.values), w.s.k, sa)
    fakes = tuple(_add_counterfeit(w, record.qids, v, record.id) for v in values)
    gid = max((g.gid for g in w.groups), default=-1) + 1
    w.append_group(Group(gid, (row,), fakes))


class MInvariance:
    """m-invariance with m = K and counterfeits (module docstring): dynamic, forges records."""

    name = "m-invariance"
    forges = True
    dynamic = True

    def first_release(self, enc, sa_codes, ids, catalogue, params: Params) -> DynamicState:
        check_size(enc.n, params.k)
        n_values = len(catalogue.values)
        _check_catalogue(n_values, params.k)
        sa_codes = np.asarray(sa_codes, dtype=np.int64)
        groups, counterfeits = m_unique_groups(enc, sa_codes, n_values, params.k, params.seed)
        ids = [int(i) for i in ids]
        forged = [ForgedRecord(f, j, EncodedRow.of(enc, r), v, ids[r]) for f, (j, v, r) in enumerate(counterfeits)]
        return dynamic.restore(enc, sa_codes, ids, groups, catalogue, k=params.k, forged=forged, alpha=params.alpha,
                               beta=params.beta, seed=params.seed, forged_created=len(forged))

    def insert(self, state: DynamicState, record: NewRecord) -> DynamicState:
        """A counterfeit's place with the record's SA, else a new group with K - 1 counterfeits."""
        w = dynamic._Work(state)
        _insert(w, record)
        return w.freeze()

    def delete(self, state: DynamicState, record_id: int) -> DynamicState:
        """The record's row becomes a counterfeit with its SA; a group of counterfeits only goes."""
        w = dynamic._Work(state)
        _delete(w, record_id)
        return w.freeze()

    def modify(self, state: DynamicState, record_id: int, new_values: Modification) -> DynamicState:
        """QIDs only: in place, same group; an SA change: delete + insert under the same id."""
        if new_values.qids is None and new_values.sa is None:
            raise DataError(f"The modification of record {record_id} changes nothing. Hint: give new QIDs, a new SA, or both.")
        row = state._row(record_id)
        old_sa = int(state.sa[row])
        new_sa = old_sa if new_values.sa is None else dynamic._check_sa(state, new_values.sa)
        w = dynamic._Work(state)
        if new_sa == old_sa:
            if new_values.qids is not None:
                dynamic._check_qids(state, new_values.qids)
                new_row = w.add_row(new_values.qids, old_sa, record_id)
                w.real_row[int(record_id)] = new_row
                i = w.find_group(row)
                g = w.groups[i]
                w.groups[i] = dataclasses.replace(g, real=tuple(new_row if r == row else r for r in g.real))
                w.refresh(i)
            return w.freeze()
        qids = new_values.qids if new_values.qids is not None else EncodedRow.of(state.pool, row)
        dynamic._check_qids(state, qids)
        _delete(w, record_id, allow_empty=True)
        _insert(w, NewRecord(int(record_id), qids, new_sa))
        return w.freeze()


ALGORITHMS.register("m-invariance")(MInvariance())
