"""S*(G) and its evaluation in one pass: ``Problem.evaluate_optimal`` through
``_kernels.evaluate_optimal_batch`` gives bit for bit what the two steps give (the oracle
``optimal_pair_retention_t`` + ``rows_from_pairs``, then the fused evaluator), with a cold, a warm
and an overflowing memo, and agrees with the plain-Python reference (tests/support/reference.py) on the
evaluation of the retained records."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import read_arx_csv
from ppdp.engine.kernels import classes as K
from ppdp.engine.methods.generalization.evaluators.class_memo import DictClassMemo
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.conftest import ADULT, ADULT_QIDS
from tests.oracles.test_evaluator_agreement import (
    close,
    random_models,
    random_population,
    random_table,
)
from tests.support import reference as ref

FIELDS = ("ad", "td", "feasible", "violation", "suppressed")


def two_step(problem: Problem, G: np.ndarray):
    """S*(G) by the oracle kernels, then an evaluation that classifies again (the two-step path)."""
    retained = np.stack([problem._optimal_retained(g) for g in G])
    return retained, problem.evaluator.evaluate(G, retained)


def assert_same(a, b) -> None:
    (ra, ea), (rb, eb) = a, b
    assert np.array_equal(ra, rb)
    for f in FIELDS:
        x, y = getattr(ea, f), getattr(eb, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f  # exact, inf included


def check(table, models, G, memo=None) -> None:
    problem = Problem(table, models)
    problem._memo = memo
    expected = two_step(problem, G)
    assert_same(problem.evaluate_optimal_fused(G), expected)  # cold memo
    assert_same(problem.evaluate_optimal_fused(G[::-1]), (expected[0][::-1], expected[1].row(0).concat(
        [expected[1].row(i) for i in range(len(G) - 1, -1, -1)])))  # warm memo, other order
    for p, g in enumerate(G):
        keep = ref.keep_from_retained(table, expected[0][p])
        ad, td, feasible, suppressed = ref.evaluate(table, models, g, keep)
        ev = expected[1]
        assert close(float(ev.td[p]), td) and bool(ev.feasible[p]) == feasible
        assert int(ev.suppressed[p]) == suppressed
        assert all(close(float(ev.ad[p, j]), ad[j]) for j in range(len(models)))


@pytest.mark.parametrize("seed", range(150))
def test_fused_oracle_matches_the_two_steps(seed: int) -> None:
    rng = np.random.default_rng(70_000 + seed)
    table = random_table(rng, max_records=80)
    models = random_models(rng)
    G, _ = random_population(rng, table, int(rng.integers(1, 10)))
    check(table, models, G)


@pytest.mark.parametrize("seed", range(20))
def test_fused_oracle_with_a_full_memo(seed: int) -> None:
    """A memo of 8 slots fills after 4 classes: the rest is computed, with the same result."""
    rng = np.random.default_rng(71_000 + seed)
    table = random_table(rng, max_records=120)
    models = [build_model("k-anonymity", {"k": int(rng.integers(1, 4))}),
              build_model("t-closeness", {"t": float(rng.uniform(0.05, 0.5))})]
    G, _ = random_population(rng, table, 6)
    memo = K.new_retention_memo(table.n_sa, slots=8)
    check(table, models, G, memo)
    assert memo[1][0] <= 4


def test_fused_oracle_many_qids() -> None:
    """22 QIDs: the class key overflows int64 and is compressed on the way, as in classify."""
    rng = np.random.default_rng(72_000)
    table = random_table(rng, n_qids=22, max_records=300, min_leaves=8)
    models = [build_model(name, p) for name, p in [
        ("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.5}),
        ("distinct-l-diversity", {"l": 2}), ("entropy-l-diversity", {"l": 1.5}),
    ]]
    G, _ = random_population(rng, table, 6)
    check(table, models, G)


def test_evaluate_optimal_uses_the_fused_kernel_and_the_cache() -> None:
    rng = np.random.default_rng(73_000)
    table = random_table(rng, n_qids=3, max_records=60)
    models = [build_model("k-anonymity", {"k": 2}), build_model("t-closeness", {"t": 0.3})]
    G, _ = random_population(rng, table, 6)
    problem = Problem(table, models)
    first = problem.evaluate_optimal(G[:4])
    assert problem._memo is not None and problem.evaluations == 4  # the fused kernel ran
    # Rows 2..3 remembered, 4..5 new: the two-step path with the remembered S*(G), same numbers.
    again = problem.evaluate_optimal(G[2:])
    assert problem.evaluations == 8
    assert_same((again[0][:2], again[1].row(0).concat([again[1].row(0), again[1].row(1)])),
                (first[0][2:], first[1].row(2).concat([first[1].row(2), first[1].row(3)])))
    assert_same(again, two_step(Problem(table, models), G[2:]))


@pytest.mark.parametrize("t", [0.2828, 0.2])
def test_lattice_search_on_adult_is_unchanged(t: float) -> None:
    """The certified lattice search on 2,000 rows of adult (k = 2 + t): same optimum, same S, same
    number of nodes with the fused kernel as with the two steps."""
    hierarchies = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QIDS]
    adult = pl.read_csv(ADULT / "adult.csv", separator=";", infer_schema=False).head(2000)
    hist = adult.group_by(ADULT_QIDS + ["salary-class"]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    table = encode_histogram(hist, ADULT_QIDS, ["salary-class"], hierarchies)
    models = [build_model("k-anonymity", {"k": 2}), build_model("t-closeness", {"t": t})]

    class TwoStep(Problem):
        def evaluate_optimal(self, G):
            G = np.atleast_2d(np.asarray(G, dtype=np.int64))
            self.evaluations += G.shape[0]
            return two_step(self, G)

    fused, old = (run_optimizer("lattice", cls(table, models), budget=10**6) for cls in (Problem, TwoStep))
    assert fused.certified and old.certified
    assert np.array_equal(fused.g, old.g) and np.array_equal(fused.retained, old.retained)
    assert fused.td == old.td and fused.evaluations == old.evaluations and fused.suppressed == old.suppressed


@pytest.mark.parametrize("seed", range(40))
def test_rollup_gives_the_classes_of_classify(seed: int) -> None:
    """Every node of small lattices, in two batches: classes rolled up from a predecessor of the
    same batch or of the first batch give the class ids, S*(G) and evaluation of the two steps."""
    rng = np.random.default_rng(74_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=80)
    models = random_models(rng)
    nodes = all_nodes(table.heights)[:200]
    problem = Problem(table, models)
    half = len(nodes) // 2
    got = [problem.evaluate_optimal_fused(nodes[:half])] if half else []
    # the slots the second batch rolls up from: the first batch's, or its own earlier rows'
    parent_slot, _ = DictClassMemo(table.n_qids, problem.class_memo.capacity).plan(nodes)
    got.append(problem.evaluate_optimal_fused(nodes[half:]))
    if len(nodes) > 2:
        assert (parent_slot[1:] != -1).all()  # every node but the bottom has a node below it: the roll-up ran
    retained = np.concatenate([r for r, _ in got])
    ev = got[0][1].concat([e for _, e in got]) if len(got) > 1 else got[0][1]
    assert_same((retained, ev), two_step(Problem(table, models), nodes))
    active = table.counts > 0
    gen, _, n_gen = table.lookup
    for g in nodes:
        cls, m = K.classify(g, table.codes, gen, n_gen, active)
        memo = problem.class_memo
        assert np.array_equal(memo.ids[memo.slot(g)][: len(cls)], cls)
