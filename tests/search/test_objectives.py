"""The objectives other than TD (engine/methods/generalization/objectives.py): each chosen node
is the minimum over every node, found by brute force on small instances."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.methods.generalization.objectives import lower_bounds, scorer, search
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.release.run import run_release
from ppdp.engine.release.stages.validate import prepare
from tests.conftest import load_adult, snapshot, write_spec


def test_share_sums_kernel_equals_its_twin():
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    rng = np.random.default_rng(3)
    shares = rng.random((3, 4, 50))
    G = rng.integers(0, 4, size=(6, 3))
    kept = rng.integers(0, 5, size=(6, 50)).astype(np.float64)
    assert np.array_equal(OK.share_sums(G, kept, shares), OK.share_sums_twin(G, kept, shares))



OBJECTIVES = ["loss", "nu-entropy", "aecs", "discernibility", "precision", "height"]


@pytest.fixture(scope="module")
def small_adult(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("objectives")
    db = load_adult(tmp / "a.duckdb", rows=500)
    p = write_spec(tmp / "s.toml", db=db, qids=["age", "sex", "race", "education"])
    spec = load_spec(p)
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        return prepare(spec, con, None)
    finally:
        con.close()


@pytest.mark.parametrize("limit", [0.0, 0.05, 1.0])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_each_objective_equals_brute_force(small_adult, objective, limit):
    """The chosen node's score is the minimum over every feasible node within the limit (scored one
    node at a time by the objective's scorer), and the run is certified."""
    table, models = small_adult.table, small_adult.models
    result = search(Problem(table, models), objective, budget=10**6, optimizer="lattice",
                    params={"suppression_limit": limit})
    assert result.certified and result.feasible and result.info["objective"] == objective
    score = scorer(objective, table)
    cap = int(np.floor(limit * table.n_records))
    scores = {}
    for g in itertools.product(*(range(int(h) + 1) for h in Problem(table, models).heights)):
        retained, ev = Problem(table, models).evaluate_optimal(np.array([g]))
        if ev.feasible[0] and int(ev.suppressed[0]) <= cap:
            scores[g] = score(np.array(g), retained[0])
    best = min(scores.values())
    assert result.info["objective_value"] == best
    assert scores[tuple(int(x) for x in result.g)] == best
    # the reported TD is the chosen (G, S) evaluated again, bit for bit (the search takes it from
    # the evaluation that scored the node instead of evaluating it once more)
    again = Problem(table, models).evaluate(result.g[None, :], retained=result.retained[None, :])
    assert result.td == float(again.td[0]) and result.suppressed == int(again.suppressed[0])
    assert np.array_equal(result.ad, again.ad[0])


@pytest.mark.parametrize("limit", [0.0, 0.05, 1.0])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_k_map_with_an_estimator_is_searched_as_k_prime_anonymity(small_adult, objective, limit):
    """k-map with an estimator is k'-anonymity (its AD the smallest class, feasible from k'):
    the search takes the classes-only path for it, as for k-anonymity, and chooses the node
    and score that k-anonymity with k = k' gets, also the minimum over every node."""
    from ppdp.engine.methods.generalization.objectives import smallest_class_k
    from ppdp.engine.privacy import build_model
    from ppdp.engine.privacy.base import ModelContext

    table = small_adult.table
    context = ModelContext(table.sensitive, table.sa_values, ".", None, int(table.n_records))
    k_map = build_model("k-map", {"k": 5, "estimator": "zero-truncated-poisson", "population_size": 800,
                                  "significance": 0.2}).bind(context)
    k_prime = k_map.min_class_size()
    assert smallest_class_k([k_map]) == k_prime and 1 < k_prime
    params = {"suppression_limit": limit}
    got = search(Problem(table, [k_map]), objective, budget=10**6, optimizer="flash", params=params)
    want = search(Problem(table, [build_model("k-anonymity", {"k": k_prime})]), objective, budget=10**6,
                  optimizer="flash", params=params)
    assert got.certified and want.certified
    assert np.array_equal(got.g, want.g) and got.info["objective_value"] == want.info["objective_value"]
    cap = int(np.floor(limit * table.n_records))
    score, problem = scorer(objective, table), Problem(table, [k_map])
    scores = [score(np.array(g), r[0]) for g in itertools.product(*(range(int(h) + 1) for h in problem.heights))
              for r, ev in [problem.evaluate_optimal(np.array([g]))] if ev.feasible[0] and int(ev.suppressed[0]) <= cap]
    assert got.info["objective_value"] == min(scores)


def test_bounds_never_exceed_the_score_and_never_decrease_upward(small_adult):
    table, models = small_adult.table, small_adult.models
    heights = [int(h) for h in Problem(table, models).heights]
    nodes = np.array(list(itertools.product(*(range(h + 1) for h in heights))), dtype=np.int64)
    for objective in OBJECTIVES:
        b = lower_bounds(objective, table, nodes)
        retained, _ = Problem(table, models).evaluate_optimal(nodes)
        s = np.array([scorer(objective, table)(g, r) for g, r in zip(nodes, retained, strict=True)])
        assert np.all(b <= s), objective
        for d in range(len(heights)):  # one step up in QID d
            up = nodes[:, d] < heights[d]
            succ = nodes[up].copy()
            succ[:, d] += 1
            assert np.all(lower_bounds(objective, table, succ) >= b[up]), objective


def test_flash_accepts_every_objective(tmp_path):
    db = load_adult(tmp_path / "a.duckdb", rows=200)
    for objective in OBJECTIVES:
        p = write_spec(tmp_path / f"{objective}.toml", db=db, qids=["age", "sex", "race"], optimizer="flash")
        p.write_text(p.read_text() + f'\n[utility]\nobjective = "{objective}"\n')
        assert load_spec(p).objective == objective
    out = run_release(load_spec(tmp_path / "aecs.toml"), progress=False)  # flash, objective = "aecs"
    assert out.run.solution["certified"] and out.run.solution["info"]["objective"] == "aecs"


def test_a_budget_that_ends_flash_first_is_not_certified(small_adult):
    table, models = small_adult.table, small_adult.models
    result = search(Problem(table, models), "loss", budget=3, optimizer="flash", params={"suppression_limit": 0.0})
    assert not result.certified and result.not_certified_because


def _random_classes_case(seed: int):
    rng = np.random.default_rng(seed)
    H, D = 60, 3
    # int32 codes and generalization tables, as an EncodedTable holds them (the kernels' compiled form)
    codes = rng.integers(0, 6, size=(H, D)).astype(np.int32)
    # level 0: the leaf, level 1: pairs, level 2: one value
    gen = np.stack([np.stack([np.arange(6), np.arange(6) // 2, np.zeros(6, dtype=np.int64)]) for _ in range(D)]).astype(np.int32)
    n_gen = np.array([[6, 3, 1]] * D, dtype=np.int64)
    counts = rng.integers(1, 5, size=H).astype(np.int64)
    G = np.array(list(itertools.product(range(3), repeat=D)), dtype=np.int64)
    retained = (counts[None, :] * (rng.random((len(G), H)) < 0.7)).astype(np.int64)
    ok = rng.random(len(G)) < 0.8
    return G, ok, codes, np.ascontiguousarray(gen), n_gen, counts, retained


@pytest.mark.parametrize("kind", [0, 1])
@pytest.mark.parametrize("k", [1, 5])
def test_class_scores_kernel_equals_its_twin(kind, k):
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    G, ok, codes, gen, n_gen, counts, retained = _random_classes_case(7)
    n = float(counts.sum())
    no_memo = np.full(len(G), -1, dtype=np.int64)
    got = OK.class_scores(kind, G, ok, codes, gen, n_gen, counts, retained, np.zeros((1, 1), dtype=np.int32), no_memo,
                          n, k)
    want = OK.class_scores_twin(kind, G, ok, codes, gen, n_gen, counts, retained, n, k)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.isinf(got[0][~ok]).all() and np.isfinite(got[0][ok]).any()


def test_pick_nodes_kernel_equals_its_twin():
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    rng = np.random.default_rng(5)
    shape = (3, 4, 2)
    nodes = np.array(list(itertools.product(*(range(h) for h in shape))), dtype=np.int64)
    strides = np.array([8, 2, 1], dtype=np.int64)
    order = np.argsort(nodes.sum(axis=1), kind="stable")
    bounds = np.where(rng.random(len(nodes)) < 0.9, -np.inf, 5.0)
    tags = rng.integers(0, 3, size=len(nodes)).astype(np.int8)
    up, twin = np.full(len(nodes), -np.inf), np.full(len(nodes), -np.inf)
    pos = pos_t = 0
    best = np.inf
    while pos < len(order):
        got = OK.pick_nodes(order, pos, 4, bounds, best, tags, up, True, nodes, strides)
        want = OK.pick_nodes_twin(order, pos_t, 4, bounds, best, tags, twin, True, nodes, strides)
        assert np.array_equal(got[0], want[0]) and got[1:] == want[1:] and np.array_equal(up, twin)
        pos, pos_t = got[1], want[1]
        if got[2]:
            break
        vals = rng.random(len(got[0])) * 10
        up[got[0]] = np.maximum(up[got[0]], vals)
        twin[got[0]] = np.maximum(twin[got[0]], vals)
        best = min(best, 6.0)
    assert np.isfinite(up).any()


@pytest.mark.parametrize("objective", ["aecs", "discernibility"])
def test_class_bounds_never_exceed_a_generalizations_score(small_adult, objective):
    """Brute force over every pair of nodes F <= G of the lattice: the bound that F's classes give
    its generalizations (k-anonymity's S*(G), k = 5) is at most G's score, feasible or not."""
    from ppdp.engine.methods.generalization.objectives import _ClassBased
    table, models = small_adult.table, small_adult.models
    problem = Problem(table, models)
    heights = [int(h) for h in problem.heights]
    nodes = np.array(list(itertools.product(*(range(h + 1) for h in heights))), dtype=np.int64)
    retained, _ = problem.evaluate_optimal(nodes)
    obj = _ClassBased(table, objective, None, k=max(int(m.k) for m in models))
    scores = obj.scores(nodes, retained)
    bounds = obj.up_bounds.copy()
    assert np.isfinite(scores).all()
    for f, b in zip(nodes, bounds, strict=True):
        above = np.all(nodes >= f[None, :], axis=1)
        assert np.all(scores[above] >= b), (objective, f)
    # tighter than the bound from the classes alone (k = 1) somewhere
    loose = _ClassBased(table, objective, None, k=1)
    loose.scores(nodes, retained)
    assert np.all(bounds >= loose.up_bounds) and np.any(bounds > loose.up_bounds)


@pytest.mark.parametrize("oracle", [True, False])
@pytest.mark.parametrize("optimizer", ["ga", "id-dga", "haef", "de"])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_evolutionary_optimizers_minimize_each_objective(small_adult, optimizer, objective, oracle):
    """The GA optimizers take the objective as their fitness: the node they return scores what
    ``info`` says, is feasible and is not certified; with the oracle's repair (S := S*(G), so
    that (G, S*(G)) is what a random feasible node is too) no worse than a random feasible node.
    (Without it they search S bit by bit, the papers' way, and may end anywhere feasible.)"""
    from ppdp.engine.methods.generalization.objectives import evolve
    table, models = small_adult.table, small_adult.models
    problem = Problem(table, models)
    result = evolve(problem, objective, optimizer=optimizer, budget=600, seed=1,
                    params={"islands": 1, "oracle": oracle})
    score = scorer(objective, table)
    assert result.feasible and not result.certified and result.not_certified_because
    assert result.info["objective"] == objective
    assert result.info["objective_value"] == pytest.approx(score(result.g, result.retained), abs=1e-9)
    # the node's TD, not the fitness
    assert result.td == pytest.approx(float(problem.evaluate(result.g[None, :], retained=result.retained[None, :]).td[0]))
    if not oracle:
        return
    rng = np.random.default_rng(11)
    heights = np.asarray(problem.heights)
    while True:
        g = rng.integers(0, heights + 1)
        retained, ev = problem.evaluate_optimal(g[None, :])
        if ev.feasible[0]:
            break
    assert result.info["objective_value"] <= score(g, retained[0]) + 1e-9


def test_spec_and_cli_accept_an_objective_for_the_ga(tmp_path):
    from ppdp.engine.methods.generalization.optimizers import objective_search_of, optimizer_names
    from ppdp.errors import SpecError
    takers = {name: objective_search_of(name) for name in optimizer_names()}
    assert {n for n, how in takers.items() if how == "bounds"} == {"lattice", "flash"}
    assert {n for n, how in takers.items() if how is None} == {"descent", "dfs"}  # TD's own bounds only
    db = load_adult(tmp_path / "a.duckdb", rows=200)
    p = write_spec(tmp_path / "ga.toml", db=db, qids=["age", "sex", "race"], optimizer="ga", budget=300)
    p.write_text(p.read_text() + '\n[utility]\nobjective = "discernibility"\n')
    spec = load_spec(p)
    assert spec.objective == "discernibility" and spec.optimizer == "ga"
    out = run_release(spec, progress=False)
    sol = out.run.solution
    assert sol["info"]["objective"] == "discernibility" and not sol["certified"] and sol["not_certified_because"]
    bad = write_spec(tmp_path / "descent.toml", db=db, qids=["age", "sex", "race"], optimizer="descent")
    bad.write_text(bad.read_text() + '\n[utility]\nobjective = "loss"\n')
    before = snapshot(db)
    with pytest.raises(SpecError, match="evolutionary"):  # refused before anything is written
        run_release(load_spec(bad), progress=False)
    assert snapshot(db) == before
    # the CLI: the same spec under another name runs (exit 0), the refused one is a spec error
    from ppdp.engine.app import cli
    p2 = tmp_path / "ga2.toml"
    p2.write_text(p.read_text().replace('name = "adult"', 'name = "adult_ga_dm"'))
    assert cli.main(["run", str(p2), "--no-progress"]) == 0
    assert cli.main(["run", str(bad), "--no-progress"]) == 2  # SPEC_ERROR, nothing written


@pytest.mark.parametrize("kind", [0, 1, 2, 3])
def test_k_anonymous_terms_kernel_equals_its_twin(kind):
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    G, _ok, codes, gen, n_gen, counts, _retained = _random_classes_case(9)
    n = float(counts.sum())
    shares = np.random.default_rng(2).random((3, 3, codes.shape[0]))
    no_memo = np.full(len(G), -1, dtype=np.int64)
    got = OK.k_anonymous_terms(kind, G, codes, gen, n_gen, counts, np.zeros((1, 1), dtype=np.int32), no_memo, 5, n,
                               shares)
    want = OK.k_anonymous_terms_twin(kind, G, codes, gen, n_gen, counts, 5, n, shares)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)
    assert (got[0] > 0).any() and (got[0] < n).any()  # some nodes suppress records, some keep some


def test_upward_closure_kernel_equals_its_twin():
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    rng = np.random.default_rng(8)
    shape = (3, 4, 2, 3)
    nodes = np.array(list(itertools.product(*(range(h) for h in shape))), dtype=np.int64)
    strides = np.array([24, 6, 3, 1], dtype=np.int64)
    seed = rng.random(len(nodes)) < 0.05
    got = OK.upward_closure(seed, nodes, strides)
    assert np.array_equal(got, OK.upward_closure_twin(seed, nodes)) and got.sum() > seed.sum()


def test_order_prefix_is_the_start_of_the_stable_order():
    from ppdp.engine.methods.generalization.objectives import _order_prefix
    rng = np.random.default_rng(4)
    for bounds in (rng.integers(0, 5, size=500).astype(np.float64), rng.random(300), np.zeros(100), np.arange(10.0)):
        prefix, rest = _order_prefix(bounds, 16)
        full = np.argsort(bounds, kind="stable")
        assert np.array_equal(prefix, full[: len(prefix)]) and len(prefix) >= min(16, len(bounds))
        assert rest == (len(prefix) < len(bounds))


@pytest.mark.parametrize("objective", ["nu-entropy", "precision", "height"])
def test_lattice_bounds_are_the_bounds_of_every_node(small_adult, objective):
    """The level-only objectives' bounds of the whole lattice, laid out by broadcasting, are
    their per-node bounds of np.indices' nodes bit for bit (the search's order, ties included)."""
    from ppdp.engine.methods.generalization.objectives import _objective

    table = small_adult.table
    obj = _objective(objective, table)
    shape = tuple(int(h) + 1 for h in table.heights)
    nodes = np.indices(shape, dtype=np.int64).reshape(len(shape), -1).T.copy()
    assert obj.lattice_bounds(shape).tobytes() == obj.bounds(nodes).tobytes()


def _nu_entropy_per_level(table) -> list[list[float]]:
    """ARX's non-uniform entropy terms one level at a time (the loop ``_nu_entropy`` replaces)."""
    import math

    counts = table.counts.astype(np.int64)
    out = []
    for q, h in enumerate(table.hierarchies):
        a = np.bincount(table.codes[:, q], weights=counts, minlength=len(h.rows)).astype(np.float64)
        leaves = np.flatnonzero(a > 0)
        terms = []
        for lv in range(h.height + 1):
            gen = h.level_codes[lv]
            b = np.bincount(gen, weights=a, minlength=int(gen.max()) + 1)
            v = float(np.sum(a[leaves] * np.log2(a[leaves] / b[gen[leaves]])))
            terms.append(math.floor((-v if v != 0.0 else 0.0) * 1e10) / 1e10)
        out.append(terms)
    return out


def test_nu_entropy_terms_equal_the_per_level_loop(small_adult, tmp_path):
    """Every level's term at once (one bincount per QID) is the per-level loop's term bit for bit,
    on the 500-record sample and on the whole of adult (where summing along a non-contiguous
    axis once changed the last bits of 7 terms)."""
    from ppdp.engine.methods.generalization.objectives import _nu_entropy

    db = load_adult(tmp_path / "full.duckdb")
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db))
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        full = prepare(spec, con, None).table
    finally:
        con.close()
    for table in (small_adult.table, full):
        got = _nu_entropy(table).table
        for q, terms in enumerate(_nu_entropy_per_level(table)):
            column = got[:, q]
            assert column[: len(terms)].tobytes() == np.array(terms).tobytes()
            assert (column[len(terms):] == terms[-1]).all()  # padded with the top level's term


@pytest.mark.parametrize("models", [[("k-anonymity", {"k": 5})], [("k-anonymity", {"k": 2}),
                                                                   ("distinct-l-diversity", {"l": 2})]])
@pytest.mark.parametrize("limit", [0.0, 0.01, 0.05, 1.0])
@pytest.mark.parametrize("objective", ["nu-entropy", "precision", "height"])
def test_bottom_node_first_is_the_scan_unchanged(small_adult, objective, limit, models, monkeypatch):
    """A level-only objective scores the bottom node before laying out the lattice: the result
    (node, kept records, TD, AD, evaluations, history, info, certification) is the lattice scan's
    alone, which scores that node first, field for field, with the bottom node feasible or not."""
    from ppdp.engine.methods.generalization import objectives
    from ppdp.engine.privacy import build_model
    from ppdp.engine.privacy.base import ModelContext

    table = small_adult.table
    context = ModelContext(table.sensitive, table.sa_values, ".", None, int(table.n_records))
    built = [build_model(n, p).bind(context) for n, p in models]
    runs = {}
    for first in (True, False):
        monkeypatch.setattr(objectives, "BOTTOM_FIRST", first)
        problem = Problem(table, built)
        r = search(problem, objective, budget=10**6, optimizer="lattice", params={"suppression_limit": limit})
        runs[first] = (r, problem.evaluations)
    (a, ea), (b, eb) = runs[True], runs[False]
    assert ea == eb and a.evaluations == b.evaluations and a.certified == b.certified and a.feasible == b.feasible
    assert np.array_equal(a.g, b.g) and np.array_equal(a.retained, b.retained) and np.array_equal(a.ad, b.ad)
    assert a.td == b.td and a.suppressed == b.suppressed and a.info == b.info
    assert np.array_equal(a.history, b.history, equal_nan=True)


def test_loss_shares_are_each_rows_domain_share_bit_for_bit(small_adult):
    """Loss's shares gathered from each hierarchy's (levels, leaves) domain shares are each row's
    generalized value's leaves / the hierarchy's leaves, level by level, bit for bit."""
    from ppdp.engine.methods.generalization.objectives import _shares

    table = small_adult.table
    for q, (got, h) in enumerate(zip(_shares(table), table.hierarchies, strict=True)):
        codes = table.codes[:, q]
        want = np.stack([h.leaf_counts[lv][h.level_codes[lv][codes]] / float(len(h.rows)) for lv in range(h.height + 1)])
        assert got.tobytes() == want.tobytes()
        assert not h.domain_share_matrix.flags.writeable


@pytest.mark.parametrize("k", [2, 5])
@pytest.mark.parametrize("limit", [0.01, 0.05, 0.2])
@pytest.mark.parametrize("objective", ["loss", "nu-entropy", "precision", "height", "aecs", "discernibility"])
def test_probe_first_chooses_what_scoring_first_chose(small_adult, objective, limit, k, monkeypatch):
    """k-anonymity alone within a limit: settling a node's state by a probe before scoring it
    (PROBE_FIRST) chooses what scoring every picked node first did, field for field (node, kept
    records, TD, AD, certification, the objective's value). The evaluations differ: fewer on
    adult's full lattice, a few more on some of these small ones (46 against 49)."""
    from ppdp.engine.methods.generalization import objectives
    from ppdp.engine.privacy import build_model
    from ppdp.engine.privacy.base import ModelContext

    table = small_adult.table
    context = ModelContext(table.sensitive, table.sa_values, ".", None, int(table.n_records))
    monkeypatch.setattr(objectives, "PROBE_FIRST_ROWS", 0)  # this small table too
    runs = {}
    for first in (True, False):
        monkeypatch.setattr(objectives, "PROBE_FIRST", first)
        problem = Problem(table, [build_model("k-anonymity", {"k": k}).bind(context)])
        runs[first] = search(problem, objective, budget=10**6, optimizer="flash", params={"suppression_limit": limit})
    a, b = runs[True], runs[False]
    assert a.certified and b.certified and a.feasible == b.feasible
    assert np.array_equal(a.g, b.g) and np.array_equal(a.retained, b.retained) and np.array_equal(a.ad, b.ad)
    assert a.td == b.td and a.suppressed == b.suppressed
    assert a.info["objective_value"] == b.info["objective_value"]
    assert a.info["mode"] == b.info["mode"] and a.not_certified_because == b.not_certified_because


@pytest.mark.parametrize("objective", ["aecs", "height"])
def test_probes_that_use_the_budget_up_leave_the_search_uncertified(small_adult, objective, monkeypatch):
    """Every budget below what the whole search evaluates: probes may use it up before the picked
    nodes are scored, and the search is then not certified (and says why), whatever it found."""
    from ppdp.engine.methods.generalization import objectives
    from ppdp.engine.privacy import build_model
    from ppdp.engine.privacy.base import ModelContext

    monkeypatch.setattr(objectives, "PROBE_FIRST_ROWS", 0)  # this small table too
    table = small_adult.table
    context = ModelContext(table.sensitive, table.sa_values, ".", None, int(table.n_records))

    def run(budget: int):
        problem = Problem(table, [build_model("k-anonymity", {"k": 5}).bind(context)])
        return search(problem, objective, budget=budget, optimizer="flash", params={"suppression_limit": 0.05})

    full = run(10**6)
    assert full.certified and full.info["nodes_evaluated"] > 16
    for budget in range(1, full.info["nodes_evaluated"]):
        r = run(budget)
        assert not r.certified and r.not_certified_because, budget
