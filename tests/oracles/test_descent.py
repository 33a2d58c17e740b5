"""The best-first descent (engine/methods/generalization/optimizers/descent.py): a run that checks the whole lattice
finds the exhaustive optimum within the suppression limit and is certified; a budgeted run
returns a feasible node within the limit, is deterministic and stays within the budget; on
adult it reaches the certified optimum's TD from the top in a fraction of the lattice."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from ppdp.errors import SpecError
from tests.oracles.test_evaluator_agreement import random_models
from tests.oracles.test_flash import adult_table, exhaustive_within_limit, k_problem, random_table  # noqa: F401


@pytest.mark.parametrize("limit", [1.0, 0.1, 0.0])
@pytest.mark.parametrize("seed", range(12))
def test_complete_descent_is_the_exhaustive_optimum(seed: int, limit: float) -> None:
    table, k = random_table(500 + seed)
    problem = k_problem(table, k)
    max_suppressed = int(np.floor(limit * problem.n_records + 1e-9))
    best = exhaustive_within_limit(k_problem(table, k), max_suppressed)
    res = run_optimizer("descent", problem, budget=10**6, params={"suppression_limit": limit})
    assert res.info["complete"] and res.info["nodes_checked"] == lattice_size(table.heights) == res.evaluations
    assert res.certified
    if best >= 0:
        assert res.feasible and res.td == pytest.approx(best, abs=1e-9)
        assert res.suppressed <= max_suppressed


@pytest.mark.parametrize("seed", range(8))
def test_descent_with_other_models_matches_the_lattice_search(seed: int) -> None:
    """S*(G) is the exact oracle for every model: a complete descent equals the certified lattice optimum."""
    rng = np.random.default_rng(800 + seed)
    table, _ = random_table(800 + seed)
    models = random_models(rng)
    res = run_optimizer("descent", Problem(table, models), budget=10**6)
    ref = run_optimizer("lattice", Problem(table, models), budget=10**6, params={"mode": "exhaustive"})
    assert res.info["complete"] and res.certified == ref.certified  # both need an exact oracle
    assert res.feasible == ref.feasible
    if ref.feasible:
        assert res.td == pytest.approx(ref.td, abs=1e-9)


def test_budgeted_descent_is_feasible_deterministic_and_within_budget(adult_table) -> None:  # noqa: F811
    runs = [run_optimizer("descent", k_problem(adult_table, 5), budget=60, params={"suppression_limit": 0.05})
            for _ in range(2)]
    a, b = runs
    assert a.evaluations <= 60 and not a.info["complete"] and not a.certified
    assert a.feasible and a.suppressed <= int(0.05 * adult_table.n_records)
    assert a.td == b.td and np.array_equal(a.g, b.g)


def test_descent_reaches_the_certified_adult_optimum(adult_table) -> None:  # noqa: F811
    """k = 5, no limit: the lattice search's certified TD within a tenth of the 6,480 nodes."""
    certified = run_optimizer("lattice", k_problem(adult_table, 5), budget=10**6)
    res = run_optimizer("descent", k_problem(adult_table, 5), budget=648)
    assert certified.certified
    assert res.td == pytest.approx(certified.td, rel=1e-12)


def test_descent_refuses_bad_parameters(adult_table) -> None:  # noqa: F811
    with pytest.raises(SpecError, match="unknown parameter"):
        run_optimizer("descent", k_problem(adult_table, 5), budget=10, params={"depth": 3})
    with pytest.raises(SpecError, match="stepping"):
        run_optimizer("descent", k_problem(adult_table, 5), budget=10, params={"stepping": 0})
    with pytest.raises(SpecError, match="suppression_limit"):
        run_optimizer("descent", Problem(adult_table, [build_model("k-anonymity", {"k": 5})]), budget=10,
                      params={"suppression_limit": 1.5})
