"""delta-presence's term of the exact suppression oracle S*(G) (engine/kernels/presence.py):
the kernel against its plain-Python twin (brute force over every count a class may keep), and
the lattice search's certified optimum against brute force over every (G, S) of tiny tables,
with k-anonymity and a second delta-presence alongside, and a suppression limit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ppdp.engine.kernels import presence as P
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model, plan_oracle
from tests.oracles.test_population_models import _table
from tests.support import reference as R

DMAX = (0.1, 0.2, 0.25, 1 / 3, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0)


def test_the_kernel_equals_brute_force_on_random_classes():
    rng = np.random.default_rng(41)
    kept_some = capped = 0
    for _ in range(400):
        n = int(rng.integers(1, 30))
        size = rng.integers(0, 16, size=n).astype(np.int64)
        persons = (size + rng.integers(0, 30, size=n)).astype(np.int64)
        persons[rng.random(n) < 0.05] = 0  # no persons: nothing can be kept
        k = int(rng.integers(1, 6))
        dmin, dmax = float(rng.choice([0.0, 0.05, 0.2])), float(rng.choice(DMAX))
        got = P.presence_retention(size, persons, k, dmax)
        want, _ = R.presence_retention(size.tolist(), persons.tolist(), k, dmin, dmax)
        assert got.tolist() == want
        kept_some += int(np.count_nonzero(got))
        capped += int(np.count_nonzero((got > 0) & (got < size)))
    assert kept_some > 1000 and capped > 300  # both the cap and whole classes are exercised


def test_the_largest_share_is_the_sql_checks_float_comparison():
    for p in range(1, 400):
        for dmax in DMAX:
            r = P.largest_share_within(p, dmax)
            assert r / p <= dmax and (r + 1) / p > dmax, (p, dmax)


def _models(rng, case: int):
    dmin = float(rng.choice([0.0, 0.0, 0.05, 0.15]))
    dmax = float(rng.choice([0.2, 0.3, 0.5, 0.7, 1.0]))
    dp = build_model("delta-presence", {"dmin": dmin, "dmax": dmax, "research": "q0 IS NOT NULL"})
    if case == 0:
        return [dp]
    if case == 1:
        return [dp, build_model("k-anonymity", {"k": int(rng.integers(2, 4))})]
    # two delta-presence models: the tighter dmax caps, both dmin decide
    return [dp, build_model("delta-presence", {"dmin": float(rng.choice([0.0, 0.1])), "dmax": float(rng.choice([0.4, 0.8])),
                                               "research": "q0 IS NOT NULL"}), build_model("k-anonymity", {"k": 2})]


def _brute_force(problem: Problem, max_suppressed: int) -> float:
    """The best TD over every node and every retention of every histogram row: -1 when no
    (G, S) within the limit is feasible."""
    counts = problem.table.counts
    S = np.array(list(itertools.product(*[range(int(c) + 1) for c in counts])), dtype=np.int64)
    best = -1.0
    for g in itertools.product(*[range(int(h) + 1) for h in problem.heights]):
        ev = problem.evaluate(np.repeat(np.array([g], dtype=np.int64), len(S), axis=0), retained=S)
        ok = ev.feasible & (ev.suppressed <= max_suppressed)
        if ok.any():
            best = max(best, float(ev.td[ok].max()))
    return best


@pytest.mark.parametrize("seed", range(24))
def test_the_certified_optimum_equals_brute_force_over_every_g_and_s(seed):
    rng = np.random.default_rng([seed, 37])
    for _ in range(20):  # a table small enough for every S
        table, *_ = _table(rng, int(rng.integers(1, 3)), int(rng.integers(6, 22)), float(rng.uniform(0.3, 0.9)))
        if np.prod(table.counts + 1) <= 1500:
            break
    else:
        pytest.skip("no small table drawn")
    models = _models(rng, seed % 3)
    limit = float(rng.choice([1.0, 0.5, 0.2, 0.0]))
    assert plan_oracle(models).exact
    probe = Problem(table, models)
    best = _brute_force(probe, int(np.floor(limit * table.n_records)))
    for mode in ("bound", "nodes", "exhaustive"):
        res = run_optimizer("lattice", Problem(table, models), budget=10**6,
                            params={"mode": mode, "suppression_limit": limit})
        assert res.certified and not res.not_certified_because, (mode, res.not_certified_because)
        if best < 0:
            assert not res.feasible, mode
        else:
            assert res.feasible and res.td == pytest.approx(best, abs=1e-9), (mode, res.td, best)
            # the search's verdict is the model's own on the returned (G, S*(G))
            ev = probe.evaluate(res.g[None, :], retained=res.retained[None, :])
            assert bool(ev.feasible[0]) and int(ev.suppressed[0]) == res.suppressed


@pytest.mark.parametrize("other, fragment", [
    ({"name": "distinct-l-diversity", "l": 2}, "delta-presence's classes"),
    ({"name": "t-closeness", "t": 0.3}, "delta-presence's classes"),
    ({"name": "delta-disclosure", "delta": 1.0}, "delta-disclosure has no exact suppression oracle"),
])
def test_delta_presence_beside_a_model_the_oracle_does_not_cover_says_why(other, fragment):
    dp = build_model("delta-presence", {"dmin": 0.0, "dmax": 0.5, "research": "q0 = 1"})
    name = other.pop("name")
    plan = plan_oracle([dp, build_model(name, other)])
    assert not plan.exact and any(fragment in r for r in plan.reasons), plan.reasons
    assert plan_oracle([dp]).exact and plan_oracle([dp, build_model("k-anonymity", {"k": 3})]).exact
