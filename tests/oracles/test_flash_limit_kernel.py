"""The Flash kernel with a positive limit (``_flash_kernel.flash_search``) against its
plain-Python twin (``flash._Flash`` with a positive limit): the same nodes checked in the same
order (pruning and the second phase included), the same AD and suppression per check and the
same TD wherever the kernel computes one (every check a Tracker or the pruning may read), the
same nodes pruned and second-phase candidates, and the same result (node, TD, retained records,
history, evaluations, certification), with and without a budget that cuts the run short; on
random tables of 2 to 10 QIDs and on adult.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization.optimizers import Tracker, run_optimizer
from ppdp.engine.methods.generalization.optimizers import flash as F
from ppdp.engine.methods.generalization.optimizers.lattice import lattice_size
from ppdp.engine.methods.generalization.problem import Problem, fitness_key
from ppdp.engine.privacy import build_model
from tests.oracles.test_flash import adult_table, exhaustive_within_limit, random_table  # noqa: F401
from tests.oracles.test_flash_kernel import wide_table


def twin_run(problem: Problem, budget: int, max_suppressed: int):
    """The Python traversal, recording every check: (flat indices, (AD, TD, suppressed) per
    check, state, tracker, complete)."""
    tracker = Tracker(problem, budget, name="flash")
    state = F._Flash(problem, tracker, max_suppressed)
    order: list[int] = []
    seen: list[tuple[float, float, int]] = []
    real_offer = tracker.offer

    def offer(G, retained, evaluation):
        seen.append((float(evaluation.ad[0, 0]), float(evaluation.td[0]), int(evaluation.suppressed[0])))
        real_offer(G, retained, evaluation)

    tracker.offer = offer  # type: ignore[method-assign]
    real_evaluate = state.evaluate

    def record(idx: int) -> bool:
        anonymous = real_evaluate(idx)  # raises when the budget is spent: not a check
        order.append(idx)
        return anonymous

    state.evaluate = record  # type: ignore[method-assign]
    complete = state.run()
    tracker.offer = real_offer  # type: ignore[method-assign]
    assert len(order) == len(seen) == state.checked
    return order, seen, state, tracker, complete


def assert_same_run(table, models, max_suppressed: int, budget: int = 10**8) -> int:
    order, seen, state, twin_tracker, twin_complete = twin_run(Problem(table, models), budget, max_suppressed)
    problem = Problem(table, models)
    assert F.kernel_applies(problem, lattice_size(problem.heights))
    tracker = Tracker(problem, budget, name="flash")
    spied: list[tuple[float, float, int]] = []
    from ppdp.engine.methods.generalization.optimizers import _flash_kernel as FK

    real = FK.flash_search

    def spy(*args):
        out = real(*args)
        spied.extend(zip(out[1].tolist(), out[2].tolist(), out[3].tolist(), strict=True))
        spy.idx = out[0].tolist()
        return out

    FK.flash_search = spy
    try:
        n, pruned, phase_two, complete = F.run_kernel(problem, tracker, max_suppressed)
    finally:
        FK.flash_search = real
    assert spy.idx == order and n == len(order)
    # AD and suppression of every check; TD bit for bit wherever the kernel reports it, and
    # reported at every check that improves the Tracker's best (fitness_key of the twin's
    # numbers) and every anonymous check that may raise the best TD (the pruning reads it)
    assert [(a, s) for a, _, s in spied] == [(a, s) for a, _, s in seen]
    k = max(m.k for m in models)
    best, best_td = None, -np.inf
    for i, ((a, t, _), (_, t_twin, _)) in enumerate(zip(spied, seen, strict=True)):
        key = fitness_key(a >= k, 0.0 if a >= k else (k - a) / k, t_twin)
        improves = best is None or key > best
        if improves:
            best = key
        if improves or (a >= k and t_twin >= best_td):
            assert not np.isnan(t), f"check {i} is read but has no TD"
        assert np.isnan(t) or t == t_twin
        if a >= k:
            best_td = max(best_td, t_twin)
    assert (pruned, phase_two, complete) == (state.pruned, state.phase_two_candidates, twin_complete)
    a, b = twin_tracker.result(certified=twin_complete), tracker.result(certified=complete)
    assert a.g.tolist() == b.g.tolist() and a.td == b.td and a.feasible == b.feasible
    assert a.evaluations == b.evaluations and a.certified == b.certified and a.suppressed == b.suppressed
    assert np.array_equal(a.history, b.history) and np.array_equal(a.retained, b.retained)
    assert np.array_equal(a.ad, b.ad)
    assert problem.evaluations == len(order)
    return len(order)


@pytest.mark.parametrize("seed", range(30))
def test_kernel_matches_twin_random(seed):
    table, k = random_table(7000 + seed)
    limit = int(np.random.default_rng(seed).integers(1, max(table.n_records // 4, 2)))
    assert_same_run(table, [build_model("k-anonymity", {"k": k})], limit)


@pytest.mark.parametrize("seed", range(10))
def test_kernel_matches_twin_wide(seed):
    table, k = wide_table(100 + seed)
    assert_same_run(table, [build_model("k-anonymity", {"k": k})], max(table.n_records // 20, 1))


@pytest.mark.parametrize(("k", "limit"), [(2, 0.01), (5, 0.05), (10, 0.02)])
def test_kernel_matches_twin_adult(adult_table, k, limit):  # noqa: F811
    max_sup = int(limit * adult_table.n_records)
    assert assert_same_run(adult_table, [build_model("k-anonymity", {"k": k})], max_sup) > 20


@pytest.mark.parametrize("budget", [1, 5, 60])
def test_kernel_matches_twin_under_a_budget(adult_table, budget):  # noqa: F811
    assert_same_run(adult_table, [build_model("k-anonymity", {"k": 5})], int(0.05 * adult_table.n_records), budget)


def test_checking_dominated_nodes_keeps_the_optimum():
    """A node whose UB is at most the best TD is checked instead of pruned while few checks
    found their node anonymous: on wide tables (a small anonymous region) such checks happen,
    and the result is still the exhaustive optimum within the limit, certified."""
    dominated = 0
    for seed in range(16):
        table, k = wide_table(300 + seed)
        models = [build_model("k-anonymity", {"k": k})]
        max_sup = max(table.n_records // 50, 1)
        problem = Problem(table, models)
        state = F._Flash(problem, Tracker(problem, 10**8, name="flash"), max_sup)
        real_check = state.check

        def check(idx: int, state=state, real_check=real_check) -> bool:
            nonlocal dominated
            dominated += state.upper_bound(idx) <= state.best_td
            return real_check(idx)

        state.check = check  # type: ignore[method-assign]
        assert state.run()
        res = run_optimizer("flash", Problem(table, models), budget=10**8,
                            params={"suppression_limit": max_sup / table.n_records})
        assert res.certified and res.info["max_suppressed"] == max_sup
        assert res.td == pytest.approx(exhaustive_within_limit(Problem(table, models), max_sup), abs=1e-9)
        assert res.td == state.tracker.result(certified=True).td
    assert dominated > 0  # the path was taken
