"""engine/methods/heterogeneous core: the paper's worked numbers, the typo readings, graph validation, and the
incremental structures against full recomputation and against their plain-Python twin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.engine.core.hierarchy import read_arx_csv
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph, circulant_graph, clique_graph
from ppdp.engine.methods.heterogeneous.incremental import IncrementalState
from ppdp.engine.methods.heterogeneous.metrics import (
    QidTable,
    gcp,
    hierarchy_levels,
    metric_scales,
    ncp_categorical,
    ncp_numeric,
    sil,
    tuple_ncp,
    tuple_ncp_lca,
    tuple_sil_distance,
)
from ppdp.errors import DataError, SpecError
from tests.conftest import ADULT

# --- The paper's running example ---------------------------------------------------------------
# Tables 1-3 are images missing from our text copy; this 9-tuple table is rebuilt from every
# fact the text prints about them (paper tuple q_i is row i-1 here):
#   salary over the whole table spans 15..42; Table 2's class of q1 has salaries 22..42 and ages
#   50, 30, 41 (mean 40.3) and cities {Rome, Paris, Cali} of 7 cities; Table 3's q'1 has
#   salaries 22..34 and 2 cities, ages min 30 / second min 41 / max 50 / second max 41; Table 3's
#   q'2 covers ages summing to 121; q'9 covers q9 and q1, both Rome; q'1 covers q2, the only Paris.
CITIES = ["Rome", "Paris", "Cali", "Oslo", "Nara", "LA", "York"]
AGE = [50, 30, 41, 25, 60, 35, 45, 28, 41]
SALARY = [22, 34, 42, 15, 30, 27, 38, 19, 25]
CITY = ["Rome", "Paris", "Cali", "Oslo", "Nara", "LA", "York", "Oslo", "Rome"]
TABLE2_CLASSES = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]  # homogeneous 3-anonymization (cliques)
TABLE3_COVER = [  # heterogeneous 3-anonymization, row t = originals covered by q'_(t+1)
    [0, 1, 8], [1, 0, 2], [2, 3, 1], [3, 4, 5], [4, 5, 6],
    [5, 6, 7], [6, 7, 2], [7, 3, 8], [8, 0, 4],
]


def _paper_table(*, age=True, salary=True, city=True) -> QidTable:
    numeric = [col for keep, col in ((age, AGE), (salary, SALARY)) if keep]
    codes = [[CITIES.index(c)] for c in CITY] if city else [[] for _ in CITY]
    return QidTable(
        numeric=np.array(numeric, dtype=float).T.reshape(9, len(numeric)),
        categorical=np.array(codes, dtype=np.int64).reshape(9, int(city)),
        n_categories=(len(CITIES),) if city else (),
    )


def test_paper_salary_ncp_074_and_044():
    """Eq. 1: (42-22)/(42-15) = 0.74 in Table 2 and (34-22)/(42-15) = 0.44 in Table 3."""
    salary_only = _paper_table(age=False, city=False)
    table2 = tuple_ncp(salary_only, clique_graph(TABLE2_CLASSES))
    table3 = tuple_ncp(salary_only, KRegularGraph(TABLE3_COVER))
    assert table2[0] == pytest.approx(20 / 27) and round(table2[0], 2) == 0.74
    assert table3[0] == pytest.approx(12 / 27) and round(table3[0], 2) == 0.44
    assert ncp_numeric([22, 34, 42], 15, 42) == pytest.approx(20 / 27)


def test_paper_city_ncp_033_and_the_printed_166_is_one_sixth():
    """Eq. 2: (3-1)/(7-1) = 0.33 in Table 2; Table 3's "1/6 = 1.66" is read as 1/6 = 0.1667
    (an NCP lies in [0, 1]; 1.66 is a slipped decimal point)."""
    city_only = _paper_table(age=False, salary=False)
    table2 = tuple_ncp(city_only, clique_graph(TABLE2_CLASSES))
    table3 = tuple_ncp(city_only, KRegularGraph(TABLE3_COVER))
    assert table2[0] == pytest.approx(2 / 6) and round(table2[0], 2) == 0.33
    assert table3[0] == pytest.approx(1 / 6)
    assert 0 <= table3[0] <= 1 and table3[0] != pytest.approx(1.66, abs=0.01)
    assert ncp_categorical(["Rome", "Paris", "Rome"], 7) == pytest.approx(1 / 6)


def test_paper_section5_structures():
    """§5.1-5.3's printed values: q'1's age min 30 / min2 41 / max 50 / max2 41, Upsilon of q'2's
    ages 121, Rome supported twice in q'9, Paris once in q'1; the Table 2 age mean 40.3."""
    table = _paper_table()
    state = IncrementalState(table, KRegularGraph(TABLE3_COVER))
    age = 0
    assert (state.minimum[0, age], state.second_minimum[0, age]) == (30, 41)
    assert (state.maximum[0, age], state.second_maximum[0, age]) == (50, 41)
    assert state.numeric_sum[1, age] == 121
    rome, paris = CITIES.index("Rome"), CITIES.index("Paris")
    assert state.category_count[8, rome] == 2
    assert state.category_count[0, paris] == 1
    homogeneous = IncrementalState(table, clique_graph(TABLE2_CLASSES))
    assert round(homogeneous.numeric_sum[0, age] / 3, 1) == 40.3


def test_gcp_of_the_worked_example_is_the_mean_ncp():
    """Eq. 3-4 on Table 2, summed by hand from the three classes (ages, salaries, cities)."""
    table = _paper_table()
    # class {q1,q2,q3}: age 30..50, salary 22..42, 3 cities; {q4,q5,q6}: age 25..60,
    # salary 15..30, 3 cities; {q7,q8,q9}: age 28..45, salary 19..38, 3 cities.
    per_class = [
        20 / 35 + 20 / 27 + 2 / 6,
        35 / 35 + 15 / 27 + 2 / 6,
        17 / 35 + 19 / 27 + 2 / 6,
    ]
    expected = 3 * sum(per_class) / (3 * 9)
    assert gcp(table, clique_graph(TABLE2_CLASSES)) == pytest.approx(expected)


def test_sil_categorical_counts_mismatches_eq6_reading():
    """Eq. 6 read as a mismatch (the printed ``==`` would make a kept value cost): four tuples,
    codes 0,0,1,2, k=3 circulant. Only q'_3 (covering codes 2,0,0, own 2) misses its mode; the
    tie in q'_1 (0,1,2, own 0) goes to the own value. sigma = sqrt(1 - p_mode) = sqrt(1/2)."""
    table = QidTable(np.zeros((4, 0)), np.array([[0], [0], [1], [2]]), (3,))
    graph = circulant_graph(4, 3)
    dist = tuple_sil_distance(table, graph)
    assert dist.tolist() == pytest.approx([0, 0, 0, math.sqrt(2)])
    assert sil(table, graph) == pytest.approx(math.sqrt(2) / 4)


def test_sil_numeric_is_scaled_distance_to_the_covered_mean():
    """Eq. 5: values 0, 2, 4 in one clique of 3: mean 2, sigma = sqrt(8/3) (population)."""
    table = QidTable(np.array([[0.0], [2.0], [4.0]]), np.zeros((3, 0), dtype=np.int64), ())
    sigma = math.sqrt(8 / 3)
    assert metric_scales(table).num_sigma[0] == pytest.approx(sigma)
    dist = tuple_sil_distance(table, clique_graph([[0, 1, 2]]))
    assert dist.tolist() == pytest.approx([2 / sigma, 0, 2 / sigma])


# --- Graph validation --------------------------------------------------------------------------


def test_graph_rejects_one_edge_removed():
    original, anonymized = circulant_graph(20, 4).edges()
    KRegularGraph.from_edges(original, anonymized, n=20, k=4)  # intact: accepted
    with pytest.raises(DataError, match="has 3 edges, not k=4"):
        KRegularGraph.from_edges(original[1:], anonymized[1:], n=20, k=4)


def test_graph_rejects_missing_self_edge_duplicates_and_uneven_originals():
    cover = circulant_graph(6, 3).cover.copy()
    swapped = cover.copy()
    swapped[2, [0, 1]] = swapped[2, [1, 0]]
    with pytest.raises(DataError, match="does not cover its own original 2"):
        KRegularGraph(swapped)
    dup = cover.copy()
    dup[1, 2] = dup[1, 1]
    with pytest.raises(DataError, match="covers original 2 twice"):
        KRegularGraph(dup)
    uneven = cover.copy()
    uneven[0, 2] = 3  # rows stay duplicate-free, original 3 is now covered 4 times, 2 twice
    with pytest.raises(DataError, match="original 2 is covered by 2 anonymized tuples, not k=3"):
        KRegularGraph(uneven)
    with pytest.raises(DataError, match="k=7 must be between 1"):
        circulant_graph(6, 7)


def test_moves_never_touch_the_self_edge_or_duplicate_an_edge():
    table = _paper_table()
    state = IncrementalState(table, KRegularGraph(TABLE3_COVER))
    assert not state.swap_is_valid(0, 0, 3, 1)  # slot 0 = self edge
    assert not state.swap_is_valid(0, 1, 1, 2)  # q2 would move into q'2, which covers q2 (self edge)
    with pytest.raises(DataError, match="would break k-regularity"):
        state.apply_swap(0, 1, 1, 2)
    with pytest.raises(SpecError, match="unknown objective 'ncp'"):
        state.swap_delta(0, 1, 3, 1, objective="ncp")


# --- Incremental structures --------------------------------------------------------------------


def _random_table(rng, n):
    numeric = np.column_stack([
        rng.integers(0, 6, n),  # few distinct values: many tied minima / maxima
        rng.integers(18, 90, n),
        rng.normal(50_000, 20_000, n),
    ]).astype(float)
    categorical = np.column_stack([
        rng.integers(0, 4, n),
        rng.choice(7, n, p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05]),
        np.zeros(n, dtype=np.int64),  # a one-value domain costs nothing
    ])
    return QidTable(numeric, categorical, (4, 7, 1))


def _random_valid_move(rng, state):
    while True:
        t1, t2 = rng.integers(0, state.n, 2)
        s1, s2 = rng.integers(1, state.k, 2)
        if state.swap_is_valid(t1, s1, t2, s2):
            return int(t1), int(s1), int(t2), int(s2)


def test_incremental_equals_full_recomputation_after_10000_moves():
    """The acceptance point: 10,000 random moves, then GCP and SIL from the running
    totals agree with a full recomputation to 1e-9; every 50th delta is checked too."""
    rng = np.random.default_rng(16)
    table = _random_table(rng, 300)
    state = IncrementalState(table, circulant_graph(300, 5))
    worst_delta = 0.0
    for step in range(10_000):
        move = _random_valid_move(rng, state)
        if step % 50 == 0:
            d_gcp = state.swap_delta(*move, objective="gcp")
            d_sil = state.swap_delta(*move, objective="sil")
            before = (gcp(table, state.graph()), sil(table, state.graph()))
            state.apply_swap(*move)
            after = (gcp(table, state.graph()), sil(table, state.graph()))
            worst_delta = max(worst_delta, abs(after[0] - before[0] - d_gcp),
                              abs(after[1] - before[1] - d_sil))
        else:
            state.apply_swap(*move)
    graph = state.graph()  # validates: still exactly k-regular with all self edges
    assert (graph.cover[:, 0] == np.arange(300)).all()
    assert not np.array_equal(graph.cover, circulant_graph(300, 5).cover)
    assert worst_delta < 1e-9
    assert abs(state.gcp() - gcp(table, graph)) < 1e-9
    assert abs(state.sil() - sil(table, graph)) < 1e-9
    np.testing.assert_allclose(state.tuple_ncp, tuple_ncp(table, graph), rtol=0, atol=1e-9)
    np.testing.assert_allclose(state.tuple_sil, tuple_sil_distance(table, graph), rtol=0,
                               atol=1e-9)
    rebuilt = IncrementalState(table, graph)
    for got, want in zip(state.arrays, rebuilt.arrays, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_numba_kernels_agree_with_python_twin():
    """Same moves on both backends: every delta of both objectives and every structure agree."""
    rng = np.random.default_rng(7)
    table = _random_table(rng, 80)
    fast = IncrementalState(table, circulant_graph(80, 4), backend="numba")
    slow = IncrementalState(table, circulant_graph(80, 4), backend="python")
    for got, want in zip(fast.arrays, slow.arrays, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    for _ in range(1_500):
        t1, t2 = (int(x) for x in rng.integers(0, 80, 2))
        s1, s2 = (int(x) for x in rng.integers(0, 4, 2))  # slot 0 included: must be refused
        valid = fast.swap_is_valid(t1, s1, t2, s2)
        assert valid == slow.swap_is_valid(t1, s1, t2, s2)
        if not valid:
            continue
        for objective in ("gcp", "sil"):
            assert fast.swap_delta(t1, s1, t2, s2, objective=objective) == pytest.approx(
                slow.swap_delta(t1, s1, t2, s2, objective=objective), abs=1e-12)
        fast.apply_swap(t1, s1, t2, s2)
        slow.apply_swap(t1, s1, t2, s2)
    np.testing.assert_array_equal(fast.cover, slow.cover)
    for got, want in zip(fast.arrays, slow.arrays, strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_k_equal_one_has_no_moves():
    table = _paper_table()
    state = IncrementalState(table, circulant_graph(9, 1))
    assert state.gcp() == 0 and state.sil() == 0
    assert not any(state.swap_is_valid(a, 0, b, 0) for a in range(9) for b in range(9))


def test_lca_ncp_counts_the_leaves_under_the_lowest_common_ancestor():
    """Adult's marital-status hierarchy (7 leaves; 'spouse present' over 2, 'spouse not present'
    over 5; root *): a tuple covering Divorced and Never-married has LCA 'spouse not present'
    (NCP (5-1)/(7-1)), one mixing both branches has LCA * (NCP 1), a single value NCP 0; eq. 2
    gives 1/6 for two distinct values, which the LCA variant never undercuts."""
    rows = read_arx_csv(ADULT / "adult_hierarchy_marital-status.csv", "marital-status").rows
    categories = [r[0] for r in rows]
    levels = hierarchy_levels(rows, categories)
    divorced, never, married = (categories.index(c) for c in
                                ("Divorced", "Never-married", "Married-civ-spouse"))
    codes = np.array([divorced, never, married, divorced, divorced, divorced])
    graph = KRegularGraph.from_edges(
        [0, 1, 1, 2, 2, 0, 3, 4, 4, 5, 5, 3], [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], n=6, k=2)
    got = tuple_ncp_lca(codes, levels, graph)
    # q'0 {Divorced, Never-married}, q'1 {Never-married, Married}, q'2 {Married, Divorced},
    # q'3..q'5 {Divorced, Divorced}
    assert got.tolist() == pytest.approx([4 / 6, 1, 1, 0, 0, 0])
    table = QidTable(np.zeros((6, 0)), codes[:, None], (7,))
    assert (got >= tuple_ncp(table, graph) - 1e-12).all()
    with pytest.raises(DataError, match="hierarchy has no leaf 'Unknown'"):
        hierarchy_levels(rows, categories + ["Unknown"])
