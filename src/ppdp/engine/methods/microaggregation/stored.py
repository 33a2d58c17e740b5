"""A microaggregation release's groups as stored between versions, and back (no database here).

A version's private state is four frames (sql/microaggregation.py says where they live):

- ``members``  (key, grp): the real records of each group;
- ``labels``   (grp, attribute, value): each group's published value per QID: a continuous QID's
  range ``[lo, hi]`` over the group's real records, a semantic QID's lowest common ancestor in
  its hierarchy, a nominal QID's sorted value set joined by ``|``. Forged rows carry their group's labels (their own QIDs are never published);
- ``values``   (key, attribute, value): the QID and sensitive values each real record was grouped
  with, as text, so that the next version finds modified records and rebuilds the centroids;
- ``forged``   (fid, grp, sa, donor, row_id, template, qids): each forged record's sensitive
  value, its surrogate row id (a random UUID drawn like every real row's, kept while the forged
  record lives so that it is followed across versions like a real row), the *donor* real record
  of its group whose non-QID columns it repeats, the record it copied QIDs from, and its encoded
  QIDs as JSON.

``from_source`` and ``restore`` give a ``dynamic.DynamicState`` with integer ids; ``Snapshot``
maps ids back to keys.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.methods.microaggregation import dynamic
from ppdp.engine.methods.microaggregation.algorithms import Params
from ppdp.engine.methods.microaggregation.distances import QidKind, QidSchema, encode
from ppdp.engine.methods.microaggregation.dynamic import (
    DynamicState,
    EncodedRow,
    ForgedRecord,
    Modification,
    NewRecord,
    encode_record,
)
from ppdp.engine.methods.microaggregation.linkage import SensitiveCatalogue


def number_text(x: float) -> str:
    """A continuous value as stored and published: integral values without a decimal point."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def value_text(kind: QidKind, value: Any) -> str:
    return number_text(float(value)) if kind.kind == "continuous" else str(value)


def lowest_common_ancestor(h: Hierarchy, values: Sequence[str]) -> str:
    """The lowest level at which the hierarchy maps all ``values`` to one label."""
    rows = [h.rows[h.leaf_code[v]] for v in values]
    for level in range(h.height + 1):
        labels = {r[level] for r in rows}
        if len(labels) == 1:
            return labels.pop()
    return h.rows[0][-1]


@dataclass(frozen=True, eq=False)
class Records:
    """The source's records now, in key order: raw QID values per column and sensitive values."""

    keys: list[str]
    columns: dict[str, list[Any]]
    sensitive: list[str]

    def values_of(self, i: int, kinds: Sequence[QidKind]) -> dict[str, Any]:
        return {k.column: self.columns[k.column][i] for k in kinds}


@dataclass(frozen=True)
class Changes:
    """What changed in the source since the stored version, by key (each list sorted)."""

    deleted: tuple[str, ...]
    inserted: tuple[str, ...]
    modified_qids: tuple[str, ...]  # QIDs changed (the SA may have changed too)
    modified_sa: tuple[str, ...]  # only the sensitive value changed

    def counts(self) -> dict[str, int]:
        return {"inserted": len(self.inserted), "deleted": len(self.deleted), "modified_qids": len(self.modified_qids),
                "modified_sensitive": len(self.modified_sa)}


def _encoded_json(row: EncodedRow) -> str:
    return json.dumps({"cont": [float(x) for x in row.cont], "sem": [int(x) for x in row.sem],
                       "nom": [int(x) for x in row.nom], "ordn": [float(x) for x in row.ordn]})


def _encoded_row(text: str) -> EncodedRow:
    d = json.loads(text)
    return EncodedRow(np.asarray(d["cont"], dtype=np.float64), np.asarray(d["sem"], dtype=np.int32),
                      np.asarray(d["nom"], dtype=np.int32), np.asarray(d["ordn"], dtype=np.float64))


@dataclass(frozen=True, eq=False)
class Restored:
    """A stored version rebuilt in memory: the state, key <-> id, and what was stored."""

    state: DynamicState
    id_of: dict[str, int]
    values: dict[str, dict[str, str]]  # key -> attribute -> text, as grouped
    sensitive: dict[str, str]  # key -> sensitive value as grouped
    forged_rows: dict[int, str]  # fid -> row id
    forged_donors: dict[int, str]  # fid -> donor key


def restore(members: pl.DataFrame, values: pl.DataFrame, forged: pl.DataFrame, sensitive_column: str,
            schema: QidSchema, catalogue: SensitiveCatalogue, *, k: int, alpha: float, beta: float, seed: int,
            counters: dict[str, int]) -> Restored:
    """The state of a stored version from its ``members``, ``values`` and ``forged`` frames."""
    keys = sorted(members["key"].to_list())
    id_of = {key: i for i, key in enumerate(keys)}
    stored: dict[str, dict[str, str]] = {key: {} for key in keys}
    for key, attribute, value in values.select("key", "attribute", "value").iter_rows():
        stored[key][attribute] = value
    sensitive = {key: stored[key].pop(sensitive_column) for key in keys}
    columns = {kd.column: [float(stored[key][kd.column]) if kd.kind == "continuous" else stored[key][kd.column] for key in keys]
               for kd in schema.kinds}
    enc = encode(schema, columns)
    grp_of = dict(members.select("key", "grp").iter_rows())
    gids = sorted(set(grp_of.values()) | set(forged["grp"].to_list()))
    groups: dict[int, list[int]] = {g: [] for g in gids}
    for key in keys:
        groups[grp_of[key]].append(id_of[key])
    fakes = [ForgedRecord(int(fid), int(grp), _encoded_row(q), catalogue.codes([sa])[0], id_of.get(t, -1) if t else -1)
             for fid, grp, sa, t, q in forged.select("fid", "grp", "sa", "template", "qids").iter_rows()]
    state = dynamic.restore(enc, catalogue.codes([sensitive[key] for key in keys]), list(range(len(keys))),
                            [groups[g] for g in gids], catalogue, k=k, gids=gids, forged=fakes, alpha=alpha, beta=beta,
                            seed=seed, step=counters.get("step", 0), forged_created=counters.get("forged_created", 0),
                            forged_rewrites=counters.get("forged_rewrites", 0), linkage=bool(counters.get("linkage", True)),
                            forge_unlinked=bool(counters.get("forge_unlinked", True)))
    return Restored(state, id_of, stored, sensitive,
                    {int(fid): rid for fid, rid in forged.select("fid", "row_id").iter_rows()},
                    {int(fid): donor for fid, donor in forged.select("fid", "donor").iter_rows()})


def changes(restored: Restored, records: Records, kinds: Sequence[QidKind]) -> Changes:
    """Inserted, deleted and modified records of the source against the stored version."""
    now = {key: i for i, key in enumerate(records.keys)}
    deleted = sorted(set(restored.id_of) - set(now))
    inserted = sorted(set(now) - set(restored.id_of))
    mod_q, mod_s = [], []
    for key in sorted(set(now) & set(restored.id_of)):
        i = now[key]
        qid_changed = any(value_text(kd, records.columns[kd.column][i]) != restored.values[key][kd.column] for kd in kinds)
        sa_changed = records.sensitive[i] != restored.sensitive[key]
        if qid_changed:
            mod_q.append(key)
        elif sa_changed:
            mod_s.append(key)
    return Changes(tuple(deleted), tuple(inserted), tuple(mod_q), tuple(mod_s))


def apply(algorithm, restored: Restored, records: Records, found: Changes, schema: QidSchema,
          catalogue: SensitiveCatalogue) -> tuple[DynamicState, dict[str, int], tuple[str, ...]]:
    """The algorithm's deletes, modifications and inserts, in that order and each in key order
    (so a run is a function of the stored state and the source); returns the state, key -> id,
    and the deferred keys.

    A deletion or QID modification that would take its group below K is *deferred*: the record
    stays in its group with the values it was grouped with, and the next version tries again.
    DRASL Alg. 4 would dissolve the group and move its other records, but published rows keep
    their ids across versions, so each moved record would be followed from its old group to its
    new one and singled out there: the history stage would hold every move back anyway (the
    stored groups would drift from what is published), so the group is kept whole instead."""
    state, id_of = restored.state, dict(restored.id_of)
    now = {key: i for i, key in enumerate(records.keys)}
    deferred = []

    def shrinks_below_k(key: str) -> bool:
        return state.groups[state.group_of(id_of[key])].size - 1 < state.k

    for key in found.deleted:
        if shrinks_below_k(key):
            deferred.append(key)
            continue
        state = algorithm.delete(state, id_of.pop(key))
    for key in found.modified_qids:
        if shrinks_below_k(key):
            deferred.append(key)
            continue
        i = now[key]
        state, row = encode_record(state, schema, records.values_of(i, schema.kinds))
        new_sa = records.sensitive[i] != restored.sensitive[key]
        state = algorithm.modify(state, id_of[key], Modification(qids=row, sa=catalogue.codes([records.sensitive[i]])[0] if new_sa else None))
    for key in found.modified_sa:
        state = algorithm.modify(state, id_of[key], Modification(sa=catalogue.codes([records.sensitive[now[key]]])[0]))
    next_id = max(id_of.values(), default=-1) + 1
    inserted = list(found.inserted)
    if len(inserted) >= state.k:
        # K or more new records form new groups of their own (Alg. 1 over the new records only,
        # (ours)): someone who knows who joined then finds each newcomer among at least K new
        # rows, where Alg. 2 would scatter them over old groups one by one and every newcomer
        # would have to be held back until K others joined the same group.
        rows = [now[key] for key in inserted]
        cols = {kd.column: [records.columns[kd.column][i] for i in rows] for kd in schema.kinds}
        sa = catalogue.codes([records.sensitive[i] for i in rows])
        batch = algorithm.first_release(encode(schema, cols), sa, list(range(len(rows))), catalogue,
                                        Params(state.k, state.alpha, state.beta, state.seed + state.step))
    if len(inserted) >= state.k and not batch.forged_count:  # (an algorithm that forges in a first release inserts one by one)
        new = []
        for j, key in enumerate(inserted):
            id_of[key] = next_id + j
            new.append(NewRecord(next_id + j, dynamic.EncodedRow.of(batch.pool, j), int(sa[j])))
        state = dynamic.add_groups(state, new, [g.real for g in batch.groups])
        inserted = []
    for key in inserted:
        i = now[key]
        state, row = encode_record(state, schema, records.values_of(i, schema.kinds))
        id_of[key] = next_id
        state = algorithm.insert(state, NewRecord(next_id, row, catalogue.codes([records.sensitive[i]])[0]))
        next_id += 1
    return state, id_of, tuple(sorted(deferred))


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The frames of one version (see the module docstring) and its published size."""

    members: pl.DataFrame
    labels: pl.DataFrame
    values: pl.DataFrame
    forged: pl.DataFrame
    group_sizes: list[int]
    sensitive_by_group: list[list[str]]  # SA values per group, forged included
    rows: int  # the candidate rows: members in the source, and forged records


def snapshot(state: DynamicState, id_of: dict[str, int], records: Records, kinds: Sequence[QidKind],
             catalogue: SensitiveCatalogue, forged_rows: dict[int, str], sensitive_column: str,
             restored: Restored | None = None, deferred: Sequence[str] = ()) -> Snapshot:
    """The frames of ``state`` with real ids mapped back to keys, labels over each group's real
    records, and a fresh random row id for each new forged record. A record is grouped by its
    current source values, a deferred one (``apply``) by the values it was grouped with; the
    labels cover both."""
    key_of = {i: key for key, i in id_of.items()}
    index = {key: i for i, key in enumerate(records.keys)}
    held = set(deferred)

    def grouped(key: str) -> tuple[dict[str, str], str]:
        if key in held:
            assert restored is not None, "deferred records come from a restored state"
            return restored.values[key], restored.sensitive[key]
        i = index[key]
        return {kd.column: value_text(kd, records.columns[kd.column][i]) for kd in kinds}, records.sensitive[i]

    members, labels, values, fakes, sizes, sensitive = [], [], [], [], [], []
    forged_of: dict[int, list[ForgedRecord]] = {}
    for f in state.forged_records():
        forged_of.setdefault(f.gid, []).append(f)
    published = 0
    for g in state.groups:
        keys = sorted(key_of[int(state.row_ids[r])] for r in g.real)
        rows = [grouped(key) for key in keys]
        members += [(key, g.gid) for key in keys]
        published += sum(1 for key in keys if key in index)
        # A deferred change's record is still in the source with new values: the labels cover
        # those too, so its row (relabelled with its group, like every member's) shows the person
        # as the source has them now; only its place in the groups waits.
        now_values = [{kd.column: value_text(kd, records.columns[kd.column][index[key]]) for kd in kinds}
                      for key in keys if key in held and key in index]
        for kd in kinds:
            vals = [vals_[kd.column] for vals_, _ in rows] + [v[kd.column] for v in now_values]
            if kd.kind == "continuous":
                nums = [float(v) for v in vals]
                label = f"[{number_text(min(nums))}, {number_text(max(nums))}]"
            elif kd.kind == "nominal":  # the value set (DRASL: "value set" for non-semantic QIDs)
                label = "|".join(sorted(set(vals)))
            else:
                label = lowest_common_ancestor(kd.tree, vals)  # kinds are continuous, nominal or semantic
            labels.append((g.gid, kd.column, label))
        for key, (vals_, sa) in zip(keys, rows, strict=True):
            values += [(key, kd.column, vals_[kd.column]) for kd in kinds] + [(key, sensitive_column, sa)]
        group_sa = [sa for _, sa in rows]
        donors = [key for key in keys if key in index]  # a forged row repeats a record that is in the source
        for f in forged_of.get(g.gid, []):
            template = key_of.get(f.template)
            # The donor of a forged row's other columns stays while it is in the group (a new
            # donor would change the row). A new forged row repeats the group's newest record: the
            # newcomer whose insert made it, so the two new rows look alike; a copy of an older
            # row would give the forged one away as the new twin of a row seen before.
            # A group whose every real record has left (deletions the method deferred) has no
            # donor in the source: its forged rows drop out of the candidate like its records'
            # rows, and the history stage keeps their previous rows standing.
            before = restored.forged_donors.get(f.id) if restored is not None else None
            donor = before if before in donors else max(donors or keys, key=lambda key: id_of[key])
            published += donor in index
            row_id = forged_rows.get(f.id) or str(uuid.uuid4())  # drawn like gen_random_uuid(): the same form
            fakes.append((f.id, g.gid, catalogue.values[f.sa], donor, row_id, template, _encoded_json(f.qids)))
            group_sa.append(catalogue.values[f.sa])
        sizes.append(len(group_sa))
        sensitive.append(group_sa)
    return Snapshot(
        pl.DataFrame(members, schema={"key": pl.String, "grp": pl.Int32}, orient="row"),
        pl.DataFrame(labels, schema={"grp": pl.Int32, "attribute": pl.String, "value": pl.String}, orient="row"),
        pl.DataFrame(values, schema={"key": pl.String, "attribute": pl.String, "value": pl.String}, orient="row"),
        pl.DataFrame(fakes, schema={"fid": pl.Int32, "grp": pl.Int32, "sa": pl.String, "donor": pl.String, "row_id": pl.String,
                                    "template": pl.String, "qids": pl.String}, orient="row"),
        sizes, sensitive, published)
