"""Checks with nothing suppressed from the classes alone (Flash at a zero limit):
``Problem.evaluate_unsuppressed`` gives bit for bit what the evaluator gives with every record
kept, whichever remembered node below each G its classes are rolled up from, and agrees with
the plain-Python reference; the class memo (engine/methods/generalization/evaluators/class_memo.py) finds a node below
and recycles its oldest slot."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization.evaluators.class_memo import ClassMemo
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.oracles.test_evaluator_agreement import close, random_table
from tests.support import reference as ref

FIELDS = ("ad", "td", "feasible", "violation", "suppressed")


def assert_same(a, b) -> None:
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f  # exact, inf included


@pytest.mark.parametrize("seed", range(30))
def test_unsuppressed_equals_the_evaluator_in_any_order(seed: int) -> None:
    rng = np.random.default_rng(91_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(1, 5)), max_records=80)
    models = [build_model("k-anonymity", {"k": int(rng.integers(1, 6))})]
    nodes = all_nodes(table.heights)
    nodes = nodes[rng.permutation(len(nodes))][:120]  # random order: predecessors from anywhere
    problem = Problem(table, models)
    problem._class_memo = ClassMemo(table.n_rows, table.n_qids, int(rng.integers(1, 6)))  # small: evictions
    reference = Problem(table, models)
    rolled = 0
    for i in range(0, len(nodes), 3):  # batches of up to three
        G = nodes[i : i + 3]
        rolled += sum(problem.class_memo.predecessor(g) >= 0 for g in G)
        got = problem.evaluate_unsuppressed(G)
        assert_same(got, reference.evaluate(G))
        keep = np.ones(table.n_records, dtype=bool)
        for p, g in enumerate(G):
            ad, td, feasible, suppressed = ref.evaluate(table, models, g, keep)
            assert close(float(got.td[p]), td) and bool(got.feasible[p]) == feasible and suppressed == 0
            assert close(float(got.ad[p, 0]), ad[0])
    assert problem.evaluations == len(nodes)
    if len(nodes) > 6:
        assert rolled > 0  # the roll-up ran


@pytest.mark.parametrize("seed", range(10))
def test_remembered_classes_are_those_of_the_evaluation(seed: int) -> None:
    """``Problem.remember_classes`` (the classes alone, for a scorer of them) leaves in the memo
    the class ids ``evaluate_unsuppressed`` leaves, batch after batch in any order, rolled up or
    classified, and counts one evaluation per node; ids that are ``classify``'s (reference:
    rows of one class share their generalized values, rows of two classes do not)."""
    rng = np.random.default_rng(92_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(1, 5)), max_records=80)
    models = [build_model("k-anonymity", {"k": 2})]
    nodes = all_nodes(table.heights)
    nodes = nodes[rng.permutation(len(nodes))][:60]
    capacity = int(rng.integers(1, 6))
    measured, remembered = Problem(table, models), Problem(table, models)
    for problem in (measured, remembered):
        problem._class_memo = ClassMemo(table.n_rows, table.n_qids, capacity)
    gen = np.asarray(table.lookup[0])
    checked = 0
    for i in range(0, len(nodes), 3):
        G = nodes[i : i + 3]
        measured.evaluate_unsuppressed(G)
        remembered.remember_classes(G)
        for g in G:
            slot = remembered.class_memo.slot(g)
            assert slot == measured.class_memo.slot(g)
            if slot < 0:  # a small memo: an earlier node of the batch gave its slot to a later one
                continue
            checked += 1
            ids = remembered.class_memo.ids[slot]
            assert np.array_equal(ids, measured.class_memo.ids[slot])
            values = [tuple(int(gen[q, g[q], table.codes[h, q]]) for q in range(table.n_qids)) for h in range(table.n_rows)]
            first = {v: int(ids[h]) for h, v in reversed(list(enumerate(values)))}
            assert [first[v] for v in values] == ids.tolist()  # one id per generalized row, first seen first
            assert sorted(set(first.values())) == list(range(len(first)))
    assert remembered.evaluations == measured.evaluations == len(nodes)
    assert checked >= len(nodes) // 3


def test_unsuppressed_falls_back_for_other_models() -> None:
    rng = np.random.default_rng(5)
    table = random_table(rng, n_qids=3, max_records=60)
    while table.n_sa == 0:
        table = random_table(rng, n_qids=3, max_records=60)
    models = [build_model("k-anonymity", {"k": 2}), build_model("distinct-l-diversity", {"l": 2})]
    G = all_nodes(table.heights)
    assert_same(Problem(table, models).evaluate_unsuppressed(G), Problem(table, models).evaluate(G))


def test_memo_finds_the_highest_node_below_and_recycles_the_oldest_slot() -> None:
    memo = ClassMemo(n_rows=4, n_qids=2, capacity=3)
    assert memo.predecessor(np.array([1, 1])) == -1
    a = memo.claim(np.array([0, 0]))
    b = memo.claim(np.array([1, 0]))
    c = memo.claim(np.array([0, 2]))
    assert len({a, b, c}) == 3 and memo.claim(np.array([1, 0])) == b  # remembered: its own slot
    assert memo.predecessor(np.array([1, 1])) == b  # [1, 0] is higher than [0, 0]; [0, 2] is not below
    assert memo.predecessor(np.array([0, 2])) == c  # the node itself
    d = memo.claim(np.array([2, 2]))  # full: takes the oldest slot, [0, 0]'s
    assert d == a and memo.slot(np.array([0, 0])) == -1 and len(memo) == 3
    assert memo.predecessor(np.array([0, 1])) == -1  # [0, 0] is gone


@pytest.mark.parametrize("k", [2, 5])
def test_flash_at_zero_limit_is_unchanged_by_the_rollup(k: int) -> None:
    """The same optimum, checks and TD bits as Flash through the plain evaluator."""
    rng = np.random.default_rng(k)
    table = random_table(rng, n_qids=4, max_records=200, min_leaves=3)
    models = [build_model("k-anonymity", {"k": k})]
    fast = run_optimizer("flash", Problem(table, models), budget=10**6, params={"suppression_limit": 0.0})
    plain = Problem(table, models)
    plain.evaluate_unsuppressed = plain.evaluate  # type: ignore[method-assign]
    slow = run_optimizer("flash", plain, budget=10**6, params={"suppression_limit": 0.0})
    assert fast.td == slow.td and np.array_equal(fast.g, slow.g) and fast.evaluations == slow.evaluations
    assert fast.certified and slow.certified
