"""The Numba kernels of the distribution models in the fused evaluator
(evaluator/_distribution_kernels.py): recursive (c, l)-diversity, EMD t-closeness with equal,
ordered and hierarchical ground distance, basic and enhanced beta-likeness.

- the fused batch evaluator gives bit for bit what the per-solution path gives (one model ``ad``
  call per solution over ``class_stats``), and both agree with the plain-Python twins
  (``reference_ad`` over the records, tests/support/reference.py);
- the fused S*(G) + evaluation (``Problem.evaluate_optimal_fused``, with roll-up) gives bit
  for bit the two steps of before (oracle, then the per-solution evaluation);
- a lattice search through the fused path returns the same node, S, TD, certification and
  number of evaluations as through the per-solution path it replaced.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.kernels import batch as B
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ModelContext, build_model
from tests.oracles.test_evaluator_agreement import close, random_hierarchy, random_population
from tests.support import reference as ref

VARIANTS = [
    ("recursive-cl-diversity", {"c": 2.0, "l": 2}),
    ("recursive-cl-diversity", {"c": 1.5, "l": 3}),
    ("recursive-cl-diversity", {"c": 3.0, "l": 1}),
    ("t-closeness", {"t": 0.3, "distance": "equal"}),
    ("t-closeness", {"t": 0.25, "distance": "ordered"}),
    ("t-closeness", {"t": 0.2, "distance": "hierarchical"}),
    ("beta-likeness", {"beta": 1.0, "enhanced": False}),
    ("beta-likeness", {"beta": 0.8, "enhanced": True}),
]
IDS = [f"{n}-{'-'.join(str(v) for v in p.values())}" for n, p in VARIANTS]
FIELDS = ("ad", "td", "feasible", "violation", "suppressed")
# a 3-level hierarchy of the sensitive values (two branches of two sub-branches), as ARX rows
SA_HIERARCHY = [("a", "ab", "L", "*"), ("b", "ab", "L", "*"), ("c", "cd", "L", "*"), ("d", "cd", "L", "*"),
                ("e", "ef", "R", "*"), ("f", "ef", "R", "*")]


def _table(rng: np.random.Generator, max_records: int, n_qids: int | None = None):
    """Random QIDs and one sensitive column over a random subset of a..f."""
    nq = int(rng.integers(1, 4)) if n_qids is None else n_qids
    hierarchies = [random_hierarchy(rng, f"q{i}", min_leaves=2) for i in range(nq)]
    n = int(rng.integers(2, max_records + 1))
    data = {}
    for i, h in enumerate(hierarchies):
        pool = rng.choice(h.leaves, size=int(rng.integers(1, len(h.leaves) + 1)), replace=False)
        data[f"q{i}"] = [str(v) for v in rng.choice(pool, size=n)]
    values = rng.choice(list("abcdef"), size=int(rng.integers(2, 7)), replace=False)
    # skewed shares, so that classes both pass and fail
    data["sa"] = [str(v) for v in rng.choice(values, size=n, p=rng.dirichlet(np.ones(len(values))))]
    qids = [f"q{i}" for i in range(nq)]
    hist = pl.DataFrame(data).group_by([*qids, "sa"]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(hist, qids, ["sa"], hierarchies)


def _models(name: str, params: dict, table, tmp_path, *, k: int | None = None) -> list:
    file = tmp_path / "sa_hierarchy.csv"
    file.write_text("\n".join(";".join(r) for r in SA_HIERARCHY) + "\n")
    ctx = ModelContext(table.sensitive, table.sa_values, str(tmp_path), str(file))
    model = build_model(name, dict(params)).bind(ctx)
    return ([build_model("k-anonymity", {"k": k})] if k is not None else []) + [model]


def _assert_same(a, b) -> None:
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f  # exact, inf included


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_fused_evaluator_equals_per_solution_and_the_twins(name, params, tmp_path) -> None:
    rng = np.random.default_rng([11, *repr((name, params)).encode()])
    for _ in range(25):
        table = _table(rng, 60)
        models = _models(name, params, table, tmp_path, k=int(rng.integers(1, 4)) if rng.random() < 0.5 else None)
        ev = NumbaEvaluator(table, models)
        assert ev.kinds is not None  # the fused path is the one under test
        G, keep = random_population(rng, table, 6)
        retained = B.retained_batch(np.ascontiguousarray(keep, dtype=np.bool_), table.offsets)
        fused = ev.evaluate(G, retained)
        _assert_same(fused, ev.evaluate_per_solution(G, retained))
        for p in range(len(G)):
            ad, td, feasible, suppressed = ref.evaluate(table, models, G[p], keep[p])
            assert all(close(float(fused.ad[p, j]), ad[j]) for j in range(len(models))), (fused.ad[p], ad)
            assert bool(fused.feasible[p]) == feasible and int(fused.suppressed[p]) == suppressed
            assert close(float(fused.td[p]), td)


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_fused_oracle_equals_the_two_steps(name, params, tmp_path) -> None:
    rng = np.random.default_rng([12, *repr((name, params)).encode()])
    for _ in range(25):
        table = _table(rng, 80)
        problem = Problem(table, _models(name, params, table, tmp_path, k=int(rng.integers(1, 4))))
        G, _ = random_population(rng, table, int(rng.integers(2, 9)))
        retained = np.stack([problem._optimal_retained(g) for g in G])
        two_step = problem.evaluator.evaluate_per_solution(G, retained)
        got_retained, got = problem.evaluate_optimal_fused(G)
        assert np.array_equal(got_retained, retained)
        _assert_same(got, two_step)


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_lattice_search_is_the_same_through_the_fused_path(name, params, tmp_path) -> None:
    """Same node, S, TD, AD, certification and evaluations as through the per-solution path."""
    rng = np.random.default_rng([13, *repr((name, params)).encode()])
    for _ in range(6):
        table = _table(rng, 400, n_qids=3)
        models = _models(name, params, table, tmp_path, k=2)
        runs = []
        for fused in (True, False):
            problem = Problem(table, models)
            if not fused:  # the path before the kernels: oracle, then one ``ad`` call per node
                problem._numba.kinds = None
            runs.append(run_optimizer("lattice", problem, budget=10**6, params={}))
        a, b = runs
        assert a.g.tolist() == b.g.tolist() and np.array_equal(a.retained, b.retained)
        assert a.td == b.td and a.feasible == b.feasible and a.certified == b.certified
        assert a.evaluations == b.evaluations and np.array_equal(a.ad, b.ad)
