"""Flash (Kohlmayer et al. 2012) and the DFS baseline against exhaustive lattice enumeration.

The reference is the suppression-free optimum: every node evaluated with S = all kept, best
feasible TD. Flash with suppression_limit = 0 must reach it exactly (adult and random cases);
with a limit in (0, 1] it must reach the best TD over nodes whose oracle suppresses at most the
limit (ARX's semantics), also checked against the plain-Python brute force in test_oracle.py.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import from_rows, read_arx_csv
from ppdp.engine.methods.generalization.optimizers import Tracker, run_optimizer
from ppdp.engine.methods.generalization.optimizers.flash import (
    _ANONYMOUS,
    _NOT_ANONYMOUS,
    _PRUNED,
    _UNTAGGED,
    _Flash,
    dfs_order,
    zero_limit_checks,
)
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes, lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from ppdp.errors import SpecError
from tests.support import paths as PATHS

# adult ships with the project (engine/data/adult, a copy of the ARX files), so these tests never skip
ARX = PATHS.ADULT
ADULT_QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]


def exhaustive_no_suppression(problem: Problem) -> float:
    """Best feasible TD over all nodes with nothing suppressed (-1 when none is feasible)."""
    nodes = all_nodes(problem.heights)
    ev = problem.evaluate(nodes)
    return float(np.max(np.where(ev.feasible, ev.td, -1.0)))


def exhaustive_within_limit(problem: Problem, max_suppressed: int) -> float:
    """Best TD over nodes whose k-anonymity oracle suppresses at most max_suppressed records."""
    best = -1.0
    nodes = all_nodes(problem.heights)
    retained, ev = problem.evaluate_optimal(nodes)
    ok = ev.feasible & (ev.suppressed <= max_suppressed)
    if ok.any():
        best = float(ev.td[ok].max())
    return best


@pytest.fixture(scope="module")
def adult_table():
    hs = [read_arx_csv(ARX / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QIDS]
    cols = ", ".join(f'CAST("{q}" AS VARCHAR) AS "{q}"' for q in ADULT_QIDS + ["salary-class"])
    hist = duckdb.connect().sql(
        f"SELECT {cols}, count(*) AS {COUNT_COLUMN} FROM read_csv('{ARX / 'adult.csv'}', delim=';', all_varchar=true) GROUP BY ALL"
    ).pl()
    return encode_histogram(hist, ADULT_QIDS, ["salary-class"], hs)


def k_problem(table, k: int) -> Problem:
    return Problem(table, [build_model("k-anonymity", {"k": k})])


# -- random instances ------------------------------------------------------------------------


def random_hierarchy(rng: np.random.Generator, name: str, n_leaves: int, height: int):
    """A random nested hierarchy: each level maps the previous level's values to fewer parents."""
    rows = [[f"{name}{i}"] for i in range(n_leaves)]
    prev = [r[0] for r in rows]
    for j in range(1, height):
        distinct = sorted(set(prev))
        n_par = int(rng.integers(1, max(len(distinct) - 1, 1) + 1))
        parent = {v: f"{name}L{j}_{int(rng.integers(n_par))}" for v in distinct}
        prev = [parent[v] for v in prev]
        for r, p in zip(rows, prev, strict=True):
            r.append(p)
    for r in rows:
        r.append("*")
    return from_rows(name, rows, source="test: random")


def random_table(seed: int):
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(2, 5))
    hs, names = [], []
    for q in range(nq):
        name = f"q{q}"
        hs.append(random_hierarchy(rng, name, int(rng.integers(2, 7)), int(rng.integers(1, 4))))
        names.append(name)
    n = int(rng.integers(4, 60))
    data = {name: [h.leaves[int(rng.integers(len(h.leaves)))] for _ in range(n)] for name, h in zip(names, hs, strict=True)}
    data["sa"] = [str(int(rng.integers(2))) for _ in range(n)]
    frame = pl.DataFrame(data).group_by(names + ["sa"]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(frame, names, ["sa"], hs), int(rng.integers(1, 5))


@pytest.mark.parametrize("seed", range(80))
def test_flash_matches_exhaustive_random(seed):
    table, k = random_table(seed)
    problem = k_problem(table, k)
    ref = exhaustive_no_suppression(problem)
    res = run_optimizer("flash", k_problem(table, k), budget=10**6)
    assert res.info["complete"] and res.info["optimal_within_limit"]
    assert res.evaluations <= lattice_size(table.heights)
    if ref < 0:  # cannot happen: the top node is one class of all nR >= k records
        pytest.fail("no feasible node")
    assert res.feasible
    assert res.td == pytest.approx(ref, abs=1e-9)
    assert res.suppressed == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(36))
def test_flash_suppression_limit_random(seed):
    table, k = random_table(1000 + seed)
    limit = [0.05, 0.1, 0.25, 0.5, 1.0, 0.0][seed % 6]
    res = run_optimizer("flash", k_problem(table, k), budget=10**6, params={"suppression_limit": limit})
    max_sup = res.info["max_suppressed"]
    assert max_sup == int(np.floor(limit * table.n_records + 1e-9))
    assert res.feasible and res.suppressed <= max_sup
    # The bound phase makes Flash exact within the limit (ARX's result), not just a good node.
    assert res.info["complete"] and res.info["optimal_within_limit"] and res.certified
    assert res.td == pytest.approx(exhaustive_within_limit(k_problem(table, k), max_sup), abs=1e-9)
    assert res.evaluations <= lattice_size(table.heights)


@pytest.mark.parametrize("seed", range(40))
def test_flash_tags_agree_with_exhaustive_random(seed):
    """Every tag of a finished run against every node evaluated on its own: anonymous and not
    anonymous (predictive tagging) are exact, and a pruned node cannot beat the result."""
    table, k = random_table(3000 + seed)
    limit = [0.0, 0.1, 0.3, 1.0][seed % 4]
    problem = k_problem(table, k)
    max_sup = int(np.floor(limit * table.n_records + 1e-9))
    tracker = Tracker(problem, 10**6, name="flash")
    state = _Flash(problem, tracker, max_sup)
    assert state.run()
    nodes = all_nodes(table.heights)
    retained, ev = k_problem(table, k).evaluate_optimal(nodes)
    within = ev.feasible & (ev.suppressed <= max_sup)
    best = float(ev.td[within].max())
    result = tracker.result()
    assert result.td == pytest.approx(best, abs=1e-9)
    tags = state.tags.reshape(-1)
    flat = np.ravel_multi_index(nodes.T, state.shape)
    for i, node in enumerate(nodes):
        tag = tags[flat[i]]
        assert tag != _UNTAGGED, node
        if tag == _ANONYMOUS:
            assert within[i], node
        elif tag == _NOT_ANONYMOUS:
            assert not within[i], node
        else:  # pruned: UB(node) <= best, so neither it nor a successor can beat the result
            assert tag == _PRUNED
            assert problem.td_upper_bound(node) <= best + 1e-9, node
            assert not within[i] or ev.td[i] <= best + 1e-9, node


def test_flash_checks_each_node_at_most_once():
    table, k = random_table(7)
    # the Python traversal (the zero-limit kernel's twin): through the problem's evaluators
    problem = k_problem(table, k)
    seen = []
    real, real_unsuppressed = problem.evaluate, problem.evaluate_unsuppressed

    def spy(G, S=None, *, retained=None):
        seen.extend(map(tuple, np.atleast_2d(G)))
        return real(G, S, retained=retained)

    def spy_unsuppressed(G, *, count=True):  # the zero-limit checks (classes only)
        seen.extend(map(tuple, np.atleast_2d(G)))
        return real_unsuppressed(G, count=count)

    problem.evaluate = spy  # type: ignore[method-assign]
    problem.evaluate_unsuppressed = spy_unsuppressed  # type: ignore[method-assign]
    tracker = Tracker(problem, 10**6, name="flash")
    state = _Flash(problem, tracker, 0)
    assert state.run()
    assert len(seen) == len(set(seen)) == state.checked == tracker.used
    # the kernel that run_optimizer takes: its checked nodes
    res = run_optimizer("flash", k_problem(table, k), budget=10**6)
    idx = zero_limit_checks(k_problem(table, k), 10**6)[0]
    assert len(idx) == len(set(idx.tolist())) == res.info["nodes_checked"] == res.evaluations == state.checked


# -- adult ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 5])
def test_flash_adult_optimum(adult_table, k):
    ref = exhaustive_no_suppression(k_problem(adult_table, k))
    res = run_optimizer("flash", k_problem(adult_table, k), budget=10**6)
    assert res.info["complete"]
    assert res.td == pytest.approx(ref, rel=1e-12)
    assert res.feasible and res.suppressed == 0
    # Flash's point: far fewer checks than the 6,480-node lattice.
    assert res.evaluations < lattice_size(adult_table.heights) / 10


def test_flash_adult_known_transformation(adult_table):
    res = run_optimizer("flash", k_problem(adult_table, 5), budget=10**6)
    assert res.g.tolist() == [4, 3, 1, 2, 2, 0, 0, 2]


def test_flash_adult_suppression_limit(adult_table):
    res = run_optimizer("flash", k_problem(adult_table, 5), budget=10**6, params={"suppression_limit": 0.02})
    assert res.feasible and 0 < res.suppressed <= 0.02 * adult_table.n_records
    base = run_optimizer("flash", k_problem(adult_table, 5), budget=10**6)
    assert res.td > base.td  # suppressing 2% buys a much finer generalization on adult


@pytest.mark.parametrize("limit", [0.05, 1.0])
def test_flash_adult_limit_is_the_lattice_optimum(adult_table, limit):
    """adult k=5 at ARX's 5 % and 100 % limits: Flash's result is the certified lattice optimum
    within the same limit, with fewer evaluations than the lattice has nodes."""
    res = run_optimizer("flash", k_problem(adult_table, 5), budget=10**6, params={"suppression_limit": limit})
    lat = run_optimizer("lattice", k_problem(adult_table, 5), budget=10**6, params={"suppression_limit": limit})
    assert lat.certified and res.certified and res.info["optimal_within_limit"]
    assert res.td == pytest.approx(lat.td, rel=1e-12)
    assert res.suppressed <= res.info["max_suppressed"] == int(limit * adult_table.n_records)
    assert res.evaluations < lattice_size(adult_table.heights)


# -- budget, errors --------------------------------------------------------------------------


def test_flash_budget(adult_table):
    res = run_optimizer("flash", k_problem(adult_table, 5), budget=7)
    assert res.evaluations == 7 and not res.info["complete"] and not res.info["optimal_within_limit"]
    assert res.history[-1, 0] == 7


def test_flash_refuses_non_monotonic_models():
    table, _ = random_table(3)
    problem = Problem(table, [build_model("k-anonymity", {"k": 2}), build_model("t-closeness", {"t": 0.2})])
    with pytest.raises(SpecError, match="needs monotonic privacy models; t-closeness is not declared monotone"):
        run_optimizer("flash", problem, budget=100)


@pytest.mark.parametrize("params", [{"suppression_limit": 1.5}, {"suppression_limit": -0.1}, {"suppression_limit": "a"},
                                    {"suppression_limit": True}, {"nope": 1}])
def test_flash_bad_params(params):
    table, _ = random_table(3)
    with pytest.raises(SpecError):
        run_optimizer("flash", k_problem(table, 2), budget=100, params=params)


def test_flash_max_lattice():
    table, _ = random_table(3)
    with pytest.raises(SpecError, match="max_lattice"):
        run_optimizer("flash", k_problem(table, 2), budget=100, params={"max_lattice": 1})


# -- dfs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("heights", [[0], [2], [1, 2], [2, 0, 3], [1, 1, 1, 1], [3, 2, 1]])
def test_dfs_order_is_a_preorder_of_the_lattice(heights):
    order = list(dfs_order(np.array(heights)))
    assert order[0] == tuple([0] * len(heights))
    assert len(order) == len(set(order)) == lattice_size(np.array(heights))
    # depth first: each node after the first is a direct successor of a node visited before it,
    # and the first step goes up the first QID that can be generalized.
    pos = {n: i for i, n in enumerate(order)}
    for n in order[1:]:
        preds = [n[:q] + (n[q] - 1,) + n[q + 1 :] for q in range(len(n)) if n[q] > 0]
        assert any(pos[p] < pos[n] for p in preds)
    if sum(heights):
        q0 = next(q for q, h in enumerate(heights) if h)
        assert order[1] == tuple(1 if q == q0 else 0 for q in range(len(heights)))


def test_dfs_goes_deep_first():
    # From the bottom the walk climbs QID 0 to its top before touching QID 1.
    order = list(dfs_order(np.array([2, 2])))
    assert order[:5] == [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2)]


@pytest.mark.parametrize("seed", range(20))
def test_dfs_complete_finds_suppression_free_optimum(seed):
    table, k = random_table(2000 + seed)
    ref = exhaustive_no_suppression(k_problem(table, k))
    res = run_optimizer("dfs", k_problem(table, k), budget=10**6)
    assert res.info["complete"] and res.evaluations == lattice_size(table.heights)
    assert res.td == pytest.approx(ref, abs=1e-9) and res.feasible and res.suppressed == 0
    assert not res.certified


def test_dfs_budget_and_t_closeness(adult_table):
    problem = Problem(adult_table, [build_model("t-closeness", {"t": 0.2})])
    res = run_optimizer("dfs", problem, budget=150, params={"batch": 16})
    assert res.evaluations == 150 and not res.info["complete"]
    nodes = np.array([n for _, n in zip(range(150), dfs_order(adult_table.heights), strict=False)])
    ev = Problem(adult_table, [build_model("t-closeness", {"t": 0.2})]).evaluate(nodes)
    if ev.feasible.any():
        assert res.feasible and res.td == pytest.approx(float(ev.td[ev.feasible].max()))
    else:
        assert not res.feasible
    assert res.suppressed == 0


def test_dfs_is_deterministic():
    table, k = random_table(11)
    a = run_optimizer("dfs", k_problem(table, k), budget=20, seed=1)
    b = run_optimizer("dfs", k_problem(table, k), budget=20, seed=2)
    assert a.td == b.td and a.g.tolist() == b.g.tolist()
