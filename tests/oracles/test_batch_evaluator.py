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
    slow_ret = np.stack([K.retained_from_records(s, table.offsets) for s in keep])
    assert np.array_equal(retained, slow_ret)
    fused = ev.evaluate(G, retained)
    slow = ev.evaluate_per_solution(G, retained)
    for f in ("ad", "td", "feasible", "violation", "suppressed"):
        a, b = getattr(fused, f), getattr(slow, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f  # exact, inf included
    # The class size per histogram row that evaluate_batch_into writes for the fused ID-DGA
    # kernel's improvement step: the same AD and TD, and each row's record_class_sizes.
    row_size = np.full(retained.shape, -1, dtype=np.int64)
    ad_i, td_i, sup_i = B.evaluate_batch_into(np.ascontiguousarray(G, dtype=np.int64), retained, table.codes, ev.gen,
                                              ev.n_gen, ev.weight, table.sa, table.n_sa, ev.q, ev.kinds,
                                              table.n_records, row_size)
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
