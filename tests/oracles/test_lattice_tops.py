"""Proof tests of the lattice search's pruning by infeasible tops under a suppression limit
(engine/methods/generalization/optimizers/lattice.py, docs/design/lattice_limit.md).

(a) The lemma: with an exact oracle and union-closed models, the records S*(G) suppresses never
    increase up the lattice (along every edge G -> G + e_q), so a box whose top is over the
    limit holds no node within it.
(b) The search with the pruning (class bound or UB(L), no partner tables) finds the maximum TD
    over every (G, S) within the limit by brute force over every S, on tiny tables, with EMD
    t-closeness (equal, ordered) and k, under limits 0, 1 %, 5 %, 20 % and none.
(c) On larger random tables (random models, where the plan is exact and union-closed), the
    pruned search returns exhaustive search's optimum, certified, and says it pruned.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes, lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ModelContext, build_model
from tests.oracles.test_evaluator_agreement import random_models, random_table
from tests.oracles.test_oracle import brute_force_best_td, tiny_table
from tests.support import reference as ref
from tests.support.spies import count_calls

LIMITS = (0.0, 0.01, 0.05, 0.2, 1.0)


def _emd_models(rng: np.random.Generator, distance: str, table) -> list:
    ctx = ModelContext(("s",), table.sa_values)
    t = float(rng.choice([0.1, 0.15, 0.2, 0.3, 0.45]))
    out = [build_model("t-closeness", {"t": t, "distance": distance}).bind(ctx)]
    k = int(rng.integers(1, 4))
    if k > 1:
        out.append(build_model("k-anonymity", {"k": k}))
    return out


def _table_with_sa(rng: np.random.Generator, max_records: int):
    """random_table with exactly one sensitive column (EMD reads one)."""
    while True:
        table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=max_records)
        if len(table.sensitive) == 1:
            return table


def _prunes(problem: Problem) -> bool:
    return problem.oracle_exact and all(m.union_closed for m in problem.models)


@pytest.mark.parametrize("distance", ["equal", "ordered", "k"])
@pytest.mark.parametrize("seed", range(6))
def test_suppression_of_the_oracle_never_grows_up_the_lattice(distance: str, seed: int) -> None:
    """(a) on every edge of the lattice: suppressed(S*(G + e_q)) <= suppressed(S*(G))."""
    rng = np.random.default_rng([97_000, seed, len(distance)])
    table = _table_with_sa(rng, 60)
    if distance == "k":
        models = [build_model("k-anonymity", {"k": int(rng.integers(2, 6))})]
    else:
        ctx = ModelContext(tuple(table.sensitive), table.sa_values)
        models = [build_model("t-closeness", {"t": float(rng.uniform(0.05, 0.5)), "distance": distance}).bind(ctx),
                  build_model("k-anonymity", {"k": int(rng.integers(1, 5))})]
    problem = Problem(table, models)
    assert _prunes(problem)
    nodes = all_nodes(table.heights)
    retained, _ = problem.evaluate_optimal(nodes)
    suppressed = {g.tobytes(): problem.n_records - int(r.sum()) for g, r in zip(nodes, retained, strict=True)}
    edges = 0
    for g in nodes:
        for q in range(len(g)):
            if g[q] < table.heights[q]:
                up = g.copy()
                up[q] += 1
                assert suppressed[up.tobytes()] <= suppressed[g.tobytes()], (g, q)
                edges += 1
    assert edges > 0


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("distance", ["equal", "ordered"])
@pytest.mark.parametrize("seed", range(4))
def test_pruned_search_finds_the_brute_force_optimum(limit: float, distance: str, seed: int) -> None:
    """(b) maximum TD over every G and every per-record S within the limit, by brute force."""
    rng = np.random.default_rng([98_000, seed, int(limit * 100), len(distance)])
    table = tiny_table(rng, n_records=int(rng.integers(8, 12)))
    models = _emd_models(rng, distance, table)
    max_sup = int(np.floor(limit * table.n_records + 1e-9))
    best = brute_force_best_td(table, models, None if limit >= 1 else max_sup)
    params = {} if limit >= 1 else {"suppression_limit": limit}
    for batch in (64, 1):
        result = run_optimizer("lattice", Problem(table, models), budget=lattice_size(table.heights),
                               params={"batch": batch, **params})
        if max_sup < table.n_records:
            assert "infeasible tops pruned" in result.info["search"]
        assert result.certified
        if best < 0:
            assert not result.feasible
            continue
        assert result.feasible and result.td == pytest.approx(best, rel=1e-9, abs=1e-12)
        keep = ref.keep_from_retained(table, result.retained)
        _, td, feasible, _ = ref.evaluate(table, models, result.g, keep)
        assert feasible and table.n_records - int(np.sum(keep)) <= max_sup
        assert td == pytest.approx(best, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("limit", [0.0, 0.01, 0.05, 0.2])
@pytest.mark.parametrize("seed", range(12))
def test_pruned_search_certifies_the_exhaustive_optimum(limit: float, seed: int) -> None:
    """(c) random tables of up to 200 records (so 1 % allows records), random and EMD models."""
    rng = np.random.default_rng([99_000, seed, int(limit * 100)])
    table = _table_with_sa(rng, 200)
    if seed % 2:
        models = random_models(rng)
    else:
        ctx = ModelContext(tuple(table.sensitive), table.sa_values)
        distance = "equal" if seed % 4 == 0 else "ordered"
        models = [build_model("t-closeness", {"t": float(rng.uniform(0.1, 0.4)), "distance": distance}).bind(ctx),
                  build_model("k-anonymity", {"k": int(rng.integers(1, 6))})]
    problem = Problem(table, models)
    size = lattice_size(table.heights)
    params = {"suppression_limit": limit}
    full = run_optimizer("lattice", Problem(table, models), budget=size, params={"mode": "exhaustive", **params})
    max_sup = int(np.floor(limit * table.n_records + 1e-9))
    for extra in ({}, {"batch": 1}, {"greedy_start": True}):
        got = run_optimizer("lattice", Problem(table, models), budget=size, params={**extra, **params})
        if all(m.union_closed for m in models) and (max_sup == 0 or (_prunes(problem) and max_sup < table.n_records)):
            assert "infeasible tops pruned" in got.info["search"], extra
        assert got.certified == problem.oracle_exact, extra
        assert got.feasible == full.feasible, extra
        if full.feasible:
            assert got.td == pytest.approx(full.td, rel=1e-12, abs=1e-12), extra
            assert got.suppressed <= max_sup, extra


@pytest.mark.parametrize("seed", range(8))
def test_rolled_up_classification_gives_the_class_bound_bit_for_bit(seed: int) -> None:
    """``BoxBound.round_bounds`` (bounds.class_round: each box's classification at U kept as a
    row, a half [L, U1] rolled up from its parent's row over the rows in classes of kmin records
    there, a half [L2, U] taking over its parent's row; the rows growing) gives ``with_small``'s bounds and
    suppressed counts exactly, and the Python twin's bounds, along random chains of splits."""
    from ppdp.engine.methods.generalization.optimizers.bounds import BoxBound, ClassMasks
    from tests.support.bounds_reference import class_bounds_python

    rng = np.random.default_rng([99_500, seed])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=120)
    problem = Problem(table, [build_model("k-anonymity", {"k": int(rng.integers(2, 6))})])
    bound = BoxBound(problem, partners=False)
    heights = np.asarray(table.heights, dtype=np.int64)
    masks = ClassMasks(len(table.counts), capacity=1)  # grows as rows are taken
    for _ in range(4):
        # the root's two halves classified over every row, then random descents
        L, U = np.zeros_like(heights), heights.copy()
        row = -1
        while (U - L).any():
            q = int(rng.choice(np.flatnonzero(U > L)))
            mid = int(rng.integers(L[q], U[q]))
            U1, L2 = U.copy(), L.copy()
            U1[q], L2[q] = mid, mid + 1
            a, b2 = masks.take(), (masks.take() if row < 0 else row)
            src = np.array([a, b2], dtype=np.int64)
            act = np.array([row, -1 if row < 0 else -2], dtype=np.int64)
            lows, highs = np.stack([L, L2]), np.stack([U1, U])
            got_b, got_small = bound.round_bounds(lows, highs, src, act, np.array([q, q]), masks)
            want_b, want_small = bound.with_small(lows, highs)
            assert got_b.tolist() == want_b.tolist() and got_small.tolist() == want_small.tolist()
            assert np.allclose(got_b, class_bounds_python(problem, lows, highs), rtol=0, atol=1e-9)
            if rng.random() < 0.5:
                L, U, row = L, U1, a
                masks.release(b2)
            else:
                L, U, row = L2, U, b2
                masks.release(a)


@pytest.mark.parametrize("seed", range(4))
def test_round_bounds_over_a_limit_are_minus_infinity(seed: int) -> None:
    """With ``max_small`` (a limit in records), ``round_bounds`` gives -inf to the boxes whose
    classes of fewer than kmin records at U hold more records, and ``with_small``'s bound to
    the others."""
    from ppdp.engine.methods.generalization.optimizers.bounds import BoxBound

    rng = np.random.default_rng([99_600, seed])
    table = random_table(rng, n_qids=int(rng.integers(2, 5)), max_records=120)
    problem = Problem(table, [build_model("k-anonymity", {"k": int(rng.integers(2, 6))})])
    bound = BoxBound(problem, partners=False)
    heights = np.asarray(table.heights, dtype=np.int64)
    a, b = rng.integers(0, heights + 1, size=(2, 12, len(heights)))
    L, U = np.minimum(a, b), np.maximum(a, b)
    want_b, want_small = bound.with_small(L, U)
    limit = int(np.median(want_small))
    masks = bound.new_masks()
    src = np.array([masks.take() for _ in range(len(L))], dtype=np.int64)
    got_b, got_small = bound.round_bounds(L, U, src, np.full(len(L), -1), np.zeros(len(L), dtype=np.int64), masks,
                                          limit)
    assert got_small.tolist() == want_small.tolist()
    assert got_b.tolist() == np.where(want_small > limit, -np.inf, want_b).tolist()


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("seed", range(10))
def test_tops_loop_kernel_is_the_python_loop(monkeypatch: pytest.MonkeyPatch, batch: int, seed: int) -> None:
    """``lattice._tops_loop`` (``_box_kernels.tops_split`` / ``tops_push``; the fused kernel off)
    against its twin, ``_tops_round``'s Python loop: the same tops evaluated in the same batches (so the same boxes
    popped in the same order), the same boxes bounded, the same answer and bound left, also when
    stopped early by ``max_boxes``; the slots start small so that they grow."""
    from ppdp.engine.methods.generalization.optimizers import lattice as lattice_module

    rng = np.random.default_rng([99_700, seed, batch])
    table = _table_with_sa(rng, 200)
    ctx = ModelContext(tuple(table.sensitive), table.sa_values)
    distance = "equal" if seed % 2 else "ordered"
    models = [build_model("t-closeness", {"t": float(rng.uniform(0.1, 0.4)), "distance": distance}).bind(ctx),
              build_model("k-anonymity", {"k": int(rng.integers(2, 6))})]
    size = lattice_size(table.heights)
    monkeypatch.setattr(lattice_module, "SPARE_SLOTS", 0)
    monkeypatch.setattr(lattice_module, "FUSED_TOPS", False)  # its own twin test: below
    limit = float(rng.choice([0.0, 0.01, 0.05, 0.2]))
    runs = [{"batch": batch, "suppression_limit": limit}]
    runs += [{"batch": batch, "suppression_limit": limit, "max_boxes": int(m)} for m in rng.integers(1, 40, 2)]
    split_calls = count_calls(monkeypatch, lattice_module, "tops_split")
    for params in runs:
        traces = []
        for kernel in (True, False):
            monkeypatch.setattr(lattice_module, "TOPS_LOOP_KERNEL", kernel)
            batches: list[list[list[int]]] = []
            problem = Problem(table, models)
            optimal, plain = problem.evaluate_optimal, problem.evaluate

            def traced_optimal(G, _f=optimal, _b=batches):
                _b.append(np.atleast_2d(G).tolist())
                return _f(G)

            def traced_plain(G, *a, _f=plain, _b=batches, **k):
                _b.append(np.atleast_2d(G).tolist())
                return _f(G, *a, **k)

            monkeypatch.setattr(problem, "evaluate_optimal", traced_optimal)
            monkeypatch.setattr(problem, "evaluate", traced_plain)
            result = run_optimizer("lattice", problem, budget=size, params=dict(params))
            traces.append((result, batches))
        (k_res, k_batches), (p_res, p_batches) = traces
        assert k_batches == p_batches, params
        assert k_res.td == p_res.td and k_res.certified == p_res.certified and k_res.feasible == p_res.feasible
        assert np.array_equal(k_res.g, p_res.g) and k_res.evaluations == p_res.evaluations
        assert k_res.info == p_res.info  # boxes bounded, bound left, search
        if k_res.info.get("boxes_bounded", 0) > 1:
            assert k_res.info["search"] == "boxes by class, infeasible tops pruned"
            assert split_calls  # the kernel loop ran


@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("seed", range(10))
def test_fused_tops_kernel_is_the_tops_loop(monkeypatch: pytest.MonkeyPatch, batch: int, seed: int) -> None:
    """``lattice._tops_fused`` (``_box_kernels.tops_rounds``: the rounds and their tops'
    evaluations in one kernel) against its twin, ``_tops_loop`` with Python evaluating the
    tops: under a zero limit, the same nodes offered to the tracker in the same order with the
    same evaluations, the same runs counted, the same answer, boxes and bound left, also when
    stopped early by ``max_boxes`` or the budget; small slots and log, so both grow and replay."""
    from ppdp.engine.methods.generalization.optimizers import Tracker
    from ppdp.engine.methods.generalization.optimizers import lattice as lattice_module

    rng = np.random.default_rng([99_800, seed, batch])
    table = _table_with_sa(rng, 200)
    ctx = ModelContext(tuple(table.sensitive), table.sa_values)
    distance = ("equal", "ordered", "k")[seed % 3]
    models = [build_model("k-anonymity", {"k": int(rng.integers(2, 6))})]
    if distance != "k":
        models.insert(0, build_model("t-closeness", {"t": float(rng.uniform(0.1, 0.4)),
                                                      "distance": distance}).bind(ctx))
    size = lattice_size(table.heights)
    monkeypatch.setattr(lattice_module, "SPARE_SLOTS", 0)
    monkeypatch.setattr(lattice_module, "FUSED_LOG", 1)
    runs = [({"batch": batch, "suppression_limit": 0.0}, size)]
    runs += [({"batch": batch, "suppression_limit": 0.0, "max_boxes": int(m)}, size) for m in rng.integers(1, 40, 2)]
    runs += [({"batch": batch, "suppression_limit": 0.0}, int(b)) for b in rng.integers(1, 6, 2)]
    kernel_calls = count_calls(monkeypatch, lattice_module, "tops_rounds")
    for params, budget in runs:
        traces = []
        for fused in (True, False):
            monkeypatch.setattr(lattice_module, "FUSED_TOPS", fused)
            log: list[tuple] = []
            offer, count = Tracker.offer, Tracker.count

            def traced_offer(self, G, retained, ev, _f=offer, _log=log):
                _log.append(("offer", np.atleast_2d(G).tolist(), np.atleast_2d(retained).tolist(), ev.ad.tolist(),
                             ev.td.tolist(), ev.feasible.tolist(), ev.violation.tolist(), ev.suppressed.tolist()))
                return _f(self, G, retained, ev)

            def traced_count(self, n, _f=count, _log=log):
                _log.append(("count", n))
                return _f(self, n)

            monkeypatch.setattr(Tracker, "offer", traced_offer)
            monkeypatch.setattr(Tracker, "count", traced_count)
            problem = Problem(table, models)
            assert problem.fused_evaluation() is not None
            result = run_optimizer("lattice", problem, budget=budget, params=dict(params))
            monkeypatch.setattr(Tracker, "offer", offer)
            monkeypatch.setattr(Tracker, "count", count)
            traces.append((result, _per_node(log), problem.evaluations))
        (f_res, f_log, f_n), (p_res, p_log, p_n) = traces
        assert f_log == p_log, params
        assert f_n == p_n, params
        assert f_res.td == p_res.td and f_res.certified == p_res.certified and f_res.feasible == p_res.feasible
        assert np.array_equal(f_res.g, p_res.g) and f_res.evaluations == p_res.evaluations
        assert f_res.history.tolist() == p_res.history.tolist()
        assert f_res.info == p_res.info, params  # boxes bounded, bound left, search
    if any(r.info.get("boxes_bounded", 0) > 1 for r, *_ in traces):
        assert kernel_calls  # the fused kernel ran


def _per_node(log: list[tuple]) -> list[tuple]:
    """A tracker trace node by node: offers split into one row each, counts into ones (the
    tracker's state after each node does not depend on how the nodes were batched)."""
    out: list[tuple] = []
    for entry in log:
        if entry[0] == "count":
            out += [("count",)] * entry[1]
        else:
            out += [("offer", *(field[i] for field in entry[1:])) for i in range(len(entry[1]))]
    return out


@pytest.mark.parametrize("name,params", [("k-anonymity", {"k": 3}), ("t-closeness", {"t": 0.2}),
                                         ("t-closeness", {"t": 0.15, "distance": "equal"}),
                                         ("t-closeness", {"t": 0.3, "distance": "ordered"})])
def test_kernel_feasibility_is_feasible(name: str, params: dict) -> None:
    """A model's ``kernel_feasibility`` decides as its ``feasible`` on the threshold, the floats
    next to it, the infinities and NaN (the fused lattice kernel tests feasibility with it)."""
    from ppdp.engine.kernels import kinds
    from ppdp.engine.methods.generalization.optimizers._box_kernels import _feasible

    rng = np.random.default_rng(7)
    table = _table_with_sa(rng, 60)
    model = build_model(name, params)
    if model.requirements.sensitive_counts:
        model = model.bind(ModelContext(tuple(table.sensitive), table.sa_values))
    test = model.kernel_feasibility()
    assert test is not None and test[0] in (kinds.AT_LEAST, kinds.AT_MOST)
    at = test[1]
    values = [at, np.nextafter(at, -np.inf), np.nextafter(at, np.inf), 0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0,
              3.0, at * 2, at / 2]
    ops, ats = np.array([test[0]], dtype=np.int64), np.array([at])
    got = [bool(_feasible(np.array([v]), ops, ats)) for v in values]
    assert got == [bool(model.feasible(float(v))) for v in values]
    assert any(got) and not all(got)
