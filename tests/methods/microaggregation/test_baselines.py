"""Microaggregation baselines (engine/methods/microaggregation/{dpp,mdav,oka,ika,entropy_l,
t_closeness,m_invariance}.py) on the registry's common interface.

Every registered algorithm: groups of at least K covering every real record once, the same seed
gives the same groups, and 20 random insert/delete/modify operations keep both. Then checks
specific to each baseline: MDAV against a hand-worked example and a plain-Python MDAV written
here, m-invariance's constant signatures, DPP's forged values (different, not necessarily
unlinked), and the SA criteria of the entropy l-diversity and t-closeness clusterings.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.methods.microaggregation import dynamic as dyn
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params
from ppdp.engine.methods.microaggregation.distances import (
    QidKind,
    centroid,
    encode,
    fit_schema,
    record_distance,
)
from ppdp.engine.methods.microaggregation.entropy import entropy_of_counts
from ppdp.engine.methods.microaggregation.linkage import SensitiveCatalogue
from ppdp.engine.methods.microaggregation.mdav import mdav_groups
from ppdp.errors import DataError

# A synthetic catalogue: 12 values in 4 categories of 3.
CAT = SensitiveCatalogue(from_rows("disease", [[f"d{c}{i}", f"cat{c}", "*"] for c in range(4) for i in range(3)]))
EDU = ("primary", "secondary", "bachelor", "master", "doctorate")
ZIP = from_rows("zip", [["10010", "100**", "*"], ["10020", "100**", "*"], ["20010", "200**", "*"],
                        ["20020", "200**", "*"], ["30010", "300**", "*"]])
KINDS = [QidKind("age", "continuous"), QidKind("zip", "semantic", hierarchy=ZIP), QidKind("sex", "nominal"),
         QidKind("education", "ordinal", order=EDU)]
K = 4
N = 200
NAMES = ["dpp", "drasl", "entropy-l", "ika", "m-invariance", "mdav", "oka", "t-closeness"]


def _table(seed, n):
    rng = np.random.default_rng(seed)
    cols = {"age": rng.integers(17, 90, n).tolist(), "zip": rng.choice([r[0] for r in ZIP.rows], n).tolist(),
            "sex": rng.choice(["F", "M"], n).tolist(), "education": rng.choice(EDU, n).tolist()}
    schema = fit_schema(KINDS, cols)
    return encode(schema, cols), rng.integers(0, len(CAT.values), n)


def _head(enc, n):
    return replace(enc, cont=enc.cont[:n], sem=enc.sem[:n], nom=enc.nom[:n], ordn=enc.ordn[:n])


def _groups_by_id(state):
    return sorted(tuple(sorted(state.member_ids(i))) for i in range(len(state.groups)))


def _check_partition(state, live):
    assert all(g.size >= state.k for g in state.groups), [g.size for g in state.groups]
    real_ids = [int(state.row_ids[r]) for g in state.groups for r in g.real]
    assert len(real_ids) == len(set(real_ids)) and set(real_ids) == set(live) == set(state.real_row)
    assert state.counts.sum() == state.real_count + state.forged_count


def _release(name, seed=3, n=N, k=K):
    enc, sa = _table(seed, n)
    ids = [1000 + i for i in range(n)]
    return ALGORITHMS.get(name).first_release(enc, sa, ids, CAT, Params(k=k, seed=seed)), ids


def test_registry_holds_drasl_and_every_baseline():
    assert ALGORITHMS.names() == NAMES
    for name in NAMES:
        algo = ALGORITHMS.get(name)
        assert algo.name == name
        assert algo.dynamic == (name in ("drasl", "dpp", "m-invariance"))
        assert algo.forges == algo.dynamic


@pytest.mark.parametrize("name", NAMES)
def test_first_release_is_a_partition_into_groups_of_k_and_reproducible(name):
    state, ids = _release(name)
    _check_partition(state, ids)
    again, _ = _release(name)
    assert _groups_by_id(again) == _groups_by_id(state)
    # Not one group of everything: the algorithms build groups of about K.
    assert len(state.groups) >= N // (3 * K)


def _random_ops(name, seed, ops=20, check=None):
    rng = np.random.default_rng(seed)
    enc_all, sa_all = _table(seed, N + ops)
    ids = [1000 + i for i in range(N)]
    algo = ALGORITHMS.get(name)
    state = algo.first_release(_head(enc_all, N), sa_all[:N], ids, CAT, Params(k=K, seed=seed))
    live, next_row, sa_changed = set(ids), N, set()
    for step in range(ops):
        before = state
        op = step % 3
        if op == 0:
            rid = 5000 + step
            state = algo.insert(state, dyn.NewRecord(rid, dyn.EncodedRow.of(enc_all, next_row), int(sa_all[next_row])))
            next_row += 1
            live.add(rid)
        elif op == 1:
            rid = sorted(live)[int(rng.integers(len(live)))]
            state = algo.delete(state, rid)
            live.remove(rid)
        else:
            rid = sorted(live)[int(rng.integers(len(live)))]
            if rng.random() < 0.5:
                mod = dyn.Modification(qids=dyn.EncodedRow.of(enc_all, next_row))
                next_row += 1
            else:
                mod = dyn.Modification(sa=int(rng.integers(len(CAT.values))))
                sa_changed.add(rid)
            state = algo.modify(state, rid, mod)
        _check_partition(state, live)
        if check:
            check(before, state, live, sa_changed)
    return state


@pytest.mark.parametrize("name", NAMES)
def test_random_operations_keep_the_partition_and_are_reproducible(name):
    state = _random_ops(name, seed=11)
    assert _groups_by_id(_random_ops(name, seed=11)) == _groups_by_id(state)


def test_static_algorithms_recluster_with_the_records_ids():
    enc, sa = _table(3, N + 1)
    ids = [1000 + i for i in range(N)]
    state = ALGORITHMS.get("mdav").first_release(_head(enc, N), sa[:N], ids, CAT, Params(k=K, seed=3))
    new = ALGORITHMS.get("mdav").insert(state, dyn.NewRecord(77, dyn.EncodedRow.of(enc, N), int(sa[N])))
    # The re-clustered table is the old one plus the record: MDAV on it directly gives these groups.
    direct = mdav_groups(enc, K)
    all_ids = ids + [77]
    assert _groups_by_id(new) == sorted(tuple(sorted(all_ids[r] for r in g)) for g in direct)
    assert new.step == state.step + 1 and new.forged_count == 0
    with pytest.raises(DataError, match="not in the release"):
        ALGORITHMS.get("mdav").delete(new, 12345)


# --- MDAV ------------------------------------------------------------------------------------


def test_mdav_hand_worked_example():
    # Ages 1 2 3 10 11 12 20 21, K = 2. n = 8 >= 3K: centroid 10, farthest 21 -> {21, 20};
    # farthest from 21 is 1 -> {1, 2}. Left 3 10 11 12: 4 >= 2K: centroid 9, farthest 3 -> {3, 10}
    # (10 is at 7, 11 at 8); the rest {11, 12}.
    ages = [1, 2, 3, 10, 11, 12, 20, 21]
    schema = fit_schema([QidKind("age", "continuous")], {"age": ages})
    groups = mdav_groups(encode(schema, {"age": ages}), 2)
    assert [sorted(ages[r] for r in g) for g in groups] == [[20, 21], [1, 2], [3, 10], [11, 12]]


def _mdav_reference(records, schema, k):
    """MDAV in plain Python on raw records (Domingo-Ferrer and Mateo-Sanz 2002)."""
    remaining = list(range(len(records)))
    groups = []

    def farthest(p, rows):
        return max(rows, key=lambda r: record_distance(p, records[r], schema))

    def group_around(seed, rows):
        near = sorted((r for r in rows if r != seed), key=lambda r: record_distance(records[seed], records[r], schema))
        g = [seed] + near[:k - 1]
        return g, [r for r in rows if r not in g]

    while len(remaining) >= 3 * k:
        r = farthest(centroid([records[i] for i in remaining], schema), remaining)
        g, remaining = group_around(r, remaining)
        groups.append(g)
        s = farthest(records[r], remaining)
        g, remaining = group_around(s, remaining)
        groups.append(g)
    if len(remaining) >= 2 * k:
        r = farthest(centroid([records[i] for i in remaining], schema), remaining)
        g, remaining = group_around(r, remaining)
        groups.append(g)
    if remaining:
        groups.append(remaining)
    return groups


@pytest.mark.parametrize("k", [3, 5])
def test_mdav_matches_a_plain_python_mdav(k):
    rng = np.random.default_rng(k)
    n = 61
    # Real-valued continuous QIDs so that no two distances tie (ties may break differently in
    # the reference's rounding).
    cols = {"age": rng.uniform(17, 90, n).tolist(), "income": rng.uniform(0, 1e5, n).tolist(),
            "sex": rng.choice(["F", "M"], n).tolist(), "education": rng.choice(EDU, n).tolist()}
    kinds = [QidKind("age", "continuous"), QidKind("income", "continuous"), QidKind("sex", "nominal"),
             QidKind("education", "ordinal", order=EDU)]
    schema = fit_schema(kinds, cols)
    records = [{c: cols[c][i] for c in cols} for i in range(n)]
    got = mdav_groups(encode(schema, cols), k)
    assert [sorted(g) for g in got] == [sorted(g) for g in _mdav_reference(records, schema, k)]


# --- m-invariance ------------------------------------------------------------------------------


def _signatures(state):
    out = {}
    for i in range(len(state.groups)):
        sig = frozenset(np.flatnonzero(state.counts[i]).tolist())
        for rid in state.member_ids(i):
            out[rid] = sig
    return out


def test_m_invariance_keeps_signatures_and_m_uniqueness():
    def check(before, after, live, sa_changed):
        assert int(after.counts.max()) == 1  # m-unique: the values of a group are distinct
        old, new = _signatures(before), _signatures(after)
        for rid in live & set(old):
            if rid not in sa_changed:
                assert new[rid] == old[rid], rid

    state = _random_ops("m-invariance", seed=5, ops=30, check=check)
    assert state.forged_created > 0  # deletions left counterfeits


def test_m_invariance_first_release_is_m_unique_even_with_a_dominant_value():
    # Half the records share one value: more than n / K, so the bucketization leaves some over
    # and they need counterfeit groups.
    enc, sa = _table(8, 80)
    sa[:40] = 0
    state = ALGORITHMS.get("m-invariance").first_release(enc, sa, list(range(80)), CAT, Params(k=K, seed=1))
    _check_partition(state, range(80))
    assert int(state.counts.max()) == 1 and state.forged_count > 0
    assert all(f.sa != 0 for f in state.forged_records())


def test_m_invariance_needs_k_catalogued_values():
    small = SensitiveCatalogue(from_rows("disease", [["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]]))
    enc, _ = _table(1, 20)
    with pytest.raises(DataError, match="at least 4 catalogued sensitive values"):
        ALGORITHMS.get("m-invariance").first_release(enc, np.zeros(20, dtype=np.int64), list(range(20)), small,
                                                     Params(k=4))


def test_m_invariance_insert_takes_a_counterfeits_place():
    state, ids = _release("m-invariance")
    algo = ALGORITHMS.get("m-invariance")
    victim = ids[0]
    sa = int(state.sa[state.real_row[victim]])
    gone = algo.delete(state, victim)
    assert gone.forged_count == state.forged_count + 1
    enc, _ = _table(3, N)
    back = algo.insert(gone, dyn.NewRecord(9999, dyn.EncodedRow.of(enc, 0), sa))
    assert back.forged_count == state.forged_count and len(back.groups) == len(state.groups)


# --- DPP ---------------------------------------------------------------------------------------


def test_dpp_forged_value_differs_from_the_inserted_one_but_may_be_synonymous():
    state, _ = _release("dpp")
    enc, sa = _table(4, 60)
    algo = ALGORITHMS.get("dpp")
    synonymous = 0
    for i in range(60):
        state = algo.insert(state, dyn.NewRecord(7000 + i, dyn.EncodedRow.of(enc, i), int(sa[i])))
        g = state.groups[state.group_of(7000 + i)]
        (fake,) = g.forged
        assert int(state.sa[fake]) != int(sa[i])
        synonymous += int(CAT.category_code[state.sa[fake]] == CAT.category_code[sa[i]])
    # No catalogue condition: with 2 of the 11 other values in the same category, some of 60
    # draws are synonymous (DRASL's Alg. 3 never draws one: tests/methods/microaggregation/test_drasl_dynamic.py).
    assert synonymous > 0


def test_dpp_criterion_has_no_linkage_term():
    state, _ = _release("dpp")
    assert not state.linkage and not state.forge_unlinked
    enc, sa = _table(4, 1)
    qids, s = dyn.EncodedRow.of(enc, 0), int(sa[0])
    scores = dyn.group_scores(state, qids, s)
    assert np.allclose(scores, dyn.group_scores_reference(state, qids, s))
    with_link = dyn.group_scores(replace(state, linkage=True), qids, s)
    assert np.all(scores > with_link - 1e-12) and np.any(scores > with_link)


# --- SA-criterion clusterings ----------------------------------------------------------------


def _group_sa_counts(state):
    return [state.counts[i] for i in range(len(state.groups))]


def test_entropy_l_groups_are_more_diverse_than_sa_blind_ones():
    ent, _ = _release("entropy-l")
    blind, _ = _release("mdav")
    mean = [np.mean([entropy_of_counts(c) for c in _group_sa_counts(s)]) for s in (ent, blind)]
    assert mean[0] > mean[1]
    # l = K: with 12 values drawn uniformly, most groups of K are K distinct values.
    diverse = [entropy_of_counts(c) >= math.log10(K) - 1e-12 for c in _group_sa_counts(ent)]
    assert np.mean(diverse) > 0.8


def test_t_closeness_groups_are_closer_to_the_table_than_sa_blind_ones():
    tc, _ = _release("t-closeness")
    blind, _ = _release("mdav")
    q = blind.counts.sum(axis=0) / blind.counts.sum()

    def dist(c):
        return float(np.sqrt(((c / c.sum() - q) ** 2).sum()))

    means = [np.mean([dist(c) for c in _group_sa_counts(s)]) for s in (tc, blind)]
    assert means[0] < means[1]
    assert np.mean([dist(c) <= 0.35 + 1e-12 for c in _group_sa_counts(tc)]) > 0.8


# --- SA-blind clusterings: structure -----------------------------------------------------------


@pytest.mark.parametrize("name", ["mdav", "oka", "ika"])
def test_sa_blind_clusterings_build_floor_n_over_k_groups(name):
    # MDAV and IKA build groups of exactly K and fold the fewer than K (IKA) or K to 2K - 1 (MDAV)
    # left over into groups; OKA seeds floor(n / K) clusters and never opens another.
    state, _ = _release(name, n=203)
    assert len(state.groups) == 203 // K
    assert sorted(g.size for g in state.groups)[:-3] == [K] * (len(state.groups) - 3)


@pytest.mark.parametrize("name", ["mdav", "ika"])
def test_mdav_and_ika_recover_tight_clusters_of_k(name):
    # Three tight clusters of K ages far apart: whatever the seed record, its K - 1 nearest
    # records are its own cluster, so both algorithms return the clusters.
    ages = [20, 21, 22, 23, 50, 51, 52, 53, 80, 81, 82, 83]
    schema = fit_schema([QidKind("age", "continuous")], {"age": ages})
    enc = encode(schema, {"age": ages})
    state = ALGORITHMS.get(name).first_release(enc, np.zeros(12, dtype=np.int64), ages, CAT, Params(k=4, seed=2))
    assert _groups_by_id(state) == [(20, 21, 22, 23), (50, 51, 52, 53), (80, 81, 82, 83)]
