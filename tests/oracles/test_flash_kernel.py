"""The zero-limit Flash kernel (optimizers/_flash_kernel.py) against its plain-Python twin
(``flash._Flash``): the same nodes checked in the same order, the same smallest class per check
and the same TD wherever the kernel computes one (every check a Tracker may read), the same
result (node, TD, history, evaluations, certification), with and without a budget that cuts
the run short; on random tables of 2 to 10 QIDs and on adult.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.methods.generalization.optimizers import Tracker, run_optimizer
from ppdp.engine.methods.generalization.optimizers import _flash_kernel as FK
from ppdp.engine.methods.generalization.optimizers import flash as F
from ppdp.engine.methods.generalization.optimizers.lattice import lattice_size
from ppdp.engine.methods.generalization.problem import Problem, fitness_key
from ppdp.engine.privacy import build_model
from tests.oracles.test_flash import adult_table, k_problem, random_hierarchy, random_table  # noqa: F401


def twin_run(problem: Problem, budget: int) -> tuple[list[int], list[float], list[float], Tracker, bool]:
    """The Python traversal, recording every check: (flat indices, smallest class, TD, tracker, complete)."""
    tracker = Tracker(problem, budget, name="flash")
    state = F._Flash(problem, tracker, 0)
    order: list[int] = []
    smallest: list[float] = []
    td: list[float] = []
    real = problem.evaluate_unsuppressed

    def spy(G, *, count=True):
        ev = real(G, count=count)
        smallest.append(float(ev.ad[0, 0]))
        td.append(float(ev.td[0]))
        return ev

    problem.evaluate_unsuppressed = spy  # type: ignore[method-assign]
    real_evaluate = state.evaluate

    def record(idx: int) -> bool:
        anonymous = real_evaluate(idx)  # raises when the budget is spent: not a check
        order.append(idx)
        return anonymous

    state.evaluate = record  # type: ignore[method-assign]
    complete = state.run()
    assert len(order) == len(smallest) == state.checked
    return order, smallest, td, tracker, complete


def assert_same_run(table, models, budget: int = 10**8) -> int:
    """Kernel and twin on fresh problems: the same checks and results. Returns the checks."""
    order, smallest, td, twin_tracker, twin_complete = twin_run(Problem(table, models), budget)
    problem = Problem(table, models)
    assert F.kernel_applies(problem, lattice_size(problem.heights))
    idx, k_smallest, k_td, complete = F.zero_limit_checks(problem, budget)
    assert idx.tolist() == order
    assert k_smallest.tolist() == smallest
    # TD bit for bit wherever the kernel reports it, and reported at every check that improves
    # the Tracker's best (fitness_key of the twin's numbers; AD = the smallest class)
    k = max(m.k for m in models)
    best = None
    for i, (a, t) in enumerate(zip(k_smallest.tolist(), k_td.tolist(), strict=True)):
        key = fitness_key(a >= k, 0.0 if a >= k else (k - a) / k, td[i])
        if best is None or key > best:
            best = key
            assert not np.isnan(t), f"check {i} improves the best but has no TD"
        assert np.isnan(t) or t == td[i]
    assert complete == twin_complete
    tracker = Tracker(problem, budget, name="flash")
    n, _pruned, _phase_two, complete = F.run_kernel(problem, tracker, 0)
    assert n == len(order) and complete == twin_complete
    a, b = twin_tracker.result(certified=twin_complete), tracker.result(certified=complete)
    assert a.g.tolist() == b.g.tolist() and a.td == b.td and a.feasible == b.feasible
    assert a.evaluations == b.evaluations and a.certified == b.certified and a.suppressed == b.suppressed
    assert np.array_equal(a.history, b.history) and np.array_equal(a.retained, b.retained)
    assert np.array_equal(a.ad, b.ad)
    assert problem.evaluations == len(order)
    return len(order)


def wide_table(seed: int):
    """6 to 10 QIDs with low hierarchies (a lattice of at most a few thousand nodes), so that
    the strategy's sums run through NumPy's 8-way pairwise summation."""
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(6, 11))
    hs, names = [], []
    for q in range(nq):
        name = f"w{q}"
        hs.append(random_hierarchy(rng, name, int(rng.integers(2, 6)), 1 if q >= 4 else int(rng.integers(1, 3))))
        names.append(name)
    n = int(rng.integers(20, 400))
    data = {name: [h.leaves[int(rng.integers(len(h.leaves)))] for _ in range(n)] for name, h in zip(names, hs, strict=True)}
    frame = pl.DataFrame(data).group_by(names).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(frame, names, [], hs), int(rng.integers(1, 6))


@pytest.mark.parametrize("seed", range(40))
def test_kernel_matches_twin_random(seed):
    table, k = random_table(5000 + seed)
    assert_same_run(table, [build_model("k-anonymity", {"k": k})])


@pytest.mark.parametrize("seed", range(12))
def test_kernel_matches_twin_wide(seed):
    table, k = wide_table(seed)
    assert_same_run(table, [build_model("k-anonymity", {"k": k})])


@pytest.mark.parametrize("k", [2, 5, 10])
def test_kernel_matches_twin_adult(adult_table, k):  # noqa: F811
    assert assert_same_run(adult_table, [build_model("k-anonymity", {"k": k})]) > 50


def test_kernel_matches_twin_two_k_models(adult_table):  # noqa: F811
    """Two k-anonymity models: anonymous means the larger k."""
    assert_same_run(adult_table, [build_model("k-anonymity", {"k": 3}), build_model("k-anonymity", {"k": 7})])


@pytest.mark.parametrize("budget", [1, 2, 17, 144, 145, 146])
def test_kernel_matches_twin_under_a_budget(adult_table, budget):  # noqa: F811
    """adult k = 5 checks 145 nodes: budgets below, at and above that."""
    assert_same_run(adult_table, [build_model("k-anonymity", {"k": 5})], budget)


def test_run_optimizer_takes_the_kernel_and_reports_the_same(adult_table):  # noqa: F811
    res = run_optimizer("flash", k_problem(adult_table, 5), budget=10**6)
    problem = k_problem(adult_table, 5)
    tracker = Tracker(problem, 10**6, name="flash")
    state = F._Flash(problem, tracker, 0)
    assert state.run()
    twin = tracker.result(certified=True)
    assert res.g.tolist() == twin.g.tolist() and res.td == twin.td and res.certified and twin.certified
    assert res.info["nodes_checked"] == state.checked == res.evaluations
    assert res.info["complete"] and res.info["optimal_within_limit"]


def test_kernel_applies_to_k_anonymity_alone(adult_table):  # noqa: F811
    size = lattice_size(adult_table.heights)
    assert F.kernel_applies(k_problem(adult_table, 5), size)
    assert not F.kernel_applies(Problem(adult_table, [build_model("k-anonymity", {"k": 5})], backend="duckdb"), size)
    assert not F.kernel_applies(k_problem(adult_table, 5), F.KERNEL_MAX_LATTICE + 1)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 15, 16, 17, 33, 128])
def test_row_sum_is_numpys(n):
    rng = np.random.default_rng(n)
    rows = rng.integers(0, 7, size=(50, n)) / rng.integers(1, 7, size=n)
    sums = rows.sum(axis=1)  # the twin's sorted_level sums rows of a 2-D array like this
    for i in range(rows.shape[0]):
        assert FK._numpy_row_sum(np.ascontiguousarray(rows[i])) == sums[i]


@pytest.mark.parametrize("seed", range(40))
def test_fill_down_is_the_twins_slice_assignment(seed):
    """The kernel's down-box fill (which skips slabs already tagged) leaves the tags exactly as
    the twin's slice assignment does, after any sequence of such fills (the tags not anonymous
    are then a down-set, as in a run)."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 4, int(rng.integers(1, 7)))
    shape = tuple(int(x) + 1 for x in h)
    strides = np.array([int(np.prod(shape[q + 1:], dtype=np.int64)) for q in range(len(h))], dtype=np.int64)
    twin = np.zeros(shape, dtype=np.int8)
    flat = np.zeros(twin.size, dtype=np.int8)
    scratch = (np.empty(len(h) + 1, dtype=np.int64), np.empty(len(h) + 1, dtype=np.int64))
    for _ in range(int(rng.integers(1, 12))):
        g = np.array([int(rng.integers(0, x + 1)) for x in h], dtype=np.int64)
        twin[tuple(slice(0, c + 1) for c in g)] = FK.NOT_ANONYMOUS
        FK._fill_down(flat, strides, g, *scratch)
        assert np.array_equal(flat, twin.reshape(-1))


def test_round12_is_numpys():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(2000), rng.integers(0, 40, 500) / 24.0, 1.0 - rng.integers(0, 40, 500) / 37.0])
    assert all(FK._round12(v) == r for v, r in zip(x.tolist(), np.round(x, 12).tolist(), strict=True))


@pytest.mark.parametrize("seed", range(12))
def test_td_margin_bounds_every_node(seed):
    """The kernel skips an anonymous check's TD when UB * (1 + td_margin) is below the best TD:
    on every node of random tables, TD (the kernels' sum) is within the margin of UB."""
    from ppdp.engine.kernels import classes as K

    table, _ = (random_table if seed % 2 else wide_table)(7000 + seed)
    problem = k_problem(table, 1)
    margin = F.td_margin(table, problem._numba.weight)
    assert 0.0 < margin < 1e-9
    for g in np.ndindex(*(int(h) + 1 for h in table.heights)):
        g_arr = np.array(g, dtype=np.int64)
        td = K.transparency(g_arr, table.codes, table.counts, problem._numba.weight)
        ub = sum(float(table.level_td[q, c]) for q, c in enumerate(g))
        assert abs(td - ub) <= margin * ub


def test_td_margin_is_infinite_with_a_negative_weight(adult_table):  # noqa: F811
    weight = k_problem(adult_table, 2)._numba.weight.copy()
    weight[0, 0, 0] = -1.0
    assert F.td_margin(adult_table, weight) == np.inf


def test_td_margin_bounds_every_node_of_adult(adult_table):  # noqa: F811
    """The same on adult's 6,480 nodes (18,000 rows: the longest sums)."""
    from ppdp.engine.kernels import classes as K

    weight = k_problem(adult_table, 1)._numba.weight
    margin = F.td_margin(adult_table, weight)
    worst = 0.0
    for g in np.ndindex(*(int(h) + 1 for h in adult_table.heights)):
        td = K.transparency(np.array(g, dtype=np.int64), adult_table.codes, adult_table.counts, weight)
        ub = sum(float(adult_table.level_td[q, c]) for q, c in enumerate(g))
        worst = max(worst, abs(td - ub) / ub)
    assert worst <= margin


def snapshot(table, ev, g):
    """(first row, records) of each class of g, classified from scratch (K.classify)."""
    from ppdp.engine.kernels import classes as K

    cls, m = K.classify(np.asarray(g, dtype=np.int64), table.codes, ev.gen, ev.n_gen, np.ones(table.n_rows, dtype=np.bool_))
    _, first = np.unique(cls, return_index=True)
    return first.astype(np.int32), np.bincount(cls, weights=table.counts, minlength=m).astype(np.int64)


def many_values_table(seed: int):
    """12 QIDs of 40 to 90 leaves: the keys of the bottom node overflow 62 bits (the column path
    of K._rank_rows_into compresses them)."""
    rng = np.random.default_rng(seed)
    hs, names = [], []
    for q in range(12):
        hs.append(random_hierarchy(rng, f"m{q}", int(rng.integers(40, 90)), 2))
        names.append(f"m{q}")
    n = 300
    data = {name: [h.leaves[int(rng.integers(len(h.leaves)))] for _ in range(n)] for name, h in zip(names, hs, strict=True)}
    frame = pl.DataFrame(data).group_by(names).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(frame, names, [], hs)


@pytest.mark.parametrize("seed", range(16))
def test_rollup_classes_is_the_classification(seed):
    """_rollup_classes from the snapshot of any node below g, or from every row, gives the first
    rows and records of g's classes as a classification from scratch."""
    rng = np.random.default_rng(seed)
    table = many_values_table(seed) if seed % 4 == 0 else (random_table if seed % 2 else wide_table)(9000 + seed)[0]
    ev = k_problem(table, 1)._numba
    n = table.n_rows
    scratch = [np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32), np.ones(n, dtype=np.bool_),
               np.empty(4 * n + 16, dtype=np.int64), np.empty(4 * n + 16, dtype=np.int32)]
    heights = [int(h) for h in table.heights]
    for _ in range(20):
        g = np.array([int(rng.integers(0, h + 1)) for h in heights], dtype=np.int64)
        below = np.array([int(rng.integers(0, c + 1)) for c in g], dtype=np.int64)
        want_reps, want_sizes = snapshot(table, ev, g)
        parents = [snapshot(table, ev, below), (np.arange(n, dtype=np.int32), table.counts)]
        for reps, sizes in parents:
            out_reps, out_sizes = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int64)
            m = FK._rollup_classes(g, table.codes, ev.gen, ev.n_gen, reps, sizes, *scratch, out_reps, out_sizes)
            assert out_reps[:m].tolist() == want_reps.tolist()
            assert out_sizes[:m].tolist() == want_sizes.tolist()


@pytest.mark.parametrize("seed", range(8))
def test_classify_classes_is_the_rollup_from_every_row(seed):
    """With no remembered node below, the kernel classifies every row (_classify_classes): the
    same first rows and records as _rollup_classes from every row as its own class."""
    rng = np.random.default_rng(seed)
    table = many_values_table(seed) if seed % 4 == 0 else (random_table if seed % 2 else wide_table)(9100 + seed)[0]
    ev = k_problem(table, 1)._numba
    n = table.n_rows
    from ppdp.engine.kernels import classes as K

    keys, ids, ones = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32), np.ones(n, dtype=np.bool_)
    size = K._table_size(n)  # the hash table's size, a power of two (as the kernel allocates it)
    sk, si = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int32)
    for _ in range(20):
        g = np.array([int(rng.integers(0, int(h) + 1)) for h in table.heights], dtype=np.int64)
        a_reps, a_sizes = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int64)
        m = FK._classify_classes(g, table.codes, ev.gen, ev.n_gen, table.counts, keys, ids, ones, sk, si, a_reps, a_sizes)
        b_reps, b_sizes = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int64)
        mb = FK._rollup_classes(g, table.codes, ev.gen, ev.n_gen, np.arange(n, dtype=np.int32), table.counts, keys, ids,
                                ones, sk, si, b_reps, b_sizes)
        assert m == mb and a_reps[:m].tolist() == b_reps[:m].tolist() and a_sizes[:m].tolist() == b_sizes[:m].tolist()
        assert (a_reps[:m].tolist(), a_sizes[:m].tolist()) == tuple(x.tolist() for x in snapshot(table, ev, g))
