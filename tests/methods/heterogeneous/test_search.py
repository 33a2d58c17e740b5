"""engine/methods/heterogeneous search: initial k-regular graphs (initial.py) and the iterated local search (ils.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.heterogeneous import initial
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph, validate_cover
from ppdp.engine.methods.heterogeneous.ils import iterated_local_search
from ppdp.engine.methods.heterogeneous.metrics import QidTable, gcp, sil
from ppdp.errors import DataError


def _random_table(n: int, seed: int) -> QidTable:
    rng = np.random.default_rng(seed)
    numeric = np.column_stack([rng.integers(0, 100, n), rng.normal(50, 20, n)]).astype(float)
    categorical = np.column_stack([rng.integers(0, 4, n), rng.integers(0, 7, n)])
    return QidTable(numeric, categorical, (4, 7))


def _assert_k_regular(graph: KRegularGraph, n: int, k: int) -> None:
    # Independent of validate_cover: count degrees from the edge list directly.
    assert graph.cover.shape == (n, k)
    assert (graph.cover[:, 0] == np.arange(n)).all()  # self edges
    original, anonymized = graph.edges()
    assert (np.bincount(original, minlength=n) == k).all()
    assert (np.bincount(anonymized, minlength=n) == k).all()
    assert len(set(zip(original.tolist(), anonymized.tolist(), strict=True))) == n * k  # no duplicate edge


@pytest.mark.parametrize("n,k", [(60, 3), (61, 4), (37, 5), (5, 5)])
def test_every_initial_solution_is_valid_and_k_regular(n, k):
    table = _random_table(n, seed=n + k)
    graphs = {
        "k_member": initial.k_member(table, k, seed=1),
        "l_greedy": initial.l_greedy(table, k),
        "l_greedy_window": initial.l_greedy(table, k, window=2 * k),
        "hungarian": initial.hungarian(table, k),
    }
    for graph in graphs.values():
        _assert_k_regular(graph, n, k)


def test_greedy_clusters_partition_rows_into_k_to_2k_minus_1():
    table = _random_table(53, seed=3)
    for groups in (initial.k_member_clusters(table, 5), initial.l_greedy_clusters(table, 5)):
        rows = np.sort(np.concatenate(groups))
        assert (rows == np.arange(53)).all()
        assert all(5 <= g.size <= 9 for g in groups)


def test_from_clusters_turns_groups_larger_than_k_into_k_regular_graphs():
    groups = [[0, 1, 2, 3, 4, 5, 6], [7, 8, 9], [10, 11, 12, 13]]
    graph = initial.from_clusters(groups, 3, seed=4)
    _assert_k_regular(graph, 14, 3)
    for g in groups:  # every edge stays inside its cluster: the homogeneous loss is not exceeded
        assert set(graph.cover[g].reshape(-1).tolist()) == set(g)
    exact = initial.from_clusters([[0, 1, 2], [3, 4, 5]], 3)
    assert set(exact.cover[0].tolist()) == {0, 1, 2}  # a group of exactly k is a clique


def test_from_clusters_refuses_groups_that_do_not_partition_or_are_too_small():
    with pytest.raises(DataError, match="fewer than k"):
        initial.from_clusters([[0, 1], [2, 3, 4]], 3)
    with pytest.raises(DataError, match="repeat a row"):
        initial.from_clusters([[0, 1, 2], [2, 3, 4]], 3)


def test_hungarian_beats_a_random_graph_on_gcp():
    # Each matching minimizes the added NCP, so it must do better than an arbitrary k-regular
    # graph of the same data (a random relabelling of the circulant graph).
    table = _random_table(40, seed=9)
    rng = np.random.default_rng(0)
    perm = rng.permutation(40)
    inv = np.argsort(perm)
    circ = (np.arange(40)[:, None] + np.arange(4)[None, :]) % 40
    random_graph = KRegularGraph(perm[circ][inv])
    assert gcp(table, initial.hungarian(table, 4)) < gcp(table, random_graph)


@pytest.mark.parametrize("objective", ["gcp", "sil"])
def test_ils_never_worsens_and_respects_the_budget(objective):
    table = _random_table(80, seed=5)
    start = initial.k_member(table, 4, seed=0)
    result = iterated_local_search(table, start, objective=objective, seconds=30,
                                   max_evaluations=200_000, seed=7, chunk_evaluations=5_000)
    assert result.evaluations == 200_000
    validate_cover(np.array(result.graph.cover))
    full = gcp if objective == "gcp" else sil
    assert result.initial_objective == pytest.approx(full(table, start), abs=1e-9)
    assert result.objective == pytest.approx(full(table, result.graph), abs=1e-9)
    values = [v for _, _, v in result.history]
    assert all(b <= a + 1e-12 for a, b in zip(values, values[1:], strict=False))
    evals = [e for _, e, _ in result.history]
    assert evals == sorted(evals) and evals[-1] == 200_000
    assert result.objective <= result.initial_objective
    assert result.local_optima >= 1  # 80 tuples: the search reaches optima and perturbs


def test_ils_respects_the_time_limit():
    table = _random_table(300, seed=6)
    start = initial.l_greedy(table, 5)
    iterated_local_search(table, start, seconds=0.2, max_evaluations=1000)  # compile outside
    result = iterated_local_search(table, start, seconds=0.5, seed=1, chunk_evaluations=10_000)
    assert result.seconds < 0.5 + 1.0  # one chunk of slack at most
    assert result.evaluations > 0


def test_ils_is_reproducible_by_seed():
    table = _random_table(70, seed=8)
    start = initial.k_member(table, 3, seed=2)
    runs = [iterated_local_search(table, start, seconds=30, max_evaluations=50_000, seed=s)
            for s in (11, 11, 12)]
    assert (runs[0].graph.cover == runs[1].graph.cover).all()
    assert runs[0].objective == runs[1].objective
    assert [h[1:] for h in runs[0].history] == [h[1:] for h in runs[1].history]
    assert not (runs[0].graph.cover == runs[2].graph.cover).all()  # the seed matters


def test_ils_improves_gcp_over_k_member_strictly():
    table = _random_table(120, seed=10)
    start = initial.k_member(table, 4, seed=0)
    result = iterated_local_search(table, start, objective="gcp", seconds=30,
                                   max_evaluations=300_000, seed=3)
    assert gcp(table, result.graph) < gcp(table, start)
