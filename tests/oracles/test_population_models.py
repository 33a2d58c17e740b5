"""delta-presence and k-map: spec validation, k-map's derived k', the population
count kernel against a plain-Python twin, and every node's verdict on small random tables
against the definitions computed from the raw records (brute force over the lattice)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core import hierarchy as hier
from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram, encode_population
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ModelContext, build_model
from ppdp.engine.privacy.k_map import derived_k
from ppdp.errors import SpecError
from ppdp.sql.dialect import DUCKDB
from ppdp.sql.predicate import check_columns, parse_predicate

# -- spec validation --------------------------------------------------------------------------

@pytest.mark.parametrize("params, fragment", [
    ({"dmin": 0.1, "dmax": 0.5}, "research"),
    ({"dmin": 0.6, "dmax": 0.5, "research": "age > 3"}, "dmin <= dmax"),
    ({"dmin": -0.1, "dmax": 0.5, "research": "age > 3"}, "dmin in [0, 1]"),
    ({"dmin": 0.0, "dmax": 1.5, "research": "age > 3"}, "dmax in [0, 1]"),
    ({"dmin": 0.0, "dmax": 0.0, "research": "age > 3"}, "dmax > 0"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "age"}, "condition"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "age > 3; DROP TABLE adult"}, "exactly one"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "id IN (SELECT id FROM adult)"}, "no subqueries"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "pg_sleep(10) IS NULL"}, "no subqueries"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "x.age > 3"}, "with a table"),
    ({"dmin": 0.0, "dmax": 0.5, "research": "age > 3", "k": 2}, "takes"),
])
def test_delta_presence_refuses_bad_parameters_in_one_line(params, fragment):
    with pytest.raises(SpecError) as exc:
        build_model("delta-presence", params)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_a_research_predicate_may_only_read_source_columns():
    tree = parse_predicate("age > 30 AND \"salary-class\" = '>50K'", "research", DUCKDB)
    check_columns(tree, "research", ["age", "salary-class"])
    with pytest.raises(SpecError, match="'secret'"):
        check_columns(parse_predicate("secret = 1", "research", DUCKDB), "research", ["age"])


@pytest.mark.parametrize("params, fragment", [
    ({"k": 5}, "exactly one of"),
    ({"k": 5, "population": "a.b", "estimator": "poisson"}, "exactly one of"),
    ({"k": 0, "population": "a.b"}, "k >= 1"),
    ({"k": 5, "population": "a.b.c"}, "schema.table"),
    ({"k": 5, "population": "a.b", "significance": 0.1}, "takes no"),
    ({"k": 5, "estimator": "binomial", "population_size": 10, "significance": 0.1}, "estimator must be"),
    ({"k": 5, "estimator": "poisson", "significance": 0.1}, "population_size"),
    ({"k": 5, "estimator": "poisson", "population_size": 100, "significance": 1.5}, "significance in [0, 1]"),
    ({"k": 5, "estimator": "poisson", "population_size": 100}, "significance"),
])
def test_k_map_refuses_bad_parameters_in_one_line(params, fragment):
    with pytest.raises(SpecError) as exc:
        build_model("k-map", params)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


# -- k' of the estimators ---------------------------------------------------------------------

def _cdf(c: int, lam: float) -> float:
    return math.fsum(math.exp(-lam) * lam ** i / math.factorial(i) for i in range(c + 1))


def _derived_k_from_definition(k: int, estimator: str, big_n: int, alpha: float, n: int) -> int:
    """ARX's KMap.initialize read as a formula: the first count c whose cumulative probability
    reaches 1 - alpha (searched no further than k - 1), plus ARX's offsets (+2 for Poisson, whose
    loop starts at 0 and returns counter + 1; +1 for the zero-truncated one, whose loop starts at
    1), capped at n and at k. A threshold of 0 never enters the loop (k' = 1)."""
    lam = n / big_n * k
    thr = 1 - alpha
    if thr <= 0:
        return min(k, n, 1)
    if estimator == "poisson":
        c = next(c for c in itertools.count() if _cdf(c, lam) >= thr or c + 1 >= k)
        return min(k, n, c + 2)
    p0 = math.exp(-lam)
    c = next(c for c in itertools.count(1) if (_cdf(c, lam) - p0) / (1 - p0) >= thr or c + 1 >= k)
    return min(k, n, c + 1)


def test_derived_k_follows_arx_initialize():
    rng = np.random.default_rng(25)
    for _ in range(400):
        k = int(rng.integers(1, 40))
        n = int(rng.integers(1, 50_000))
        big_n = n + int(rng.integers(0, 2_000_000))
        # (significance 0 asks for a probability of exactly 1.0, decided by rounding alone)
        alpha = float(rng.choice([0.001, 0.01, 0.05, 0.2, 0.5, 1.0]))
        for est in ("poisson", "zero-truncated-poisson"):
            assert derived_k(k, est, big_n, alpha, n) == _derived_k_from_definition(k, est, big_n, alpha, n), (k, est, big_n, alpha, n)


def test_an_estimated_k_map_is_bound_to_its_source_before_use():
    m = build_model("k-map", {"k": 10, "estimator": "poisson", "population_size": 300_000, "significance": 0.01})
    with pytest.raises(RuntimeError):
        m.feasible(3.0)
    bound = m.bind(ModelContext((), (), source_rows=30_162))
    assert bound.feasible(float(bound.min_class_size())) and not bound.feasible(float(bound.min_class_size() - 1))
    assert bound.oracle().k == bound.min_class_size() <= 10


# -- random small tables: the kernel, the twin, brute force ------------------------------------

def _table(rng: np.random.Generator, n_qids: int, n_rows: int, research_share: float):
    """Records with leaf values 0..5 per QID, hierarchies of 3 levels (leaf, pair, *), a random
    research flag; the table is the research part, the population every record."""
    hs = [hier.from_rows(f"q{q}", [[str(v), f"p{v // 2}", "*"] for v in range(6)]) for q in range(n_qids)]
    records = rng.integers(0, 6, size=(n_rows, n_qids))
    research = rng.random(n_rows) < research_share
    if not research.any():
        research[0] = True
    def hist(rows: np.ndarray) -> pl.DataFrame:
        c = Counter(map(tuple, rows.tolist()))
        frame = {f"q{q}": [str(k[q]) for k in c] for q in range(n_qids)}
        frame[COUNT_COLUMN] = list(c.values())
        return pl.DataFrame(frame)
    qids = [f"q{q}" for q in range(n_qids)]
    table = encode_histogram(hist(records[research]), qids, [], hs)
    from dataclasses import replace
    table = replace(table, population=encode_population(hist(records), table, "test"))
    return table, records, research, hs


def _generalize(records: np.ndarray, g, hs) -> list[tuple]:
    return [tuple(hs[q].rows[hs[q].leaf_code[str(v)]][g[q]] for q, v in enumerate(r)) for r in records.tolist()]


def _population_twin(g, records, research, kept, hs) -> tuple[dict[tuple, int], dict[tuple, int]]:
    """(released records per class, persons per class) straight from the records."""
    classes = _generalize(records, g, hs)
    released = Counter(c for c, r, k in zip(classes, research, kept, strict=True) if r and k)
    return dict(released), dict(Counter(classes))


def test_class_population_equals_the_plain_twin():
    rng = np.random.default_rng(7)
    for _ in range(40):
        table, records, research, hs = _table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 60)), 0.5)
        problem = Problem(table, [build_model("k-map", {"k": 2, "population": "x"})])
        ev = problem._numba
        for g in itertools.product(*[range(3)] * table.n_qids):
            retained = np.array([int(rng.integers(0, c + 1)) for c in table.counts], dtype=np.int64)
            cls, stats, _ = ev.class_stats(np.array(g), retained)
            # twin: the first retained[h] records of each histogram row are kept
            rows = [tuple(str(v) for v in r) for r in table.values.select(list(table.qids)).iter_rows()]
            row_of = {r: h for h, r in enumerate(rows)}
            seen: Counter = Counter()
            kept = []
            for rec, r in zip(records.tolist(), research, strict=True):
                key = tuple(str(v) for v in rec)
                if not r:
                    kept.append(False)
                    continue
                h = row_of[key]
                kept.append(seen[h] < retained[h])
                seen[h] += 1
            released, persons = _population_twin(g, records, research, kept, hs)
            gen_rows = _generalize(np.array([[int(v) for v in r] for r in rows]), g, hs)
            got = {gen_rows[h]: int(stats.population[cls[h]]) for h in range(table.n_rows) if retained[h] > 0}
            assert got == {c: persons[c] for c in released}
            assert sorted(stats.size.tolist()) == sorted(released.values())
            assert stats.unmatched_population == sum(1 for c in persons if c not in released)


def _verdict_delta(g, records, research, hs, dmin, dmax) -> bool:
    released, persons = _population_twin(g, records, research, [True] * len(research), hs)
    return all(dmin <= released.get(c, 0) / persons[c] <= dmax for c in persons)


def _verdict_k_map(g, records, research, hs, k) -> bool:
    released, persons = _population_twin(g, records, research, [True] * len(research), hs)
    return all(persons[c] >= k for c in released)


def test_every_node_verdict_equals_the_definition_on_random_tables():
    rng = np.random.default_rng(11)
    checked = Counter()
    for _ in range(30):
        table, records, research, hs = _table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 80)), float(rng.random()))
        dmin = float(rng.choice([0.0, 0.1, 0.3]))
        dmax = float(rng.choice([0.4, 0.7, 1.0]))
        k = int(rng.integers(1, 12))
        dp = build_model("delta-presence", {"dmin": dmin, "dmax": dmax, "research": "q0 IS NOT NULL"})
        km = build_model("k-map", {"k": k, "population": "p.t"})
        nodes = np.array(list(itertools.product(*[range(3)] * table.n_qids)), dtype=np.int64)
        for model in (dp, km):
            ev = Problem(table, [model]).evaluate_unsuppressed(nodes)
            for g, ok in zip(nodes.tolist(), ev.feasible.tolist(), strict=True):
                twin = (_verdict_delta(g, records, research, hs, dmin, dmax) if model is dp
                        else _verdict_k_map(g, records, research, hs, k))
                assert ok == twin, (model, g)
                checked[ok] += 1
    assert checked[True] > 50 and checked[False] > 50


def test_delta_presence_impossible_reason_is_exact_at_the_root():
    rng = np.random.default_rng(3)
    table, records, research, hs = _table(rng, 2, 40, 0.25)
    n, big_n = int(research.sum()), len(research)
    ok = build_model("delta-presence", {"dmin": 0.0, "dmax": 1.0, "research": "q0 = 1"})
    assert ok.impossible_reason(table) is None
    # no r in 1..n has r / N >= dmin when dmin > n / N
    too_high = build_model("delta-presence", {"dmin": min(1.0, (n + 1) / big_n), "dmax": 1.0, "research": "q0 = 1"})
    assert too_high.impossible_reason(table) is not None
    # r / N <= dmax fails for r = 1 when dmax < 1 / N
    too_low = build_model("delta-presence", {"dmin": 0.0, "dmax": 0.5 / big_n, "research": "q0 = 1"})
    assert too_low.impossible_reason(table) is not None


def test_the_duckdb_evaluator_agrees_exactly_with_numba():
    """The same AD, feasibility and suppressed counts from the DuckDB GROUP BY as from the
    in-memory kernels, with random suppression (delta-presence's unmatched population classes
    and k-map's classes without persons included)."""
    rng = np.random.default_rng(5)
    for _ in range(12):
        table, records, research, hs = _table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 70)), float(rng.random()))
        models = [build_model("delta-presence", {"dmin": float(rng.choice([0.0, 0.2])), "dmax": float(rng.choice([0.5, 1.0])),
                                                  "research": "q0 = 1"}),
                  build_model("k-map", {"k": int(rng.integers(1, 10)), "population": "p.t"})]
        for model in models:
            numba, duck = Problem(table, [model]), Problem(table, [model], backend="duckdb")
            G = np.array(list(itertools.product(*[range(3)] * table.n_qids)), dtype=np.int64)
            retained = np.stack([np.array([int(rng.integers(0, c + 1)) for c in table.counts]) for _ in range(len(G))])
            retained[0] = 0  # the empty release
            a, b = numba.evaluate(G, retained=retained), duck.evaluate(G, retained=retained)
            assert np.array_equal(a.ad, b.ad), (model, a.ad.ravel(), b.ad.ravel())
            assert np.array_equal(a.feasible, b.feasible) and np.array_equal(a.suppressed, b.suppressed)
            assert np.allclose(a.td, b.td, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(25))
def test_flash_with_k_map_matches_exhaustive(seed):
    """k-map is declared monotone (Flash's predictive tagging): Flash at a zero limit reaches the
    best TD of every node with nothing suppressed, for both forms."""
    from ppdp.engine.methods.generalization.optimizers import run_optimizer
    from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes

    rng = np.random.default_rng([seed, 9])
    table, *_ = _table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 80)), float(rng.random()))
    models = [build_model("k-map", {"k": int(rng.integers(1, 15)), "population": "p.t"}),
              build_model("k-map", {"k": int(rng.integers(2, 15)), "estimator": "poisson", "population_size": 200,
                                    "significance": 0.05}).bind(ModelContext((), (), source_rows=table.n_records))]
    for model in models:
        problem = Problem(table, [model])
        ev = problem.evaluate(all_nodes(problem.heights))
        best = float(np.max(np.where(ev.feasible, ev.td, -1.0)))
        res = run_optimizer("flash", Problem(table, [model]), budget=10**6)
        assert res.info["complete"]
        if best < 0:
            assert not res.feasible
        else:
            assert res.feasible and res.td == pytest.approx(best, abs=1e-9) and res.suppressed == 0


def test_population_count_kernel_equals_its_numpy_twin():
    """evaluator/population.py's kernels and the NumPy twin, on every node of random tables with
    random retention (rows dropped entirely included); the rows' classes derived from the
    combinations' are ``classify``'s ids."""
    from ppdp.engine.kernels import classes as K
    from ppdp.engine.kernels.population import (
        class_population,
        class_population_numpy,
        classes_with_population,
    )
    rng = np.random.default_rng(25)
    compared = 0
    for _ in range(25):
        table, _records, _research, _hs = _table(rng, int(rng.integers(1, 4)), int(rng.integers(5, 60)), float(rng.random()))
        pop = table.population
        gen, _w, n_gen = table.lookup
        for g in itertools.product(*[range(3)] * table.n_qids):
            g_arr = np.array(g, dtype=np.int64)
            retained = np.array([int(rng.integers(0, c + 1)) for c in table.counts], dtype=np.int64)
            cls, m = K.classify(g_arr, table.codes, gen, n_gen, retained > 0)
            args = (g_arr, cls, m, retained, pop.row_combo, pop.combo_codes, pop.combo_persons, gen, n_gen)
            fast, fast_unmatched = class_population(*args)
            twin, twin_unmatched = class_population_numpy(*args)
            assert fast.dtype == twin.dtype and np.array_equal(fast, twin) and fast_unmatched == twin_unmatched
            # the rows' classes from the combinations' classification: classify's ids exactly
            one_cls, one_m, one_pop, one_unmatched = classes_with_population(
                g_arr, retained, pop.row_combo, pop.combo_codes, pop.combo_persons, gen, n_gen)
            assert one_m == m and np.array_equal(one_cls, cls) and one_cls.dtype == cls.dtype
            assert np.array_equal(one_pop, twin) and one_unmatched == twin_unmatched
            compared += 1
    assert compared > 100


def test_rolled_up_combination_classes_are_classify_ids():
    """CombinationClasses (roll-up from a remembered node below, else classify) gives classify's
    ids on every node, visited bottom-up (roll-ups) and in random order (both paths), with a
    memo small enough to evict."""
    from ppdp.engine.kernels import classes as K
    from ppdp.engine.kernels.population import CombinationClasses
    rng = np.random.default_rng(26)
    rolled = 0
    for _ in range(15):
        table, _records, _research, _hs = _table(rng, int(rng.integers(2, 5)), int(rng.integers(5, 80)), 0.5)
        pop = table.population
        gen, _w, n_gen = table.lookup
        nodes = [np.array(g, dtype=np.int64) for g in itertools.product(*[range(3)] * table.n_qids)]
        nodes.sort(key=lambda g: int(g.sum()))
        for order in (nodes, [nodes[i] for i in rng.permutation(len(nodes))]):
            memo = CombinationClasses(pop.combo_codes, gen, n_gen)
            memo.max_entries = 7
            for g in order:
                before = len(memo.ids)
                got, m = memo.classify(g)
                want, want_m = K.classify(g, pop.combo_codes, gen, n_gen, np.ones(pop.combo_codes.shape[0], dtype=np.bool_))
                assert m == want_m and np.array_equal(got, want)
                rolled += int(before > 0)
    assert rolled > 100
