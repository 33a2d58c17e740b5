"""Proof tests of the certified lattice search's box bounds (engine/methods/generalization/optimizers/bounds.py):
every bound and pruning rule against exhaustive search on random instances.

(a) B(L, U) >= TD of every feasible (G, S) with G in [L, U], S any keep vector: brute force over
    every S on tiny tables (plain Python, tests/support/reference.py).
(b) B(L, U) >= TD(G, S*(G)) of every node in the box, on larger random tables and random boxes;
    B only shrinks on sub-boxes and never exceeds TD(L, nothing suppressed) (the older bound).
(c) With k-anonymity alone, B(G, G) is TD(G, S*(G)) exactly.
(d) Dropping partners dominated by kmin - 1 kept records (Pareto-minimal for kmin = 2) keeps the
    bound of every partner.
(e) The search (box branch and bound, batch 1 and 64, and the node best-first) returns the
    optimum of exhaustive search and says certified, also under a suppression limit.
(f) The fast partner lists and packed meet vectors equal their plain twins.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ppdp.engine.methods.generalization.optimizers.bounds as bounds_module
import ppdp.engine.methods.generalization.optimizers.lattice as lattice_module
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.bounds import (
    BoxBound,
    PartnerTable,
    _pack,
    meet_packing,
    min_class_size,
    t_partners_needed,
)
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes, lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.oracles.test_evaluator_agreement import random_models, random_table
from tests.oracles.test_oracle import tiny_table
from tests.support import reference as ref
from tests.support.bounds_reference import (
    class_bounds_python,
    meet_levels,
    row_bounds_python,
    row_partners_python,
)

TOL = 1e-9


def in_box(nodes: np.ndarray, L: np.ndarray, U: np.ndarray) -> np.ndarray:
    return np.all((nodes >= L) & (nodes <= U), axis=1)


def random_box(rng: np.random.Generator, heights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(0, heights + 1)
    b = rng.integers(0, heights + 1)
    return np.minimum(a, b), np.maximum(a, b)


def sub_box(rng: np.random.Generator, L: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = rng.integers(L, U + 1)
    b = rng.integers(L, U + 1)
    return np.minimum(a, b), np.maximum(a, b)


def exhaustive(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every node, TD(G, S*(G)) and its feasibility (the oracle is proven in tests/oracles/test_oracle.py)."""
    nodes = all_nodes(problem.heights)
    _, ev = problem.evaluate_optimal(nodes)
    return nodes, np.asarray(ev.td, dtype=np.float64), np.asarray(ev.feasible, dtype=bool)


MODELS = {
    "k=2": [("k-anonymity", {"k": 2})],
    "k=3": [("k-anonymity", {"k": 3})],
    "l=2": [("distinct-l-diversity", {"l": 2})],
    "k=2,t=0.3": [("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.3})],
    "t=0.3": [("t-closeness", {"t": 0.3})],
}


@pytest.mark.parametrize("models_key", list(MODELS))
@pytest.mark.parametrize("seed", range(4))
def test_box_bound_against_every_keep_vector(models_key: str, seed: int) -> None:
    """(a) On tiny tables: for every box, the bound is at least the TD of every feasible (G, S)
    inside it, S ranging over all 2^nR keep vectors (plain-Python evaluation)."""
    models = [build_model(n, p) for n, p in MODELS[models_key]]
    rng = np.random.default_rng([81_000, seed, list(MODELS).index(models_key)])
    table = tiny_table(rng)
    problem = Problem(table, models)
    bound = BoxBound(problem)
    nodes = all_nodes(table.heights)
    best_at = np.full(len(nodes), -1.0)  # max TD over feasible S at each node
    for i, g in enumerate(nodes):
        for bits in itertools.product((0, 1), repeat=table.n_records):
            _, td, feasible, _ = ref.evaluate(table, models, g, list(bits))
            if feasible:
                best_at[i] = max(best_at[i], td)
    boxes = [(lo, hi) for lo in nodes for hi in nodes if np.all(lo <= hi)]
    values = bound(np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes]))
    bites = 0
    for (lo, hi), value in zip(boxes, values, strict=True):
        inside = best_at[in_box(nodes, lo, hi)].max()
        assert value >= inside - TOL, (lo, hi, value, inside)
        bites += value < problem.td_upper_bound(lo) - TOL
    if bound.active and min_class_size(problem) >= 2:
        assert bites > 0  # the partner bound is tighter than TD with nothing suppressed somewhere


@pytest.mark.parametrize("seed", range(60))
def test_box_bound_against_exhaustive_oracle(seed: int) -> None:
    """(b) Random tables, models and boxes: B(L, U) >= TD(G, S*(G)) of every feasible node in
    the box; sub-boxes never have a larger bound; B(L, U) <= TD(L, nothing suppressed)."""
    rng = np.random.default_rng(82_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = random_models(rng)
    problem = Problem(table, models)
    nodes, td, feasible = exhaustive(problem)
    bound = BoxBound(problem)
    for _ in range(30):
        L, U = random_box(rng, table.heights)
        L2, U2 = sub_box(rng, L, U)
        b, b2 = bound(np.stack([L, L2]), np.stack([U, U2]))
        mask = in_box(nodes, L, U) & feasible
        if mask.any():
            assert b >= td[mask].max() - TOL, (L, U)
        assert b2 <= b + TOL, (L, U, L2, U2)
        assert b <= problem.td_upper_bound(L) + TOL
    # the whole lattice and single nodes
    top = np.asarray(table.heights, dtype=np.int64)
    assert bound(np.zeros_like(top), top)[0] >= td[feasible].max(initial=0.0) - TOL
    one = bound(nodes, nodes)
    assert np.all(one[feasible] >= td[feasible] - TOL)


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("seed", range(10))
def test_single_node_bound_is_exact_for_k_anonymity(k: int, seed: int) -> None:
    """(c) With k-anonymity alone a record is kept at G iff k - 1 others share its class, so
    B(G, G) = TD(G, S*(G)) on every node."""
    rng = np.random.default_rng(83_000 + 10 * k + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    problem = Problem(table, [build_model("k-anonymity", {"k": k})])
    nodes, td, _ = exhaustive(problem)
    assert np.allclose(BoxBound(problem)(nodes, nodes), td, rtol=0, atol=1e-9)


def full_tables(problem: Problem) -> list[PartnerTable]:
    """Every candidate record of every row as a partner (no merging, no dominance reduction):
    any other record with need kmin - 1, and the records of other SA values with need_t."""
    t = problem.table
    codes = np.ascontiguousarray(t.codes, dtype=np.int64)
    heights = np.asarray(t.heights, dtype=np.int64)
    counts = t.counts.astype(np.int64)
    sa = np.asarray(t.sa)
    kinds = []
    if min_class_size(problem) >= 2:
        kinds.append((np.full(t.n_rows, min_class_size(problem) - 1), lambda h: counts - (np.arange(t.n_rows) == h)))
    need_t = t_partners_needed(problem)
    if need_t.any():
        kinds.append((need_t, lambda h: np.where(sa != sa[h], counts, 0)))
    out = []
    for need, candidates in kinds:
        start, meets = [0], []
        for h in range(t.n_rows):
            rows = np.repeat(meet_levels(h, codes, t.lookup[0], heights), candidates(h), axis=0)
            meets.append(rows)
            start.append(start[-1] + len(rows))
        meet = np.ascontiguousarray(np.concatenate(meets), dtype=np.int64)
        out.append(PartnerTable(np.asarray(start, dtype=np.int64), meet, np.ones(len(meet), dtype=np.int64),
                                np.asarray(need, dtype=np.int64)))
    return out


@pytest.mark.parametrize("models_key", ["k=2", "k=3", "k=4", "t=0.1", "t=0.3", "k=2,t=0.1"])
@pytest.mark.parametrize("seed", range(8))
def test_reduced_partner_table_gives_the_bound_of_every_partner(models_key: str, seed: int) -> None:
    """(d) Merged equal meet vectors without those dominated by need kept records (the
    Pareto-minimal ones for need 1) give the same bound as every candidate record listed."""
    rng = np.random.default_rng([84_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    while "t" in models_key and table.n_sa == 0:
        table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = []
    for part in models_key.split(","):
        name, value = part.split("=")
        models.append(build_model("k-anonymity", {"k": int(value)}) if name == "k"
                      else build_model("t-closeness", {"t": float(value)}))
    problem = Problem(table, models)
    reduced = BoxBound(problem)
    full = BoxBound(problem)
    full.tables = full_tables(problem)
    assert len(full.tables) == len(reduced.tables)
    boxes = [random_box(rng, table.heights) for _ in range(40)]
    L, U = np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes])
    assert np.allclose(reduced(L, U), full(L, U), rtol=0, atol=1e-9)


def test_t_partners_needed_by_hand() -> None:
    """q = (0.75, 0.25), t = 0.1: a record of value 1 needs ceil(1/0.35 - 1) = 2 records of value
    0 in its class (1 of 3 is 0.33 <= 0.35; 1 of 2 is 0.5, too many); value 0 needs
    ceil(1/0.85 - 1) = 1 record of value 1 (an all-0 class has 1.0 > 0.85)."""
    import polars as pl

    from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
    from ppdp.engine.core.hierarchy import flat

    hist = pl.DataFrame({"q": ["a", "b", "c", "d"], "s": ["0", "0", "0", "1"], COUNT_COLUMN: [1, 1, 1, 1]})
    table = encode_histogram(hist, ["q"], ["s"], [flat("q", ["a", "b", "c", "d"])])
    problem = Problem(table, [build_model("t-closeness", {"t": 0.1})])
    value_1 = int(np.flatnonzero(np.isclose(table.sa_distribution, 0.25))[0])
    assert t_partners_needed(problem).tolist() == [2 if code == value_1 else 1 for code in table.sa]
    top = np.asarray(table.heights, dtype=np.int64)
    # At the bottom nobody shares a class: nothing can be kept; at the top everything can.
    bound = BoxBound(problem)
    assert bound(np.zeros_like(top), np.zeros_like(top))[0] == 0.0
    assert bound(top, top)[0] == pytest.approx(problem.td_upper_bound(top))


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1.0, 0.3])
@pytest.mark.parametrize("seed", range(25))
def test_search_certifies_the_exhaustive_optimum(limit: float, seed: int) -> None:
    """(e) Box branch and bound (batch 64 and 1) and node best-first agree with exhaustive
    search on the best feasible TD, certified, on random tables and models."""
    rng = np.random.default_rng([85_000, seed, int(limit * 10)])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = random_models(rng)
    size = lattice_size(table.heights)
    params = {"suppression_limit": limit}
    full = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "exhaustive", **params})
    exact = Problem(table, models).oracle_exact
    for extra in ({"mode": "bound"}, {"mode": "bound", "batch": 1}, {"mode": "nodes"},
                  {"mode": "bound", "greedy_start": True}):
        got = run_optimizer("lattice", Problem(table, models), budget=size, params={**extra, **params})
        assert got.certified == exact, extra
        assert got.feasible == full.feasible, extra
        if full.feasible:
            assert got.td == pytest.approx(full.td, rel=1e-12, abs=1e-12), extra
        assert got.evaluations <= size


def test_box_search_evaluates_fewer_nodes_than_node_search() -> None:
    """The point of the partner bound: on a k = 2 table whose records are mostly unique, the
    box search certifies the same optimum with fewer node evaluations."""
    rng = np.random.default_rng(86_000)
    table = random_table(rng, n_qids=4, max_records=60, min_leaves=6)
    while table.n_rows < 0.8 * table.n_records or lattice_size(table.heights) < 100:
        table = random_table(rng, n_qids=4, max_records=60, min_leaves=6)
    models = [build_model("k-anonymity", {"k": 2})]
    size = lattice_size(table.heights)
    box = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "bound"})
    node = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "nodes"})
    assert box.certified and node.certified and box.td == pytest.approx(node.td, rel=1e-12)
    assert box.info["nodes_evaluated"] < node.info["nodes_evaluated"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_capped_box_search_reports_a_valid_remaining_bound(seed: int) -> None:
    """Stopped by max_boxes or the budget: not certified, something evaluated, and the bound left
    is at least the exhaustive optimum (what the reports print as 'bound left')."""
    rng = np.random.default_rng(87_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(3, 5)), max_records=60, min_leaves=3)
    while lattice_size(table.heights) < 50:
        table = random_table(rng, n_qids=int(rng.integers(3, 5)), max_records=60, min_leaves=3)
    models = [build_model("k-anonymity", {"k": 2})]
    size = lattice_size(table.heights)
    full = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "exhaustive"})
    for budget, params in ((size, {"max_boxes": 1}), (size, {"max_boxes": 3}), (1, {})):
        got = run_optimizer("lattice", Problem(table, models), budget=budget, params={"mode": "bound", **params})
        assert got.evaluations >= 1
        if not got.certified:
            assert got.info["remaining_upper_bound"] >= full.td - TOL, params
        assert got.td <= full.td + TOL


# --- The class bound (tables above MAX_PARTNER_ROWS; forced here with MAX_PARTNER_ROWS = 0) ---

CLASS_MODELS = {k: v for k, v in MODELS.items() if k != "t=0.3"}  # kmin >= 2: the class bound binds


@pytest.fixture
def class_bound_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table 'too large' for partner tables: BoxBound falls back to the class bound."""
    monkeypatch.setattr(bounds_module, "MAX_PARTNER_ROWS", 0)
    monkeypatch.setattr(lattice_module, "CLASS_BOUND_MIN_LATTICE", 0)  # tiny lattices take the box search too


@pytest.mark.parametrize("models_key", list(CLASS_MODELS))
@pytest.mark.parametrize("seed", range(3))
def test_class_bound_against_every_keep_vector(class_bound_only: None, models_key: str, seed: int) -> None:
    """(a) for the class bound: on tiny tables, for every box, B_c(L, U) is at least the TD of
    every feasible (G, S) inside it, S over all 2^nR keep vectors (plain-Python evaluation)."""
    models = [build_model(n, p) for n, p in CLASS_MODELS[models_key]]
    rng = np.random.default_rng([88_000, seed, list(CLASS_MODELS).index(models_key)])
    table = tiny_table(rng)
    problem = Problem(table, models)
    bound = BoxBound(problem)
    assert bound.by_class and not bound.tables
    nodes = all_nodes(table.heights)
    best_at = np.full(len(nodes), -1.0)
    for i, g in enumerate(nodes):
        for bits in itertools.product((0, 1), repeat=table.n_records):
            _, td, feasible, _ = ref.evaluate(table, models, g, list(bits))
            if feasible:
                best_at[i] = max(best_at[i], td)
    boxes = [(lo, hi) for lo in nodes for hi in nodes if np.all(lo <= hi)]
    L, U = np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes])
    values = bound(L, U)
    assert np.allclose(values, class_bounds_python(problem, L, U), rtol=0, atol=1e-9)  # kernel = twin
    for (lo, hi), value in zip(boxes, values, strict=True):
        assert value >= best_at[in_box(nodes, lo, hi)].max() - TOL, (lo, hi)


@pytest.mark.parametrize("seed", range(40))
def test_class_bound_against_exhaustive_oracle(class_bound_only: None, seed: int) -> None:
    """(b) for the class bound: B_c(L, U) >= TD(G, S*(G)) of every feasible node in random boxes;
    sub-boxes never larger; B_c(L, U) <= UB(L); never below the partner bound's value (the partner
    bound is the tighter of the two, so taking their minimum would change nothing)."""
    rng = np.random.default_rng(89_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = random_models(rng)
    problem = Problem(table, models)
    if min_class_size(problem) < 2:
        models = [*models, build_model("k-anonymity", {"k": int(rng.integers(2, 4))})]
        problem = Problem(table, models)
    nodes, td, feasible = exhaustive(problem)
    bound = BoxBound(problem)
    assert bound.by_class
    boxes = [random_box(rng, table.heights) for _ in range(30)]
    subs = [sub_box(rng, L, U) for L, U in boxes]
    L, U = np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes])
    L2, U2 = np.stack([b[0] for b in subs]), np.stack([b[1] for b in subs])
    b, b2 = bound(L, U), bound(L2, U2)
    assert np.allclose(b, class_bounds_python(problem, L, U), rtol=0, atol=1e-9)
    for i in range(len(boxes)):
        mask = in_box(nodes, L[i], U[i]) & feasible
        if mask.any():
            assert b[i] >= td[mask].max() - TOL, (L[i], U[i])
        assert b2[i] <= b[i] + TOL, (L[i], U[i], L2[i], U2[i])
        assert b[i] <= problem.td_upper_bound(L[i]) + TOL
    bounds_module.MAX_PARTNER_ROWS = 5_000  # the partner bound on the same boxes (restored by the fixture)
    partner = BoxBound(problem)
    assert not partner.by_class
    assert np.all(partner(L, U) <= b + TOL)


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("seed", range(6))
def test_single_node_class_bound_is_exact_for_k_anonymity(class_bound_only: None, k: int, seed: int) -> None:
    """(c) for the class bound: S*(G) keeps exactly the classes of at least k records, so
    B_c(G, G) = TD(G, S*(G)) on every node."""
    rng = np.random.default_rng(90_000 + 10 * k + seed)
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    problem = Problem(table, [build_model("k-anonymity", {"k": k})])
    nodes, td, _ = exhaustive(problem)
    assert np.allclose(BoxBound(problem)(nodes, nodes), td, rtol=0, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1.0, 0.05])
@pytest.mark.parametrize("seed", range(8))
def test_class_bound_search_certifies_the_exhaustive_optimum(class_bound_only: None, limit: float,
                                                             seed: int) -> None:
    """(e) for the class bound: the box search on B_c (also started from the greedy descent's
    incumbent) returns exhaustive search's optimum, certified, under no suppression limit and a
    5% one."""
    rng = np.random.default_rng([91_000, seed, int(limit * 100)])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = [*random_models(rng), build_model("k-anonymity", {"k": int(rng.integers(2, 4))})]
    size = lattice_size(table.heights)
    params = {"suppression_limit": limit}
    full = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "exhaustive", **params})
    exact = Problem(table, models).oracle_exact
    for extra in ({"mode": "bound"}, {"mode": "bound", "batch": 1}, {"mode": "bound", "greedy_start": True}):
        got = run_optimizer("lattice", Problem(table, models), budget=size, params={**extra, **params})
        # under a limit (union-closed models, and an exact oracle unless the limit allows no
        # record) the search also prunes boxes by their infeasible tops
        assert got.info["search"] in ("boxes by class", "boxes by class, infeasible tops pruned",
                                      "boxes, infeasible tops pruned"), extra
        assert got.certified == exact, extra
        assert got.feasible == full.feasible, extra
        if full.feasible:
            assert got.td == pytest.approx(full.td, rel=1e-12, abs=1e-12), extra
        assert got.evaluations <= size


def test_small_lattices_without_partner_tables_take_the_node_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The class bound runs only on lattices of CLASS_BOUND_MIN_LATTICE nodes or more; both
    searches certify the same optimum."""
    rng = np.random.default_rng(7)
    table = random_table(rng, n_qids=3, max_records=60)
    models = [build_model("k-anonymity", {"k": 2})]
    monkeypatch.setattr(bounds_module, "MAX_PARTNER_ROWS", 0)
    nodes = run_optimizer("lattice", Problem(table, models), budget=10**6)
    monkeypatch.setattr(lattice_module, "CLASS_BOUND_MIN_LATTICE", 0)
    boxes = run_optimizer("lattice", Problem(table, models), budget=10**6)
    assert nodes.info["search"] == "nodes" and boxes.info["search"] == "boxes by class"
    assert nodes.certified and boxes.certified and nodes.td == pytest.approx(boxes.td, abs=1e-9)


# (f) The fast paths against their plain twins: the partner lists built in one
# Numba pass (direct-addressed or hashed merging, meet table or hierarchy walks, packed
# dominance) against ``row_partners_python``; the packed "u <= v" test against the QID loop;
# the box bounds with packed meet vectors against the same bounds compared QID by QID.

@pytest.mark.parametrize("path", ["dense", "hash", "walk"])
@pytest.mark.parametrize("models_key", ["k=2", "k=4", "t=0.1", "k=3,t=0.2"])
@pytest.mark.parametrize("seed", range(6))
def test_partner_lists_match_the_python_twin(monkeypatch: pytest.MonkeyPatch, path: str, models_key: str,
                                             seed: int) -> None:
    if path == "hash":
        monkeypatch.setattr(bounds_module, "DENSE_MAX_KEYS", 0)
    if path == "walk":
        monkeypatch.setattr(bounds_module, "MEET_TABLE_MAX_LEAVES", 0)
    rng = np.random.default_rng([86_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    while "t" in models_key and table.n_sa == 0:
        table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    models = []
    for part in models_key.split(","):
        name, value = part.split("=")
        models.append(build_model("k-anonymity", {"k": int(value)}) if name == "k"
                      else build_model("t-closeness", {"t": float(value)}))
    problem = Problem(table, models)
    t = problem.table
    codes = np.asarray(t.codes, dtype=np.int64)
    heights = np.asarray(t.heights, dtype=np.int64)
    counts = t.counts.astype(np.int64)
    sa = np.asarray(t.sa)
    expected = []
    if min_class_size(problem) >= 2:
        expected.append((np.full(t.n_rows, min_class_size(problem) - 1), lambda h: counts - (np.arange(t.n_rows) == h)))
    need_t = t_partners_needed(problem)
    if need_t.any():
        expected.append((need_t, lambda h: np.where(sa != sa[h], counts, 0)))
    tables = bounds_module.partner_tables(problem)
    assert len(tables) == len(expected)
    for table_, (need, candidates) in zip(tables, expected, strict=True):
        assert np.array_equal(table_.need, need)
        for h in range(t.n_rows):
            vecs, mult = (row_partners_python(h, codes, t.lookup[0], heights, candidates(h), int(need[h]))
                          if need[h] > 0 else (np.zeros((0, t.n_qids), dtype=np.int64), np.zeros(0, dtype=np.int64)))
            lo, hi = table_.start[h], table_.start[h + 1]
            assert np.array_equal(table_.meet[lo:hi], vecs), h
            assert np.array_equal(table_.mult[lo:hi], mult), h


def test_packed_dominance_is_the_componentwise_order() -> None:
    """Every pair of vectors of a small lattice (levels up to heights + 1): the packed test
    ((v | G) - u) & G == G says u <= v exactly when every level of u is at most v's."""
    heights = np.array([0, 1, 2, 4, 7], dtype=np.int64)
    shifts, guard = meet_packing(heights)
    assert guard >= 0
    grid = all_nodes(heights + 1)
    packed = _pack(grid, shifts)
    for i in range(len(grid)):
        expected = np.all(grid[i] <= grid, axis=1)  # grid[i] <= every v
        got = ((packed | guard) - packed[i]) & guard == guard
        assert np.array_equal(got, expected), grid[i]
    assert meet_packing(np.full(20, 7))[1] == -1  # 20 fields of 4 + 1 bits: over 63 bits, unpacked


@pytest.mark.parametrize("models_key", list(MODELS))
@pytest.mark.parametrize("seed", range(6))
def test_packed_box_bounds_equal_the_qid_loop(models_key: str, seed: int) -> None:
    rng = np.random.default_rng([87_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    problem = Problem(table, [build_model(name, params) for name, params in MODELS[models_key]]
                      if "t" not in models_key or table.n_sa else [build_model("k-anonymity", {"k": 2})])
    packed = BoxBound(problem)
    looped = BoxBound(problem)
    looped._guard = -1
    boxes = [random_box(rng, table.heights) for _ in range(60)]
    L, U = np.stack([b[0] for b in boxes]), np.stack([b[1] for b in boxes])
    assert np.array_equal(packed(L, U), looped(L, U))  # bit for bit: the same sums in the same order


# (g) Row states: a box's rows with too few partners inside U (ROW_NONE) or enough
# merged at L (ROW_AT_L) keep that state in every sub-box, so the sub-box skips their partner
# scans. The bounds with the parent's states equal those of the full scan bit for bit, and a
# search passing states returns what one without them does (same TD, node, evaluations, boxes).

def nested_boxes(rng: np.random.Generator, heights: np.ndarray, depth: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """A chain of boxes, each inside the one before (the first a random box)."""
    chain = [random_box(rng, heights)]
    for _ in range(depth):
        chain.append(sub_box(rng, *chain[-1]))
    return chain


@pytest.mark.parametrize("models_key", list(MODELS) + ["k=4"])
@pytest.mark.parametrize("seed", range(8))
def test_row_states_give_the_full_scan_bounds(models_key: str, seed: int) -> None:
    rng = np.random.default_rng([88_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    specs = ([("k-anonymity", {"k": 4})] if models_key == "k=4" else MODELS[models_key])
    if any(name == "t-closeness" for name, _ in specs) and table.n_sa == 0:
        specs = [("k-anonymity", {"k": 2})]
    problem = Problem(table, [build_model(name, params) for name, params in specs])
    bound = BoxBound(problem)
    settled = 0
    for _ in range(20):
        chain = nested_boxes(rng, np.asarray(table.heights, dtype=np.int64), 4)
        states = None
        for L, U in chain:
            full, _ = bound.with_states(L[None, :], U[None, :], None)
            inherited, new_states = bound.with_states(L[None, :], U[None, :], states)
            assert np.array_equal(full, inherited), (L, U)  # bit for bit
            assert new_states is not None
            if states is not None:
                # a settled state stays settled in the sub-box (what the skip relies on)
                for state in (bounds_module.ROW_NONE, bounds_module.ROW_AT_L):
                    assert np.all(new_states[states == state] == state)
                settled += int(np.sum(states != bounds_module.ROW_SCAN))
            states = new_states
    if bound.active and min_class_size(problem) >= 2:
        assert settled > 0  # some rows were skipped


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("seed", range(12))
def test_search_with_row_states_is_the_search_without(monkeypatch: pytest.MonkeyPatch, batch: int,
                                                      seed: int) -> None:
    rng = np.random.default_rng([89_000, seed, batch])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=60)
    models = random_models(rng)
    size = lattice_size(table.heights)
    params = {"mode": "bound", "batch": batch}
    with_states = run_optimizer("lattice", Problem(table, models), budget=size, params=dict(params))
    full_scan = BoxBound.with_states
    monkeypatch.setattr(BoxBound, "with_states", lambda self, L, U, parent: full_scan(self, L, U, None))
    without = run_optimizer("lattice", Problem(table, models), budget=size, params=dict(params))
    assert with_states.td == without.td and with_states.certified == without.certified
    assert np.array_equal(with_states.g, without.g)
    assert with_states.evaluations == without.evaluations
    assert with_states.info == without.info  # boxes bounded, remaining bound, search


def test_key_tables_decode_every_key() -> None:
    """``_key_tables``: each mixed-radix key's packed vector and level sum, against decoding the
    key digit by digit (the first QID most significant)."""
    heights = np.array([2, 0, 3, 1], dtype=np.int64)
    shifts, guard = meet_packing(heights)
    packed, sums = bounds_module._key_tables(heights, shifts)
    radix = heights + 2
    assert len(packed) == int(np.prod(radix))
    for key in range(len(packed)):
        digits, rest = [], key
        for r in radix[::-1].tolist():
            digits.append(rest % r)
            rest //= r
        vec = np.asarray(digits[::-1], dtype=np.int64)
        assert packed[key] == _pack(vec[None, :], shifts)[0]
        assert sums[key] == vec.sum()


@pytest.mark.parametrize("models_key", list(MODELS) + ["k=4", "k=20"])
@pytest.mark.parametrize("seed", range(8))
def test_row_bounds_equal_the_python_twin(models_key: str, seed: int) -> None:
    """The kernel's per-row bounds (running top-k, partners skipped by their meet weight, row
    states from a containing box) against ``row_bounds_python``'s sort of every partner inside
    U, bit for bit; k = 20 takes the kernel's sorting path (above SELECT_MAX_NEED)."""
    rng = np.random.default_rng([90_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    specs = ([("k-anonymity", {"k": int(models_key[2:])})] if models_key in ("k=4", "k=20") else MODELS[models_key])
    if any(name == "t-closeness" for name, _ in specs) and table.n_sa == 0:
        specs = [("k-anonymity", {"k": 3})]
    problem = Problem(table, [build_model(name, params) for name, params in specs])
    bound = BoxBound(problem)
    codes = np.ascontiguousarray(table.codes, dtype=np.int64)
    for p in bound.tables:
        for _ in range(6):
            chain = nested_boxes(rng, np.asarray(table.heights, dtype=np.int64), 3)
            L, U = np.stack([c[0] for c in chain]), np.stack([c[1] for c in chain])
            expected = row_bounds_python(L, U, codes, table.lookup[1], p)
            got, states = bound._row_bounds(L, U, p, np.full((len(L), table.n_rows), bounds_module.ROW_SCAN,
                                                             dtype=np.int8))
            assert np.array_equal(got, expected)
            # each box again with the states of the box before it in the chain (which contains it)
            inherited, _ = bound._row_bounds(L[1:], U[1:], p, np.ascontiguousarray(states[:-1]))
            assert np.array_equal(inherited, expected[1:])


@pytest.mark.parametrize("seed", range(4))
def test_weighted_sums_are_numpys_sum(seed: int) -> None:
    """``weighted_sums`` (the box bound's row-weighted sum, written out in Numba for the box loop
    kernel) is numpy's ``np.multiply(per_row, counts).sum(axis=1)`` bit for bit: the same pairwise
    summation, on sizes around its block (128) and its halving (multiples of 8)."""
    rng = np.random.default_rng([91_000, seed])
    sizes = [1, 7, 8, 9, 127, 128, 129, 136, 255, 256, 257, 1000, 4715, int(rng.integers(1, 20_000))]
    for n in sizes:
        for n_boxes in (1, 3, 64):
            scale = rng.choice([1.0, 1e3, 1e-3], size=(n_boxes, n))
            per_row = rng.random((n_boxes, n)) * scale * (rng.random((n_boxes, n)) < 0.6)
            counts = rng.integers(1, 9, n).astype(np.float64)
            assert np.array_equal(bounds_module.weighted_sums(per_row, counts), np.multiply(per_row, counts).sum(axis=1))


@pytest.mark.parametrize("models_key", ["k=2", "k=3", "t=0.3", "k=2,t=0.3"])
@pytest.mark.parametrize("seed", range(6))
def test_wm_order_keeps_each_rows_partners(models_key: str, seed: int) -> None:
    """``wm_order``: each row's partners (meet vector, records) are the table's, as a multiset,
    now by meet weight, largest first (the order ``_row_bounds``'s early stop relies on)."""
    rng = np.random.default_rng([92_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=80)
    specs = MODELS[models_key]
    if any(name == "t-closeness" for name, _ in specs) and table.n_sa == 0:
        specs = [("k-anonymity", {"k": 2})]
    problem = Problem(table, [build_model(name, params) for name, params in specs])
    bound = BoxBound(problem)
    codes = np.ascontiguousarray(table.codes, dtype=np.int64)
    heights = np.asarray(table.heights, dtype=np.int64)
    for p in bound.tables:
        wm = bounds_module._meet_weights(codes, table.lookup[1], p.start, p.meet, heights)
        ordered, ordered_wm = bounds_module.wm_order(p, wm)
        for h in range(table.n_rows):
            before = sorted((tuple(m), int(c)) for m, c, w in zip(p.meet[p.start[h]:p.start[h + 1]].tolist(),
                                                                  p.mult[p.start[h]:p.start[h + 1]].tolist(),
                                                                  wm[p.start[h]:p.start[h + 1]].tolist(), strict=True)
                            if np.isfinite(w))
            part = slice(ordered.start[h], ordered.start[h + 1])
            after = sorted((tuple(m), int(c)) for m, c in zip(ordered.meet[part].tolist(), ordered.mult[part].tolist(),
                                                              strict=True))
            assert before == after
            assert np.all(np.diff(ordered_wm[part]) <= 0)


def search_trace(monkeypatch: pytest.MonkeyPatch, problem: Problem, params: dict, budget: int) -> tuple:
    """(result, the batches of nodes the search evaluated, in order)."""
    batches: list[list[list[int]]] = []
    evaluate = lattice_module.evaluate_nodes

    def recording(problem: Problem, G: np.ndarray, max_suppressed: int):
        batches.append(np.asarray(G).tolist())
        return evaluate(problem, G, max_suppressed)

    monkeypatch.setattr(lattice_module, "evaluate_nodes", recording)
    result = run_optimizer("lattice", problem, budget=budget, params=dict(params))
    monkeypatch.setattr(lattice_module, "evaluate_nodes", evaluate)
    return result, batches


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("seed", range(12))
def test_box_loop_kernel_is_the_python_loop(monkeypatch: pytest.MonkeyPatch, batch: int, seed: int) -> None:
    """``_box_kernels.box_rounds`` against its twin, the Python loop of ``lattice._box_search``:
    the same leaves evaluated in the same batches (so the same boxes popped in the same order),
    the same boxes bounded, the same answer and largest bound left, also when stopped early by
    ``max_boxes`` or the budget at several points; the slots start small so that they grow."""
    rng = np.random.default_rng([93_000, seed, batch])
    table = random_table(rng, n_qids=int(rng.integers(2, 6)), max_records=60)
    models = random_models(rng)
    size = lattice_size(table.heights)
    monkeypatch.setattr(lattice_module, "SPARE_SLOTS", 0)
    runs = [({"mode": "bound", "batch": batch}, size)]
    runs += [({"mode": "bound", "batch": batch, "max_boxes": int(m)}, size) for m in rng.integers(1, 60, 3)]
    runs += [({"mode": "bound", "batch": batch}, int(b)) for b in rng.integers(1, 6, 2)]
    kernel_ran = False
    for params, budget in runs:
        monkeypatch.setattr(lattice_module, "BOX_LOOP_KERNEL", True)
        with_kernel, kernel_batches = search_trace(monkeypatch, Problem(table, models), params, budget)
        monkeypatch.setattr(lattice_module, "BOX_LOOP_KERNEL", False)
        python, python_batches = search_trace(monkeypatch, Problem(table, models), params, budget)
        assert kernel_batches == python_batches
        assert with_kernel.td == python.td and with_kernel.certified == python.certified
        assert np.array_equal(with_kernel.g, python.g) and with_kernel.evaluations == python.evaluations
        assert with_kernel.info == python.info  # boxes bounded, remaining bound, search
        kernel_ran |= python.info.get("search") == "boxes"
    if BoxBound(Problem(table, models)).tables:
        assert kernel_ran


@pytest.mark.parametrize("models_key", list(MODELS) + ["k=4"])
@pytest.mark.parametrize("seed", range(8))
def test_bitset_scan_is_the_packed_scan(monkeypatch: pytest.MonkeyPatch, models_key: str, seed: int) -> None:
    """The box bounds with the partner bitsets (inside U read off bit sets, every row with a
    partner) and with the packed test per partner: the same bounds bit for bit and the same row
    states, on chains of nested boxes with inherited states."""
    monkeypatch.setattr(bounds_module, "BITSET_MIN_PARTNERS", 0)
    rng = np.random.default_rng([94_000, seed, len(models_key)])
    table = random_table(rng, n_qids=int(rng.integers(1, 6)), max_records=160)
    specs = [("k-anonymity", {"k": 4})] if models_key == "k=4" else MODELS[models_key]
    if any(name == "t-closeness" for name, _ in specs) and table.n_sa == 0:
        specs = [("k-anonymity", {"k": 2})]
    problem = Problem(table, [build_model(name, params) for name, params in specs])
    with_bits, packed = BoxBound(problem), BoxBound(problem)
    packed.use_bitsets = False
    for _ in range(12):
        states_bits = states_packed = None
        for L, U in nested_boxes(rng, np.asarray(table.heights, dtype=np.int64), 4):
            b1, states_bits = with_bits.with_states(L[None, :], U[None, :], states_bits)
            b2, states_packed = packed.with_states(L[None, :], U[None, :], states_packed)
            assert np.array_equal(b1, b2)
            assert states_bits is not None and np.array_equal(states_bits, states_packed)
    if with_bits.tables:
        assert len(with_bits._prepared(with_bits.tables[0])[3]) > 0  # the bitsets ran
