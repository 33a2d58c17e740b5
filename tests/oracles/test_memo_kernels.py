"""The class memo's Numba index (engine/kernels/memo.py) against its plain-Python
twin (class_memo.DictClassMemo, the dict-based memo it replaced): the same slots for the same
claims, predecessor lookups and batch plans, through evictions of the ring; and lattice
searches whose classes are rolled up through it evaluate the same nodes, with the same results,
as searches that classify every node from scratch."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization import problem as problem_module
from ppdp.engine.methods.generalization.evaluators.class_memo import ClassMemo, DictClassMemo
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.oracles.test_evaluator_agreement import random_table


def assert_same_index(memo: ClassMemo, twin: DictClassMemo) -> None:
    assert len(memo) == len(twin)
    assert np.array_equal(memo.nodes, twin.nodes) and np.array_equal(memo.levels, twin.levels)
    for s in np.flatnonzero(memo.levels >= 0):  # every remembered node is found at its slot
        assert memo.slot(memo.nodes[s]) == twin.slot(twin.nodes[s]) == s


@pytest.mark.parametrize("seed", range(40))
def test_kernels_give_the_twins_slots(seed: int) -> None:
    rng = np.random.default_rng(25_000 + seed)
    n_qids = int(rng.integers(1, 6))
    heights = rng.integers(0, 4, size=n_qids)
    capacity = int(rng.integers(1, 40))  # small rings: many evictions, hash entries shifted back
    memo, twin = ClassMemo(3, n_qids, capacity), DictClassMemo(n_qids, capacity)
    nodes = all_nodes(heights)
    for _ in range(60):
        G = nodes[rng.integers(0, len(nodes), size=int(rng.integers(1, 8)))]
        op = rng.integers(0, 3)
        if op == 0:  # one node at a time, as the memo's users did before the batch plan
            for g in G:
                assert memo.predecessor(g) == twin.predecessor(g)
                assert memo.claim(g) == twin.claim(g)
        elif op == 1:
            got, want = memo.plan(G), twin.plan(G)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        else:  # lookups alone change nothing
            for g in G:
                assert memo.slot(g) == twin.slot(g) and memo.predecessor(g) == twin.predecessor(g)
        assert_same_index(memo, twin)


def test_plan_rolls_a_batch_up_from_its_own_earlier_rows() -> None:
    memo = ClassMemo(n_rows=4, n_qids=2, capacity=8)
    G = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [2, 2]])
    parent, own = memo.plan(G)
    assert parent.tolist() == [-1, own[0], own[1], own[0], own[2]]  # [2, 2]: highest below is [1, 1]
    assert len(set(own.tolist())) == 5 and memo.plan(G[:1])[0].tolist() == [own[0]]  # remembered: itself


def lattice_run(table, models, optimizer, params, *, rollup: bool, monkeypatch):
    """(result, evaluated node batches in order) of one search; ``rollup`` False: every node's
    classes from scratch (no class memo: the cache size it may use set to 0)."""
    with monkeypatch.context() as m:
        if not rollup:
            m.setattr(problem_module, "CLASS_CACHE_BYTES", 0)
        problem = Problem(table, models)
        seen: list[np.ndarray] = []
        fused = problem.evaluate_optimal_fused

        def recording(G, **kw):
            seen.append(np.array(G))
            return fused(G, **kw)

        m.setattr(problem, "evaluate_optimal_fused", recording)
        result = run_optimizer(optimizer, problem, budget=10**6, params=dict(params))
    return result, seen


@pytest.mark.parametrize("seed", range(12))
def test_searches_evaluate_the_same_nodes_with_and_without_the_rollup(seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(77_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=120)
    while table.n_sa < 2:
        table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=120)
    k = ("k-anonymity", {"k": int(rng.integers(2, 4))})
    second = [("t-closeness", {"t": float(rng.uniform(0.1, 0.6))}),
              ("t-closeness", {"t": float(rng.uniform(0.1, 0.5)), "distance": "equal"}),
              ("recursive-cl-diversity", {"c": 3.0, "l": 2}),
              ("distinct-l-diversity", {"l": 2})][seed % 4]
    models = [build_model(n, p) for n, p in (k, second)]
    mode = ("bound", "nodes", "exhaustive")[seed % 3]
    with_rollup, nodes_a = lattice_run(table, models, "lattice", {"mode": mode}, rollup=True, monkeypatch=monkeypatch)
    scratch, nodes_b = lattice_run(table, models, "lattice", {"mode": mode}, rollup=False, monkeypatch=monkeypatch)
    assert len(nodes_a) == len(nodes_b) and all(np.array_equal(a, b) for a, b in zip(nodes_a, nodes_b, strict=True))
    assert with_rollup.td == scratch.td and np.array_equal(with_rollup.g, scratch.g)
    assert with_rollup.certified == scratch.certified and with_rollup.evaluations == scratch.evaluations
    assert np.array_equal(with_rollup.retained, scratch.retained) and with_rollup.feasible == scratch.feasible
