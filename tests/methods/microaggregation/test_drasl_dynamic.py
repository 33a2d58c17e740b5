"""DRASL dynamic updates (Alg. 2-5): engine/methods/microaggregation/dynamic.py.

Hand-made cases whose answer follows from the paper's rules (quoted in the module docstring),
invariants after random sequences of operations, and the vectorized group scoring against its
plain-Python twin. The catalogue is the shipped ``diseases32`` (8 categories of 4 diseases).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.methods.microaggregation import dynamic as dyn
from ppdp.engine.methods.microaggregation.cluster import first_release
from ppdp.engine.methods.microaggregation.distances import QidKind, encode, fit_schema
from ppdp.engine.methods.microaggregation.linkage import builtin_catalogue, link
from ppdp.errors import DataError

CAT = builtin_catalogue("diseases32")
SA_SET = ["anemia", "acne", "gastritis", "epilepsy"]  # four different categories


def _age_state(ages, diseases, groups, *, k, seed=0, ids=None):
    """A state over one continuous QID, age, with the given groups (row indices)."""
    kinds = [QidKind("age", "continuous")]
    schema = fit_schema(kinds, {"age": ages})
    enc = encode(schema, {"age": ages})
    ids = list(range(len(ages))) if ids is None else ids
    return dyn.from_grouping(enc, CAT.codes(diseases), ids, groups, CAT, k=k, seed=seed), schema


def _age_row(schema, age):
    lo, hi = schema.ranges["age"]
    empty_i, empty_f = np.zeros(0, dtype=np.int32), np.zeros(0)
    return dyn.EncodedRow(np.array([(age - lo) / (hi - lo)]), empty_i, empty_i, empty_f)


def _two_groups(seed=0, extra_b=()):
    """Group A: ages 20-23, group B: ages 60-63 (+ extra_b), both with the same four diseases
    (one per category), so only the distance term of f_link tells the groups apart."""
    ages = [20, 21, 22, 23, 60, 61, 62, 63] + [a for a, _ in extra_b]
    diseases = SA_SET + SA_SET + [d for _, d in extra_b]
    groups = [[0, 1, 2, 3], [4, 5, 6, 7] + list(range(8, 8 + len(extra_b)))]
    return _age_state(ages, diseases, groups, k=4, seed=seed)


def _category_of_code(code):
    return CAT.categories[CAT.category_code[code]]


def _forged_values(state):
    return [CAT.values[f.sa] for f in state.forged_records()]


# --- Alg. 2 + 3: insertion ------------------------------------------------------------------


def test_insert_joins_nearest_group_and_forges_an_unlinked_sensitive_value():
    state, schema = _two_groups()
    new = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), CAT.code("bronchitis")))
    b = new.group_of(100)
    assert new.member_ids(b) == (4, 5, 6, 7, 100)
    assert new.groups[b].gid == 1
    assert len(new.groups[1 - b].forged) == 0 and new.groups[1 - b].real == state.groups[0].real
    # Situation "no forged record in gid_j": one forged record is generated in that group ...
    (forged,) = new.forged_records()
    assert forged.gid == 1 and new.forged_created == 1 and new.forged_rewrites == 0
    # ... with Link_SA(D_SA_random, SA_r) = 0: neither bronchitis nor another respiratory disease.
    assert link(CAT.values[forged.sa], "bronchitis", CAT) == 0
    # Its QIDs copy the member nearest to the centroid: mean(60, 61, 62, 63, 61) = 61.4 -> the
    # first age-61 member, id 5.
    assert forged.template == 5
    assert forged.qids.cont[0] == pytest.approx(_age_row(schema, 61).cont[0])
    assert [g.size for g in new.groups] == [4, 6]
    # The old state is unchanged (pure functions).
    assert state.forged_count == 0 and state.member_ids(1) == (4, 5, 6, 7) and state.counts[1].sum() == 4


def test_second_insert_rewrites_the_existing_forged_record_instead_of_adding_one():
    state, schema = _two_groups()
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), CAT.code("bronchitis")))
    before = state.forged_records()[0]
    state = dyn.insert(state, dyn.NewRecord(101, _age_row(schema, 62), CAT.code("acne")))
    (forged,) = state.forged_records()
    assert forged.id == before.id and forged.gid == 1
    assert state.forged_created == 1 and state.forged_rewrites == 1
    assert link(CAT.values[forged.sa], "acne", CAT) == 0
    assert state.groups[state.group_of(101)].size == 7


def test_forged_value_is_random_among_unlinked_values_only():
    """Over many seeds the forged value never shares the new record's category, and the draw is
    not a fixed choice (it covers several of the 7 other categories)."""
    categories = set()
    for seed in range(60):
        state, schema = _two_groups(seed=seed)
        state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), CAT.code("pneumonia")))
        cat = _category_of_code(state.forged_records()[0].sa)
        assert cat != "respiratory"
        categories.add(cat)
    assert len(categories) >= 5


def test_insert_counts_forged_rows_in_the_published_distribution():
    """The group's SA counts (used by entropy and Pr) include the forged record's value."""
    state, schema = _two_groups()
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), CAT.code("bronchitis")))
    b = state.group_of(100)
    expected = np.zeros(len(CAT.values), dtype=np.int64)
    for d in SA_SET + ["bronchitis", CAT.values[state.forged_records()[0].sa]]:
        expected[CAT.code(d)] += 1
    assert np.array_equal(state.counts[b], expected)


# --- Alg. 4: deletion -----------------------------------------------------------------------


def test_delete_from_a_group_that_keeps_k_members_forges_against_the_deleted_value():
    state, _ = _two_groups(extra_b=[(61, "bronchitis")])  # B has 5 real records, K = 4
    state = dyn.delete(state, 8)
    b = 1
    assert state.member_ids(b) == (4, 5, 6, 7)
    (forged,) = state.forged_records()
    assert forged.gid == 1 and state.groups[b].size == 5
    assert link(CAT.values[forged.sa], "bronchitis", CAT) == 0
    assert state.real_count == 8


def test_delete_below_k_dissolves_the_group_into_the_best_groups():
    # A's three survivors are all respiratory: whichever is re-inserted last, the forged value
    # of the receiving group must be outside respiratory.
    ages = [20, 21, 22, 23, 60, 61, 62, 63]
    diseases = ["anemia", "bronchitis", "pneumonia", "asthma"] + SA_SET
    state, _ = _age_state(ages, diseases, [[0, 1, 2, 3], [4, 5, 6, 7]], k=4)
    state = dyn.delete(state, 0)
    assert len(state.groups) == 1 and state.groups[0].gid == 1
    assert sorted(state.member_ids(0)) == [1, 2, 3, 4, 5, 6, 7]
    # Alg. 3 after each of the 3 re-insertions: the first creates the forged record, the next
    # two rewrite it; A had no forged record to drop.
    assert state.forged_created == 1 and state.forged_rewrites == 2 and state.forged_count == 1
    assert _category_of_code(state.forged_records()[0].sa) != "respiratory"
    assert state.groups[0].size == 8


def test_dissolved_group_drops_its_forged_record():
    state, schema = _two_groups()
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 21), CAT.code("acne")))  # A: 5 real + 1 forged
    assert state.groups[0].size == 6 and state.forged_count == 1
    state = dyn.delete(state, 0)  # 4 real + 1 forged >= K: Alg. 3 rewrites A's forged record
    assert state.forged_rewrites == 1 and state.forged_count == 1
    state = dyn.delete(state, 1)  # 3 + 1 >= K
    state = dyn.delete(state, 2)  # 2 + 1 < K: dissolve; 22 and 21 move to B
    assert len(state.groups) == 1 and sorted(state.member_ids(0)) == [3, 4, 5, 6, 7, 100]
    assert state.forged_count == 1 and state.forged_records()[0].gid == 1
    assert state.forged_created == 2  # A's forged record (gone) and B's


def test_delete_in_the_only_group_is_refused_below_k_and_leaves_the_state_unchanged():
    state, _ = _age_state([20, 21, 22, 23], SA_SET, [[0, 1, 2, 3]], k=4)
    state = dyn.delete(state, 0)  # 3 real + a new forged record = K
    assert state.groups[0].size == 4 and state.forged_count == 1
    with pytest.raises(DataError, match="fewer than K = 4"):
        dyn.delete(state, 1)
    assert state.real_count == 3 and state.groups[0].size == 4


# --- Alg. 5: modification -------------------------------------------------------------------


def test_modify_sensitive_value_only_keeps_the_group_and_protects_the_new_value():
    state, _ = _two_groups()
    state = dyn.modify(state, 5, dyn.Modification(sa=CAT.code("pneumonia")))
    assert state.member_ids(1) == (4, 5, 6, 7)
    (forged,) = state.forged_records()
    assert forged.gid == 1 and link(CAT.values[forged.sa], "pneumonia", CAT) == 0
    assert state.counts[1][CAT.code("pneumonia")] == 1 and state.counts[1][CAT.code("acne")] == 0
    assert state.counts[0].sum() == 4


def test_modify_quasi_identifiers_deletes_and_reinserts_under_the_same_id():
    state, schema = _two_groups()
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 22), CAT.code("acne")))  # A has 5 real
    state = dyn.modify(state, 0, dyn.Modification(qids=_age_row(schema, 62)))
    assert sorted(state.member_ids(1)) == [0, 4, 5, 6, 7]
    assert sorted(state.member_ids(0)) == [1, 2, 3, 100]
    # A: Alg. 4 keeps the group (4 real + 1 forged) and rewrites its forged record; B: Alg. 3
    # creates one for the re-inserted record, whose SA (anemia) it must not link to.
    assert state.forged_created == 2 and state.forged_rewrites == 1
    b_forged = [f for f in state.forged_records() if f.gid == 1]
    assert len(b_forged) == 1 and link(CAT.values[b_forged[0].sa], "anemia", CAT) == 0


def test_modify_both_moves_the_record_with_its_new_value():
    state, schema = _two_groups(extra_b=[(61, "acne")])
    state = dyn.modify(state, 8, dyn.Modification(qids=_age_row(schema, 21), sa=CAT.code("asthma")))
    a = state.group_of(8)
    assert state.groups[a].gid == 0 and int(state.sa[state.real_row[8]]) == CAT.code("asthma")
    a_forged = [f for f in state.forged_records() if f.gid == 0]
    assert len(a_forged) == 1 and _category_of_code(a_forged[0].sa) != "respiratory"


# --- bad input ------------------------------------------------------------------------------


def test_bad_operations_raise_one_line_data_errors():
    state, schema = _two_groups()
    with pytest.raises(DataError, match="already in the release"):
        dyn.insert(state, dyn.NewRecord(3, _age_row(schema, 30), 0))
    with pytest.raises(DataError, match="not in the release"):
        dyn.delete(state, 999)
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), 0))
    forged_id = state.forged_records()[0].id
    if forged_id not in state.real_row:  # forged ids live in their own namespace
        with pytest.raises(DataError, match="not in the release"):
            dyn.delete(state, forged_id + 10_000)
    with pytest.raises(DataError, match="changes nothing"):
        dyn.modify(state, 4, dyn.Modification())
    with pytest.raises(DataError, match="SA code"):
        dyn.insert(state, dyn.NewRecord(200, _age_row(schema, 30), len(CAT.values)))
    with pytest.raises(DataError, match="fewer than K"):
        _age_state([20, 21, 22], SA_SET[:3], [[0, 1, 2]], k=4)


# --- random sequences: invariants -----------------------------------------------------------

EDU = ("primary", "secondary", "bachelor", "master", "doctorate")
ZIP = from_rows("zip", [["10010", "100**", "*"], ["10020", "100**", "*"], ["20010", "200**", "*"],
                        ["20020", "200**", "*"], ["30010", "300**", "*"]])
KINDS = [QidKind("age", "continuous"), QidKind("zip", "semantic", hierarchy=ZIP), QidKind("sex", "nominal"),
         QidKind("race", "nominal"), QidKind("education", "ordinal", order=EDU)]


def _random_table(rng, n):
    return {
        "age": rng.integers(17, 90, n).tolist(),
        "zip": rng.choice([r[0] for r in ZIP.rows], n).tolist(),
        "sex": rng.choice(["F", "M"], n).tolist(),
        "race": rng.choice(["a", "b", "c"], n).tolist(),
        "education": rng.choice(EDU, n).tolist(),
    }


def _random_run(seed, n=150, k=5, ops=90, check=None):
    rng = np.random.default_rng(seed)
    extra = ops  # rows for inserted records and new QIDs of modifications
    cols = _random_table(rng, n + extra)
    schema = fit_schema(KINDS, cols)
    enc_all = encode(schema, cols)
    sa_all = rng.integers(0, len(CAT.values), n + extra)
    enc = replace(enc_all, cont=enc_all.cont[:n], sem=enc_all.sem[:n], nom=enc_all.nom[:n], ordn=enc_all.ordn[:n])
    grouping = first_release(enc, sa_all[:n], CAT, k=k, seed=seed)
    ids = [1000 + i for i in range(n)]
    state = dyn.from_grouping(enc, sa_all[:n], ids, grouping.groups, CAT, k=k, seed=seed)
    live = set(ids)
    next_row = n
    for step in range(ops):
        before = (state.groups, state.counts.copy(), state.forged_created)
        op = step % 3
        if op == 0:
            rid = 5000 + step
            state = dyn.insert(state, dyn.NewRecord(rid, dyn.EncodedRow.of(enc_all, next_row), int(sa_all[next_row])))
            next_row += 1
            live.add(rid)
        elif op == 1:
            rid = sorted(live)[int(rng.integers(len(live)))]
            state = dyn.delete(state, rid)
            live.remove(rid)
        else:
            rid = sorted(live)[int(rng.integers(len(live)))]
            if rng.random() < 0.5:
                mod = dyn.Modification(qids=dyn.EncodedRow.of(enc_all, next_row))
                next_row += 1
            else:
                mod = dyn.Modification(sa=int(rng.integers(len(CAT.values))))
            state = dyn.modify(state, rid, mod)
        if check:
            check(state, live, before)
    return state, live


def _check_invariants(state, live, before):
    groups, counts, forged_created = before
    assert all(g.size >= state.k for g in state.groups), [g.size for g in state.groups]
    real_ids = [int(state.row_ids[r]) for g in state.groups for r in g.real]
    assert len(real_ids) == len(set(real_ids)) and set(real_ids) == live == set(state.real_row)
    assert all(len(g.forged) <= 1 for g in state.groups)
    forged = state.forged_records()
    assert len({f.id for f in forged}) == len(forged) == state.forged_count
    assert state.forged_created >= forged_created and state.forged_created >= state.forged_count
    assert len({g.gid for g in state.groups}) == len(state.groups)
    rows = [r for g in state.groups for r in g.rows]
    assert len(rows) == len(set(rows))
    # The cached per-group arrays equal a recomputation from the members.
    fresh = dyn._rebuild_group_arrays(state)
    assert np.array_equal(fresh.counts, state.counts)
    for a, b in zip(fresh.centroids, state.centroids, strict=True):
        assert np.allclose(a, b)
    for a, b in zip(fresh.stats, state.stats, strict=True):
        assert np.allclose(a, b)
    assert state.counts.sum() == state.real_count + state.forged_count


def test_random_sequences_keep_every_invariant():
    for seed in (1, 2):
        state, live = _random_run(seed, check=_check_invariants)
        assert state.forged_created > 0 and len(live) == state.real_count


def test_operations_are_deterministic_for_a_seed():
    a, _ = _random_run(3, ops=30)
    b, _ = _random_run(3, ops=30)
    assert a.groups == b.groups and np.array_equal(a.sa, b.sa) and a.forged_created == b.forged_created


def test_vectorized_group_scores_match_the_plain_python_twin():
    state, _ = _random_run(4, ops=30)
    rng = np.random.default_rng(9)
    for row in rng.integers(0, state.pool.n, 20):
        qids = dyn.EncodedRow.of(state.pool, int(row))
        sa = int(rng.integers(len(CAT.values)))
        fast = dyn.group_scores(state, qids, sa)
        plain = np.array(dyn.group_scores_reference(state, qids, sa))
        assert np.allclose(fast, plain, atol=1e-12)
        assert dyn._best(fast) == dyn._best(plain)


def test_group_left_with_only_its_forged_record_is_dissolved_not_refused():
    """K = 1: after its real records are deleted a group would hold only a forged row, which
    stands for nobody; it dissolves like any group below K (it used to raise DataError)."""
    state, schema = _age_state([20, 60], ["anemia", "acne"], [[0], [1]], k=1)
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 21), CAT.code("epilepsy")))
    assert state.groups[0].size == 3  # 20, 21 and a forged record
    state = dyn.delete(state, 0)
    state = dyn.delete(state, 100)
    assert [g.gid for g in state.groups] == [1] and state.forged_count == 0 and state.real_count == 1


def test_new_record_with_wrong_shape_or_unknown_leaf_is_refused():
    state, schema = _two_groups()
    bad = _age_row(schema, 30)
    with pytest.raises(DataError, match="shape"):
        dyn.insert(state, dyn.NewRecord(200, replace(bad, cont=np.array([0.1, 0.2])), 0))
    rng = np.random.default_rng(0)
    cols = _random_table(rng, 10)
    enc = encode(fit_schema(KINDS, cols), cols)
    sstate = dyn.from_grouping(enc, rng.integers(0, 32, 10), range(10), [list(range(10))], CAT, k=5)
    row = dyn.EncodedRow.of(enc, 0)
    with pytest.raises(DataError, match="outside its hierarchy"):
        dyn.insert(sstate, dyn.NewRecord(50, replace(row, sem=np.array([len(ZIP.rows)], dtype=np.int32)), 0))


def test_encode_record_matches_the_first_release_encoding_and_extends_nominal_domains():
    rng = np.random.default_rng(5)
    cols = _random_table(rng, 40)
    schema = fit_schema(KINDS, cols)
    enc = encode(schema, cols)
    sa = rng.integers(0, len(CAT.values), 40)
    state = dyn.from_grouping(enc, sa, range(40), first_release(enc, sa, CAT, k=5).groups, CAT, k=5)
    for i in (0, 17, 39):
        same, row = dyn.encode_record(state, schema, {c: cols[c][i] for c in cols})
        assert same is state
        ref = dyn.EncodedRow.of(enc, i)
        for name in ("cont", "sem", "nom", "ordn"):
            assert np.allclose(getattr(row, name), getattr(ref, name)), name
    values = {c: cols[c][0] for c in cols} | {"race": "unseen", "age": 120}
    new_state, row = dyn.encode_record(state, schema, values)
    race = [k.column for k in KINDS if k.kind == "nominal"].index("race")
    assert new_state.pool.nom_values[race][-1] == "unseen" and row.nom[race] == len(state.pool.nom_values[race])
    lo, hi = schema.ranges["age"]
    assert row.cont[0] == pytest.approx((120 - lo) / (hi - lo)) and row.cont[0] > 1
    inserted = dyn.insert(new_state, dyn.NewRecord(99, row, 0))
    assert inserted.real_count == 41 and all(g.size >= 5 for g in inserted.groups)
    with pytest.raises(DataError, match="not a leaf"):
        dyn.encode_record(state, schema, values | {"zip": "99999"})
    with pytest.raises(DataError, match="outside its order"):
        dyn.encode_record(state, schema, values | {"education": "kindergarten"})
    with pytest.raises(DataError, match="no value for QID 'sex'"):
        dyn.encode_record(state, schema, {c: v for c, v in values.items() if c != "sex"})


def _store_and_restore(state):
    """What a caller stores after a version (real rows, groups by id, forged records, counters),
    and the state rebuilt from it."""
    order = sorted(state.real_row)
    rows = np.array([state.real_row[i] for i in order])
    pool = state.pool
    enc = replace(pool, cont=pool.cont[rows], sem=pool.sem[rows], nom=pool.nom[rows], ordn=pool.ordn[rows])
    position = {i: p for p, i in enumerate(order)}
    groups = [[position[int(state.row_ids[r])] for r in g.real] for g in state.groups]
    return dyn.restore(enc, state.sa[rows], order, groups, CAT, k=state.k, gids=[g.gid for g in state.groups],
                       forged=state.forged_records(), seed=state.seed, step=state.step,
                       forged_created=state.forged_created, forged_rewrites=state.forged_rewrites)


def _published(state):
    """Per group id: sorted real ids and sorted forged SA codes (what a version publishes)."""
    return {g.gid: (sorted(int(state.row_ids[r]) for r in g.real), sorted(int(state.sa[r]) for r in g.forged))
            for g in state.groups}


def test_restored_state_continues_exactly_like_the_stored_one():
    state, live = _random_run(6, ops=30)
    assert state.forged_count > 0
    restored = _store_and_restore(state)
    assert _published(restored) == _published(state)
    assert {(f.id, f.gid, f.sa, f.template) for f in restored.forged_records()} == \
        {(f.id, f.gid, f.sa, f.template) for f in state.forged_records()}
    _check_invariants(restored, live, (restored.groups, restored.counts, restored.forged_created))
    victim = sorted(live)[3]
    changed = sorted(live)[10]
    for s in (state, restored):
        assert np.allclose(dyn.group_scores(s, dyn.EncodedRow.of(state.pool, 0), 5),
                           dyn.group_scores(state, dyn.EncodedRow.of(state.pool, 0), 5))
    runs = []
    for s in (state, restored):
        s = dyn.insert(s, dyn.NewRecord(77_777, dyn.EncodedRow.of(state.pool, 0), 5))
        s = dyn.delete(s, victim)
        s = dyn.modify(s, changed, dyn.Modification(sa=9))
        runs.append(s)
    assert _published(runs[0]) == _published(runs[1])
    assert runs[0].forged_created == runs[1].forged_created


def test_restore_refuses_groups_below_k_counting_forged_rows():
    state, schema = _two_groups()
    state = dyn.insert(state, dyn.NewRecord(100, _age_row(schema, 61), CAT.code("bronchitis")))
    forged = state.forged_records()
    # B stored with three real members: 3 + its forged row = K is accepted, 3 alone is refused.
    enc = replace(state.pool, cont=state.pool.cont[:8], sem=state.pool.sem[:8], nom=state.pool.nom[:8],
                  ordn=state.pool.ordn[:8])
    ok = dyn.restore(enc, state.sa[:8], range(8), [[0, 1, 2, 3], [4, 5, 6]], CAT, k=4, forged=forged)
    assert [g.size for g in ok.groups] == [4, 4] and ok.forged_count == 1
    with pytest.raises(DataError, match="fewer than K = 4"):
        dyn.restore(enc, state.sa[:8], range(8), [[0, 1, 2, 3], [4, 5, 6]], CAT, k=4)
    with pytest.raises(DataError, match="not among the groups"):
        dyn.restore(enc, state.sa[:8], range(8), [[0, 1, 2, 3], [4, 5, 6, 7]], CAT, k=4, gids=[0, 2], forged=forged)
