"""The local repair of a heterogeneous k-anonymity graph (engine/methods/heterogeneous/repair.py): on random
instances with deletions, insertions and modifications, the repaired graph is exactly k-regular
with every self edge, and the edges between surviving tuples that the repair did not need to
move are kept."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ppdp.engine.methods.heterogeneous.graph import circulant_graph
from ppdp.engine.methods.heterogeneous.initial import k_member
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.engine.methods.heterogeneous.repair import repair_graph


def _table(rng, n: int) -> QidTable:
    return QidTable(rng.integers(17, 90, size=(n, 1)).astype(float), rng.integers(0, 3, size=(n, 1)), (3,))


def _assert_k_regular_with_self_edges(cover: np.ndarray, n: int, k: int) -> None:
    """Independent of KRegularGraph's own validation: degrees counted here."""
    assert cover.shape == (n, k)
    assert all(cover[t, 0] == t for t in range(n))  # self edge in slot 0
    assert all(len(set(cover[t].tolist())) == k for t in range(n))  # k distinct originals per row
    indeg = Counter(cover.reshape(-1).tolist())
    assert set(indeg) == set(range(n)) and set(indeg.values()) == {k}  # every original covered k times


@pytest.mark.parametrize("seed", range(40))
def test_repaired_graph_is_k_regular_with_self_edges_on_random_instances(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    n0 = int(rng.integers(k + 2, 60))
    old_keys = [f"o{i}" for i in range(n0)]
    g0 = k_member(_table(rng, n0), k, seed=seed) if seed % 2 else circulant_graph(n0, k)
    previous = {old_keys[t]: [old_keys[o] for o in g0.cover[t]] for t in range(n0)}
    deleted = set(rng.choice(old_keys, size=int(rng.integers(0, n0 - k + 1)), replace=False).tolist())
    inserted = [f"n{i}" for i in range(int(rng.integers(0, 2 * k + 3)))]
    keys = [key for key in old_keys if key not in deleted] + inserted
    if len(keys) < k:
        keys += [f"x{i}" for i in range(k)]
    rng.shuffle(keys)
    result = repair_graph(previous, keys, _table(rng, len(keys)), k)
    cover = np.asarray(result.graph.cover)
    _assert_k_regular_with_self_edges(cover, len(keys), k)
    assert result.inserted == len(keys) - len(set(keys) & set(old_keys)) and result.deleted == len(deleted)
    # every swap or direct pairing moves at most one surviving edge: the rest stand
    index = {key: i for i, key in enumerate(keys)}
    survived = {(index[o], index[a]) for a, row in previous.items() if a in index for o in row if o in index}
    now = {(int(o), t) for t in range(len(keys)) for o in cover[t]}
    assert len(survived - now) <= result.swaps


def test_one_insert_gets_k_minus_one_swaps_and_nothing_else_moves():
    rng = np.random.default_rng(7)
    g0 = circulant_graph(30, 4)
    old = [f"o{i}" for i in range(30)]
    previous = {old[t]: [old[o] for o in g0.cover[t]] for t in range(30)}
    result = repair_graph(previous, old + ["new"], _table(rng, 31), 4)
    assert result.swaps == 3 and result.direct_edges == 0 and result.inserted == 1
    cover = np.asarray(result.graph.cover)
    _assert_k_regular_with_self_edges(cover, 31, 4)
    before = {(int(o), t) for t in range(30) for o in g0.cover[t]}
    after = {(int(o), t) for t in range(30) for o in cover[t]}
    assert len(before - after) == 3  # each swap replaced one edge (o, c') by (o, i') and (i, c')


def test_deletions_only_are_repaired_by_direct_pairing_where_possible():
    rng = np.random.default_rng(3)
    g0 = k_member(_table(rng, 40), 3, seed=1)
    old = [f"o{i}" for i in range(40)]
    previous = {old[t]: [old[o] for o in g0.cover[t]] for t in range(40)}
    keys = old[5:]
    result = repair_graph(previous, keys, _table(rng, 35), 3)
    _assert_k_regular_with_self_edges(np.asarray(result.graph.cover), 35, 3)
    assert result.deleted == 5 and result.inserted == 0
