"""Nearest-neighbour candidate lists of the local search (engine/methods/heterogeneous/neighbors.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.heterogeneous import initial
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.ils import iterated_local_search
from ppdp.engine.methods.heterogeneous.metrics import QidTable, gcp
from ppdp.engine.methods.heterogeneous.neighbors import nearest_neighbors
from ppdp.errors import SpecError


def _table(n: int, seed: int) -> QidTable:
    rng = np.random.default_rng(seed)
    num = np.column_stack([rng.integers(0, 6, n), rng.normal(size=n)]).astype(float)  # ties and reals
    cat = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 5, n)])
    return QidTable(num, cat, (3, 5))


def _brute_force(table: QidTable, m: int) -> np.ndarray:
    """Independent oracle: every pairwise distance with numpy, then a stable sort per row."""
    num, cat = table.numeric, table.categorical
    span = num.max(axis=0) - num.min(axis=0)
    scaled = num / np.where(span > 0, span, 1.0)
    dist = np.abs(scaled[:, None, :] - scaled[None, :, :]).sum(axis=2) + (cat[:, None, :] != cat[None, :, :]).sum(axis=2)
    np.fill_diagonal(dist, np.inf)
    return np.argsort(dist, axis=1, kind="stable")[:, :m]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numba_and_python_lists_agree_and_hold_the_nearest(seed: int):
    table = _table(120, seed)
    fast = nearest_neighbors(table, 7)
    slow = nearest_neighbors(table, 7, backend="python")
    assert np.array_equal(fast, slow)
    assert fast.shape == (120, 7)
    assert not (fast == np.arange(120)[:, None]).any()  # never the tuple itself
    # the same distances as the oracle's lists (indices may differ only where floats tie
    # after a different summation order, so compare the sorted distance rows)
    oracle = _brute_force(table, 7)
    span = table.numeric.max(axis=0) - table.numeric.min(axis=0)

    def dist(i, j):
        return (np.abs(table.numeric[i] - table.numeric[j]) / span).sum() + (table.categorical[i] != table.categorical[j]).sum()

    for i in range(120):
        got = [dist(i, j) for j in fast[i]]
        want = [dist(i, j) for j in oracle[i]]
        assert np.allclose(got, want, atol=1e-12)
        assert got == sorted(got)


def test_lists_shrink_to_the_table_and_reject_a_negative_size():
    table = _table(5, 0)
    assert nearest_neighbors(table, 10).shape == (5, 4)
    assert nearest_neighbors(table, 0).shape == (5, 0)
    with pytest.raises(SpecError, match="negative"):
        nearest_neighbors(table, -1)


@pytest.mark.slow
def test_granular_search_keeps_the_graph_valid_and_beats_the_full_scan_at_equal_evaluations():
    """At the same evaluation budget on 2,000 tuples the restricted scan improves GCP more than
    the paper's full scan, whose node scans cost O(n k^2) each; the result stays k-regular with
    every self edge and its objective matches a full recomputation."""
    rng = np.random.default_rng(5)
    n = 2000
    table = QidTable(rng.normal(size=(n, 3)), rng.integers(0, 4, (n, 2)), (4, 4))
    start = initial.k_member(table, 4, seed=0)
    full = iterated_local_search(table, start, objective="gcp", seconds=60, max_evaluations=300_000, seed=3)
    near = iterated_local_search(table, start, objective="gcp", seconds=60, max_evaluations=300_000, seed=3, neighbors=12)
    assert near.evaluations == full.evaluations == 300_000
    graph = KRegularGraph(near.graph.cover)  # validates regularity
    assert (graph.cover[:, 0] == np.arange(n)).all()
    assert near.objective == pytest.approx(gcp(table, graph), abs=1e-9)
    assert near.objective < full.objective < near.initial_objective
