"""The fused batch path of the numba backend (engine/kernels/batch.py) gives exactly the
numbers of the per-solution kernels (engine/kernels/classes.py), bit for bit, and agrees
with the plain-Python reference: random instances, all four models alone and combined, the
int64 key overflow of many QIDs, and the per-record class sizes of the improvement operator."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.kernels import batch as B
from ppdp.engine.kernels import classes as K
from ppdp.engine.methods.generalization.evaluators import make_evaluator
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.oracles.test_evaluator_agreement import (
    close,
    random_models,
    random_population,
    random_table,
)
from tests.support import reference as ref


def check_fused(table, models, G, keep) -> None:
    ev = make_evaluator("numba", table, models)
    assert ev.kinds is not None  # every built-in model has a fused kind
    retained = B.retained_batch(np.ascontiguousarray(keep), table.offsets)
    offsets = table.offsets.tolist()  # the plain twin: each row's records, counted
    slow_ret = np.array([[int(s[offsets[h]:offsets[h + 1]].sum()) for h in range(len(offsets) - 1)] for s in keep])
    assert np.array_equal(retained, slow_ret)
    fused = ev.evaluate(G, retained)
    slow = ev.evaluate_per_solution(G, retained)
    for f in ("ad", "td", "feasible", "violation", "suppressed"):
        a, b = getattr(fused, f), getattr(slow, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f  # exact, inf included
    # The class size per histogram row that evaluate_prepared_into writes for the fused ID-DGA
    # kernel's improvement step: the same AD and TD, and each row's record_class_sizes.
    row_size = np.full(retained.shape, -1, dtype=np.int64)
    cols, n_leaves, rows_sorted, slot = B.prepare_rows(table.codes, ev.gen)
    ad_i, td_i, sup_i = B.evaluate_prepared_into(np.ascontiguousarray(G, dtype=np.int64), retained, table.codes, cols,
                                                 n_leaves, rows_sorted, slot, ev.gen, ev.n_gen, ev.weight, table.sa,
                                                 table.n_sa, ev.q, ev.kinds, ev.kind_params, table.n_records, row_size)
    assert np.array_equal(td_i, fused.td) and np.array_equal(sup_i, fused.suppressed)
    nonempty = np.diff(table.offsets) > 0  # histogram rows holding records, and their first record
    first = table.offsets[:-1][nonempty]
    for p in range(G.shape[0]):
        got = ev.record_class_sizes(G[p], retained[p])
        assert np.array_equal(row_size[p][nonempty], np.where(retained[p][nonempty] > 0, got[first], 0))
        assert np.all(row_size[p][~nonempty] == 0)
        assert np.array_equal(got, ev.record_class_sizes_per_solution(G[p], retained[p]))
        ad, td, feasible, suppressed = ref.evaluate(table, models, G[p], keep[p])
        assert close(float(fused.td[p]), td) and bool(fused.feasible[p]) == feasible
        assert int(fused.suppressed[p]) == suppressed
        assert all(close(float(fused.ad[p, j]), ad[j]) for j in range(len(models)))


@pytest.mark.parametrize("seed", range(120))
def test_fused_batch_matches_per_solution_kernels(seed: int) -> None:
    rng = np.random.default_rng(50_000 + seed)
    table = random_table(rng, max_records=60)
    models = random_models(rng)
    G, keep = random_population(rng, table, int(rng.integers(1, 12)))
    check_fused(table, models, G, keep)


@pytest.mark.parametrize("seed", range(2))
def test_fused_batch_many_qids(seed: int) -> None:
    """22 QIDs of 8 leaves: the mixed-radix key overflows and is compressed on the way."""
    rng = np.random.default_rng(60_000 + seed)
    table = random_table(rng, n_qids=22, max_records=300, min_leaves=8)
    models = [build_model(name, p) for name, p in [
        ("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.5}),
        ("distinct-l-diversity", {"l": 2}), ("entropy-l-diversity", {"l": 1.5}),
    ]]
    G, keep = random_population(rng, table, 6)
    check_fused(table, models, G, keep)


def test_problem_uses_the_fused_path_and_unknown_models_fall_back() -> None:
    from tests.support.toy_models import ToyMinClass

    rng = np.random.default_rng(5)
    table = random_table(rng, n_qids=3, max_records=50)
    k = build_model("k-anonymity", {"k": 2})
    G, keep = random_population(rng, table, 8)
    fused = Problem(table, [k])
    odd = Problem(table, [ToyMinClass(2)])  # same AD, no fused kind
    assert fused.evaluator.kinds is not None and odd.evaluator.kinds is None
    a, b = fused.evaluate(G, keep), odd.evaluate(G, keep)
    assert np.array_equal(a.ad, b.ad) and np.array_equal(a.td, b.td) and np.array_equal(a.feasible, b.feasible)
    assert fused.retained_from_s(keep[:0]).shape == (0, table.n_rows)


def _lexsorted(codes: np.ndarray) -> bool:
    if codes.shape[0] < 2 or codes.shape[1] == 0:
        return True
    order = np.lexsort(codes.T[::-1])
    return bool(np.array_equal(codes[order], codes))


@pytest.mark.parametrize("seed", range(40))
def test_one_key_classification_matches_the_kernels(seed: int) -> None:
    """``_classify_td_into`` (sorted segments, direct and hashed slots) gives ``classify``'s ids,
    ``class_sizes`` and ``transparency`` bit for bit, on rows in the encoded (sorted) order and
    shuffled, with rows retaining nothing; it leaves the slot table all -1."""
    rng = np.random.default_rng(70_000 + seed)
    table = random_table(rng, n_qids=int(rng.integers(1, 9)), max_records=400, min_leaves=1 if seed % 2 else 8)
    gen, weight, n_gen = table.lookup
    n, nq = table.codes.shape
    for shuffle in (False, True):
        order = rng.permutation(n) if shuffle else np.arange(n)
        codes = np.ascontiguousarray(table.codes[order])
        cols, n_leaves, rows_sorted, slot = B.prepare_rows(codes, gen)
        assert rows_sorted == _lexsorted(codes)
        assert rows_sorted or shuffle
        tab = np.empty((nq, gen.shape[2]), dtype=np.int64)
        buf = [np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32),
               np.empty(n, dtype=np.int64), np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)]
        for p in range(12):
            # bottom (the widest keys), top (one class: a direct slot), then random nodes
            g = np.zeros(nq, dtype=np.int64) if p == 0 else table.heights.copy() if p == 1 else rng.integers(0, table.heights + 1)
            ret = table.counts[order].copy()
            if p % 3 == 2:
                ret[rng.random(n) < 0.3] = 0
            bound = K._key_tables_into(g, gen, n_gen, tab)
            assert bound >= 0
            m, kept, td = K._classify_td_into(g, cols, gen, n_gen, n_leaves, weight, ret, tab, bound, rows_sorted, *buf,
                                              slot)
            high, keys, cls, size = buf[:4]
            cls_ref, m_ref = K.classify(g, codes, gen, n_gen, ret > 0)
            assert m == m_ref and np.array_equal(cls, cls_ref)
            assert np.array_equal(size[:m], K.class_sizes(cls_ref, m_ref, ret))
            assert kept == int(ret.sum())
            assert td == K.transparency(g, codes, ret, weight)  # exact: the same sums in the same order
            assert np.all(slot == -1)


def test_one_key_classification_hashes_wide_keys() -> None:
    """Keys of many fine QIDs exceed every segment's table: the open-addressing branch, and
    the compression fallback of ``evaluate_prepared_into`` when the key passes 2^62."""
    rng = np.random.default_rng(71_000)
    table = random_table(rng, n_qids=22, max_records=300, min_leaves=8)
    gen, weight, n_gen = table.lookup
    models = [build_model("k-anonymity", {"k": 2}), build_model("t-closeness", {"t": 0.5})]
    G = np.zeros((3, table.n_qids), dtype=np.int64)
    G[1, :6] = 1
    tab = np.empty((table.n_qids, gen.shape[2]), dtype=np.int64)
    assert K._key_tables_into(G[0], gen, n_gen, tab) == -1  # bottom of 22 QIDs: the key would overflow
    keep = np.ones((3, table.n_records), dtype=np.bool_)
    keep[2] = rng.random(table.n_records) < 0.8
    check_fused(table, models, G, keep)
