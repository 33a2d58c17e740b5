"""The sensitive-distribution models: EMD t-closeness (equal, ordered, hierarchical),
recursive (c, l)-diversity and beta-likeness.

Each kernel equals its plain-Python twin on random releases; hand-worked values from the papers'
definitions (Li et al. 2007's ordered example, a transport worked by hand); the hierarchical EMD
equals the tree-metric form of the Wasserstein distance (a different formula: edge lengths times
the net mass below each edge); a union of feasible classes stays feasible (union_closed);
``impossible_reason`` is exact against brute force over every sub-multiset of tiny tables; no
model claims an exact oracle, so a search under one is never certified; parameters are refused
at spec read in one line; the SQL checks (sql/distributions.py) agree with the kernels on DuckDB,
for a version and for history classes.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import duckdb
import numpy as np
import pytest

from ppdp.engine.privacy import ModelContext, PrivacyModel, build_model, plan_oracle
from ppdp.engine.privacy import distributions as D
from ppdp.errors import HierarchyError, SpecError
from ppdp.sql import distributions as DS
from ppdp.sql import history as H
from ppdp.sql.dialect import DUCKDB
from tests.support.class_stats import class_stats as _stats

VARIANTS = [
    ("t-closeness", {"t": 0.3, "distance": "equal"}),
    ("t-closeness", {"t": 0.3, "distance": "ordered"}),
    ("t-closeness", {"t": 0.3, "distance": "hierarchical"}),
    ("recursive-cl-diversity", {"c": 2.0, "l": 2}),
    ("recursive-cl-diversity", {"c": 1.5, "l": 3}),
    ("beta-likeness", {"beta": 1.0, "enhanced": False}),
    ("beta-likeness", {"beta": 1.0, "enhanced": True}),
]
IDS = [f"{n}-{'-'.join(str(v) for v in p.values())}" for n, p in VARIANTS]

# a 3-level hierarchy over six values (two branches of two sub-branches), written as ARX rows
HIER_ROWS = [("a", "ab", "L", "*"), ("b", "ab", "L", "*"), ("c", "cd", "L", "*"), ("d", "cd", "L", "*"),
             ("e", "ef", "R", "*"), ("f", "ef", "R", "*")]


def _bound(name: str, params: dict, values: list[str], tmp_path) -> PrivacyModel:
    hier = tmp_path / "sa_hierarchy.csv"
    hier.write_text("\n".join(";".join(r) for r in HIER_ROWS) + "\n")
    model = build_model(name, dict(params))
    return model.bind(ModelContext(("sa",), tuple((v,) for v in values), str(tmp_path), str(hier)))




def _random_release(rng: np.random.Generator, n_sa: int) -> dict[int, dict[int, int]]:
    return {c: {int(v): int(rng.integers(1, 6)) for v in rng.choice(n_sa, size=int(rng.integers(1, n_sa + 1)), replace=False)}
            for c in range(int(rng.integers(1, 7)))}


def _random_values(rng: np.random.Generator) -> list[str]:
    """A random subset (in random code order) of the hierarchy's leaves."""
    n = int(rng.integers(2, 7))
    return [str(v) for v in rng.permutation(["a", "b", "c", "d", "e", "f"])[:n]]


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_the_kernel_equals_the_plain_twin(name, params, tmp_path) -> None:
    rng = np.random.default_rng(list(repr((name, params)).encode()))
    for _ in range(150):
        values = _random_values(rng)
        model = _bound(name, params, values, tmp_path)
        q = rng.random(len(values)) + 0.05
        q /= q.sum()
        classes = _random_release(rng, len(values))
        stats = _stats(classes, q)
        assert model.ad(stats) == pytest.approx(model.reference_ad(classes, q.tolist()), rel=1e-12, abs=1e-12)
        one_by_one = [model.reference_ad({c: classes[c]}, q.tolist()) for c in range(len(classes))]
        assert np.allclose(model.class_ad(stats), one_by_one, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_a_union_of_feasible_classes_is_feasible(name, params, tmp_path) -> None:
    model = _bound(name, params, ["a", "b", "c", "d"], tmp_path)
    assert model.union_closed
    rng = np.random.default_rng([3, *repr((name, params)).encode()])
    checked = 0
    for _ in range(4000):
        q = rng.random(4) + 0.05
        q /= q.sum()
        classes = _random_release(rng, 4)
        feasible = [c for c in classes if model.feasible(model.reference_ad({c: classes[c]}, q.tolist()))]
        if len(feasible) < 2:
            continue
        union: Counter = Counter()
        for c in feasible:
            union.update(classes[c])
        assert model.feasible(model.reference_ad({0: dict(union)}, q.tolist())), (classes, feasible, q)
        checked += 1
    assert checked >= 30, f"only {checked} unions of feasible classes drawn"


def test_ordered_emd_of_li_et_al_example(tmp_path) -> None:
    """Li et al. 2007, §4.2: salaries 3k..11k uniform in the table; the class {3k, 4k, 5k} is at
    ordered distance 0.375 and {6k, 8k, 11k} at 0.167 (numeric values ordered by value, not text:
    "11k" would sort before "3k" as text, so the values here are numbers)."""
    values = [str(v) for v in (11, 3, 4, 5, 6, 7, 8, 9, 10)]  # codes in a scrambled order
    model = _bound("t-closeness", {"t": 0.2, "distance": "ordered"}, values, tmp_path)
    q = [1 / 9] * 9
    code = {v: i for i, v in enumerate(values)}
    low = {code["3"]: 1, code["4"]: 1, code["5"]: 1}
    spread = {code["6"]: 1, code["8"]: 1, code["11"]: 1}
    assert model.reference_ad({0: low}, q) == pytest.approx(0.375)
    assert model.reference_ad({0: spread}, q) == pytest.approx(1 / 6)
    assert model.ad(_stats({0: low, 1: spread}, np.array(q))) == pytest.approx(0.375)


def test_hierarchical_emd_by_hand_and_as_a_tree_metric(tmp_path) -> None:
    """All mass on leaf a against Q uniform over a..d (hierarchy a,b < ab < L; c,d < cd < L; H = 3):
    a quarter moves to b (LCA level 1: 1/3), a half to c, d (LCA level 2: 2/3): 1/12 + 1/3."""
    values = ["a", "b", "c", "d"]
    model = _bound("t-closeness", {"t": 0.2, "distance": "hierarchical"}, values, tmp_path)
    assert model.reference_ad({0: {0: 4}}, [0.25] * 4) == pytest.approx(1 / 12 + 1 / 3)
    # Wasserstein-1 under a tree metric is sum over edges of length * |net mass below|; the
    # ground distance level(LCA) / H is a tree with every edge 1 / (2H) long.
    rng = np.random.default_rng(5)
    node = [[leaf_level[j] for leaf_level in [r for r in HIER_ROWS if r[0] in values]] for j in range(4)]
    for _ in range(200):
        q = rng.random(4) + 0.01
        q /= q.sum()
        counts = {v: int(rng.integers(0, 5)) for v in range(4)}
        if not sum(counts.values()):
            continue
        n = sum(counts.values())
        extra = [counts[v] / n - q[v] for v in range(4)]
        w1 = sum(abs(sum(extra[v] for v in range(4) if node[j][v] == label)) for j in range(3) for label in set(node[j]))
        assert model.reference_ad({0: counts}, q.tolist()) == pytest.approx(w1 / 6, abs=1e-12)


def test_equal_emd_recursive_and_likeness_by_hand(tmp_path) -> None:
    eq = _bound("t-closeness", {"t": 0.2, "distance": "equal"}, ["x", "y", "z"], tmp_path)
    assert eq.reference_ad({0: {0: 1}}, [0.5, 0.25, 0.25]) == pytest.approx(0.5)
    rcl = build_model("recursive-cl-diversity", {"c": 3.0, "l": 2})
    assert not rcl.feasible(rcl.reference_ad({0: {0: 98, 1: 1, 2: 1}}, []))  # 98 >= 3 * 2
    assert rcl.feasible(rcl.reference_ad({0: {0: 3, 1: 2, 2: 2}}, []))  # 3 < 3 * 4
    assert not rcl.feasible(rcl.reference_ad({0: {0: 6, 1: 2}}, []))  # 6 < 3 * 2 is false: strict
    assert not rcl.feasible(rcl.reference_ad({0: {0: 5}}, []))  # fewer than l values
    basic = build_model("beta-likeness", {"beta": 1.0})
    enhanced = build_model("beta-likeness", {"beta": 1.0, "enhanced": True})
    # q = 1/2, p = 1: gain (1 - 1/2) / (1/2) = 1 <= beta = 1, but > -ln(1/2) = 0.693
    assert basic.feasible(basic.reference_ad({0: {0: 2}}, [0.5, 0.5]))
    assert not enhanced.feasible(enhanced.reference_ad({0: {0: 2}}, [0.5, 0.5]))
    assert not build_model("beta-likeness", {"beta": 0.99}).feasible(basic.reference_ad({0: {0: 2}}, [0.5, 0.5]) + 0.01)


def _feasible_subset_exists(model: PrivacyModel, counts: list[int]) -> bool:
    """Brute force: some non-empty sub-multiset of the table's records is a feasible class."""
    q = [c / sum(counts) for c in counts]
    for take in itertools.product(*[range(c + 1) for c in counts]):
        if sum(take) and model.feasible(model.reference_ad({0: {v: n for v, n in enumerate(take) if n}}, q)):
            return True
    return False


class _Table:
    """The two fields impossible_reason reads (distinct_sensitive_values)."""

    def __init__(self, counts: list[int]) -> None:
        self.sa = np.arange(len(counts), dtype=np.int64)
        self.counts = np.array(counts, dtype=np.int64)
        self.n_sa = len(counts)
        self.n_records = int(sum(counts))


@pytest.mark.parametrize(("name", "params"), [
    ("recursive-cl-diversity", {"c": c, "l": l_min}) for c in (0.3, 0.5, 0.6, 1.0, 1.2, 2.0) for l_min in (1, 2, 3, 4)
] + [("beta-likeness", {"beta": b, "enhanced": e}) for b in (0.1, 2.0) for e in (False, True)]
  + [("t-closeness", {"t": t, "distance": "equal"}) for t in (0.01, 0.5)])
def test_impossible_reason_is_exact_against_brute_force(name, params) -> None:
    model = build_model(name, params)
    for counts in ([3], [1, 1], [2, 1], [1, 1, 1], [3, 1, 1], [2, 2, 1, 1], [4, 1]):
        possible = model.impossible_reason(_Table(counts)) is None  # type: ignore[arg-type]
        assert possible == _feasible_subset_exists(model, counts), (params, counts)


NO_ORACLE = [(n, p) for n, p in VARIANTS if p.get("distance") not in ("equal", "ordered")]  # test_emd_oracle.py


@pytest.mark.parametrize(("name", "params"), NO_ORACLE, ids=[f"{n}-{'-'.join(str(v) for v in p.values())}" for n, p in NO_ORACLE])
def test_no_exact_oracle_so_nothing_is_certified(name, params, tmp_path) -> None:
    model = _bound(name, params, ["a", "b"], tmp_path)
    assert model.oracle() is None
    plan = plan_oracle([build_model("k-anonymity", {"k": 2}), model])
    assert not plan.exact and any(name in r for r in plan.reasons)
    assert model.has_version_check and model.has_history_check


@pytest.mark.parametrize(("name", "params", "fragment"), [
    ("t-closeness", {"t": 0.2, "distance": "emd"}, "distance"),
    ("t-closeness", {"t": 0.0, "distance": "equal"}, "t in (0, 1]"),
    ("t-closeness", {"t": 0.2, "distance": "equal", "hierarchy": "h.csv"}, "hierarchical"),
    ("t-closeness", {"t": 0.2, "distance": "hierarchical", "hierarchy": 3}, "file path"),
    ("recursive-cl-diversity", {"c": 0, "l": 2}, "c > 0"),
    ("recursive-cl-diversity", {"c": 3, "l": 1.5}, "integer l"),
    ("recursive-cl-diversity", {"c": 3}, "integer l"),
    ("recursive-cl-diversity", {"c": 3, "l": 2, "k": 1}, "only"),
    ("beta-likeness", {"beta": -1}, "beta > 0"),
    ("beta-likeness", {"beta": float("inf")}, "beta > 0"),
    ("beta-likeness", {"beta": 1, "enhanced": "yes"}, "true or false"),
])
def test_bad_parameters_are_one_line_spec_errors(name, params, fragment) -> None:
    with pytest.raises(SpecError) as err:
        build_model(name, params)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_hierarchical_needs_a_hierarchy_that_covers_the_values(tmp_path) -> None:
    model = build_model("t-closeness", {"t": 0.2, "distance": "hierarchical"})
    with pytest.raises(SpecError, match="needs a hierarchy"):
        model.bind(ModelContext(("sa",), (("a",),), str(tmp_path), None))
    with pytest.raises(HierarchyError, match="lacks 1 of its values"):
        _bound("t-closeness", {"t": 0.2, "distance": "hierarchical"}, ["a", "zz"], tmp_path)


def test_ordered_sort_key_numbers_by_value_text_by_code_point_null_last() -> None:
    assert D.sort_key([("10",), ("9",), (None,), ("-1.5",)]) == [3, 1, 0, 2]
    assert D.sort_key([("b",), ("B",), ("a",), ("10",)]) == [3, 1, 2, 0]


# --- the SQL checks against the kernels (DuckDB) --------------------------------------------------


def _sql_world(rng: np.random.Generator, values: list[str]):
    """A random published table t(g1, g2, sa) and Q (sa_key, q) in DuckDB, with the class stats."""
    con = duckdb.connect()
    rows = [(str(rng.integers(0, 3)), str(rng.integers(0, 2)), values[int(rng.integers(0, len(values)))])
            for _ in range(int(rng.integers(5, 60)))]
    con.execute("CREATE TABLE t (g1 VARCHAR, g2 VARCHAR, sa VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    q = rng.random(len(values)) + 0.05
    q /= q.sum()
    con.execute("CREATE TABLE qv (sa VARCHAR, q DOUBLE)")
    con.executemany("INSERT INTO qv VALUES (?, ?)", [(v, float(x)) for v, x in zip(values, q, strict=True)])
    con.execute(f"CREATE TABLE qd AS SELECT {H.sa_key(['sa'], 'qv', DUCKDB)} AS sa_key, qv.q FROM qv")
    classes: dict[tuple, Counter] = {}
    for g1, g2, sa in rows:
        classes.setdefault((g1, g2), Counter())[values.index(sa)] += 1
    keyed = {i: dict(c) for i, c in enumerate(classes.values())}
    return con, keyed, q, list(classes)


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=IDS)
def test_the_version_and_history_sql_agree_with_the_kernel(name, params, tmp_path) -> None:
    rng = np.random.default_rng([11, *repr((name, params)).encode()])
    for _ in range(8):
        values = _random_values(rng)
        model = _bound(name, params, values, tmp_path)
        con, classes, q, names = _sql_world(rng, values)
        stats = _stats(classes, q)
        row = con.execute(model.version_sql("t", ["g1", "g2"], ["sa"], "qd", DUCKDB)).fetchone()
        per = model.class_ad(stats)
        assert row[1] == len(classes)
        expected = float(per.max())
        if math.isinf(expected):
            assert row[0] >= DS.NOT_DIVERSE
        else:
            assert row[0] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            assert model.feasible(row[0]) == model.feasible(expected)
        # history classes: one "version" whose classes are these, keyed by sig_now
        con.execute("CREATE TABLE cv AS SELECT g1 || '/' || g2 AS sig_now, "
                    f"{H.sa_key(['sa'], 't', DUCKDB)} AS s, COUNT(*) AS n FROM t GROUP BY 1, 2")
        (failing,) = model.history_failures("unused", lambda v: "SELECT * FROM cv", lambda v: "qd", [1], d=DUCKDB)
        got = {r[0] for r in con.execute(failing).fetchall()}
        bad = {f"{g1}/{g2}" for (g1, g2), ad in zip(names, per, strict=True) if not model.feasible(float(ad))}
        assert got == bad
        con.close()
