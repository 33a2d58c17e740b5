"""The exact suppression oracle S*(G) under EMD t-closeness (equal and ordered ground distance,
docs/design/paper_notes.md §3) against brute force.

(a) ``optimal_pair_retention_t`` keeps, in every class, the largest number of records over all
    allocations within t (and at least k), and what it keeps is within t.
(b) ``evaluate_optimal_batch`` (the fused path) gives bit for bit what the two steps give.
(c) On tiny tables, the certified lattice search finds the maximum TD over every (G, S), also
    under a suppression limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes, lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ModelContext, build_model, plan_oracle
from ppdp.engine.privacy import distributions as D
from tests.oracles.test_fused_oracle import assert_same, two_step
from tests.oracles.test_oracle import brute_force_best_td, random_classes, tiny_table
from tests.support import reference as ref

KIND = {"equal": kinds.EQUAL_EMD, "ordered": kinds.ORDERED_EMD}
TOL = 1e-12  # the model's TOLERANCE


def _rank(rng: np.random.Generator, n_sa: int) -> np.ndarray:
    return rng.permutation(n_sa).astype(np.int64)


@pytest.mark.parametrize("distance", ["equal", "ordered"])
@pytest.mark.parametrize("seed", range(6))
def test_pair_retention_is_maximal(distance, seed) -> None:
    rng = np.random.default_rng([seed, len(distance)])
    kept = 0
    for _ in range(40):
        size, pair_class, pair_sa, pair_n, q = random_classes(rng, int(rng.integers(1, 6)))
        rank = _rank(rng, len(q))
        params = D.ordered_params(D.Order(rank)) if distance == "ordered" else np.zeros(0)
        k = int(rng.integers(1, 5))
        t = float(rng.uniform(0.02, 0.5))
        keep = K.optimal_pair_retention_t(size, pair_class, pair_sa, pair_n, q, k, t + TOL, 1, 1.0,
                                          KIND[distance], params)
        assert np.all((keep >= 0) & (keep <= pair_n))
        for c in range(size.shape[0]):
            idx = np.flatnonzero(pair_class == c)
            caps, values = pair_n[idx].tolist(), pair_sa[idx].tolist()
            best = ref.emd_best_retention(caps, values, q.tolist(), distance, k=k, t=t + TOL, rank=rank.tolist())
            got = keep[idx].tolist()
            where = f"caps={caps} values={values} q={q.tolist()} rank={rank.tolist()} k={k} t={t}"
            assert sum(got) == best, f"kept {sum(got)}, brute force {best}: {where}"
            if best:
                kept += 1
                assert sum(got) >= k and ref.emd(got, values, q.tolist(), distance, rank.tolist()) <= t + TOL, where
    assert kept > 0


def _bound(distance: str, table):
    ctx = ModelContext(("s",), table.sa_values)
    return build_model("t-closeness", {"t": 0.3, "distance": distance}).bind(ctx)


@pytest.mark.parametrize("distance", ["equal", "ordered"])
def test_the_plan_is_exact_and_hierarchical_is_not(distance) -> None:
    rng = np.random.default_rng(7)
    table = tiny_table(rng)
    model = _bound(distance, table)
    plan = plan_oracle([build_model("k-anonymity", {"k": 2}), model])
    assert plan.exact and plan.params.t_kind == KIND[distance]
    euclid = build_model("t-closeness", {"t": 0.2})
    mixed = plan_oracle([model, euclid])
    assert not mixed.exact and any("distance" in r for r in mixed.reasons)


@pytest.mark.parametrize("distance", ["equal", "ordered"])
@pytest.mark.parametrize("seed", range(3))
def test_fused_oracle_equals_the_two_steps(distance, seed) -> None:
    rng = np.random.default_rng([seed, 11])
    table = tiny_table(rng, n_records=14)
    models = [build_model("k-anonymity", {"k": 2}), _bound(distance, table)]
    problem = Problem(table, models)
    G = np.array(all_nodes(table.heights), dtype=np.int64)
    assert_same(problem.evaluate_optimal_fused(G, rollup=False), two_step(problem, G))


def _models(distance: str, t: float, k: int, table):
    ctx = ModelContext(("s",), table.sa_values)
    out = [build_model("t-closeness", {"t": t, "distance": distance}).bind(ctx)]
    if k > 1:
        out.append(build_model("k-anonymity", {"k": k}))
    return out


@pytest.mark.parametrize("limit", [None, 0.0, 0.25])
@pytest.mark.parametrize("distance", ["equal", "ordered"])
@pytest.mark.parametrize(("t", "k"), [(0.15, 1), (0.25, 2)])
@pytest.mark.parametrize("seed", range(2))
def test_lattice_search_finds_the_brute_force_optimum(limit, distance, t, k, seed) -> None:
    rng = np.random.default_rng([seed, int(t * 100), k, len(distance)])
    table = tiny_table(rng)
    models = _models(distance, t, k, table)
    max_sup = None if limit is None else int(np.floor(limit * table.n_records + 1e-9))
    best = brute_force_best_td(table, models, max_sup)
    params = {} if limit is None else {"suppression_limit": limit}
    for mode in ("bound", "exhaustive"):
        result = run_optimizer("lattice", Problem(table, models), budget=lattice_size(table.heights),
                               params={"mode": mode, **params})
        assert result.certified, mode
        if best < 0:
            assert not result.feasible, mode
            continue
        assert result.feasible and result.td == pytest.approx(best, rel=1e-9, abs=1e-12), mode
        keep = ref.keep_from_retained(table, result.retained)
        _, td, feasible, _ = ref.evaluate(table, models, result.g, keep)
        assert feasible and td == pytest.approx(best, rel=1e-9, abs=1e-12), mode
