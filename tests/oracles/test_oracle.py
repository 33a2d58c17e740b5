"""The exact suppression oracle S*(G) (docs/design/paper_notes.md §3) against brute force.

(a) ``optimal_pair_retention_t`` (the Euclidean distance) keeps, in every class, the largest number of records over all
    allocations, and what it keeps is feasible.
(b) On tiny tables, the certified lattice search finds the maximum TD over every (G, S), also
    under ARX's suppression limit (and so does Flash for k-anonymity).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.lattice import all_nodes, lattice_size
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.support import reference as ref

OFF = {"k": 1, "t": -1.0, "l_distinct": 1, "l_entropy": 1.0}


def euclidean_pair_retention(size, pair_class, pair_sa, pair_n, q, k, t, l_distinct, l_entropy) -> np.ndarray:
    """``optimal_pair_retention_t`` under the Euclidean distance, called with the argument
    types a release passes it (engine/methods/generalization/problem.py), so the kernel is the
    one ``ppdp warm-up`` compiled."""
    return K.optimal_pair_retention_t(np.asarray(size, dtype=np.int64), np.asarray(pair_class, dtype=np.int32),
                                      np.asarray(pair_sa, dtype=np.int32), np.asarray(pair_n, dtype=np.int64),
                                      np.asarray(q, dtype=np.float64), int(k), float(t), int(l_distinct),
                                      float(l_entropy), int(kinds.LARGEST_EUCLIDEAN_DISTANCE), np.zeros(0))


def random_classes(rng: np.random.Generator, n_classes: int):
    """Pairs of (class, SA value) with small counts, shuffled, and a source distribution q."""
    n_sa = int(rng.integers(1, 6))
    if rng.random() < 0.5:
        q = rng.integers(1, 10, size=n_sa).astype(np.float64)
    else:
        q = rng.dirichlet(np.ones(n_sa))
    q = q / q.sum()
    pairs = []
    for c in range(n_classes):
        values = rng.choice(n_sa, size=int(rng.integers(1, min(n_sa, 4) + 1)), replace=False)
        pairs += [(c, int(v), int(rng.integers(1, 5))) for v in values]
    order = rng.permutation(len(pairs))
    pair_class = np.array([pairs[i][0] for i in order], dtype=np.int32)
    pair_sa = np.array([pairs[i][1] for i in order], dtype=np.int32)
    pair_n = np.array([pairs[i][2] for i in order], dtype=np.int64)
    size = np.bincount(pair_class, weights=pair_n, minlength=n_classes).astype(np.int64)
    return size, pair_class, pair_sa, pair_n, q


def random_constraints(rng: np.random.Generator, active: tuple[str, ...]) -> dict:
    c = dict(OFF)
    if "k" in active:
        c["k"] = int(rng.integers(1, 7))
    if "t" in active:
        c["t"] = float(rng.uniform(0.05, 0.7))
    if "l_distinct" in active:
        c["l_distinct"] = int(rng.integers(1, 4))
    if "l_entropy" in active:
        c["l_entropy"] = 2.0 if rng.random() < 0.3 else float(rng.uniform(1.0, 3.0))
    return c


def oracle_vs_brute_force(rng, active, *, exact: bool) -> int:
    """Compare per class; returns how many classes keep something (to check the cases bite)."""
    kept_classes = 0
    for _ in range(40):
        size, pair_class, pair_sa, pair_n, q = random_classes(rng, int(rng.integers(1, 6)))
        c = random_constraints(rng, active)
        keep = euclidean_pair_retention(size, pair_class, pair_sa, pair_n, q, c["k"], c["t"], c["l_distinct"],
                                        c["l_entropy"])
        assert np.all((keep >= 0) & (keep <= pair_n))
        for cls in range(size.shape[0]):
            idx = np.flatnonzero(pair_class == cls)
            caps = pair_n[idx].tolist()
            values = pair_sa[idx].tolist()
            best = ref.best_retention(caps, values, q.tolist(), **c)
            got = keep[idx].tolist()
            where = f"caps={caps} values={values} q={q.tolist()} constraints={c}"
            if exact:
                assert sum(got) == best, f"kept {sum(got)}, brute force {best}: {where}"
            else:
                assert sum(got) <= best, where
            if sum(got) > 0:
                kept_classes += 1
                assert ref.allocation_feasible(got, values, q.tolist(), **c), f"kept {got} infeasible: {where}"
    return kept_classes


@pytest.mark.parametrize("active", [
    ("k",), ("t",), ("l_entropy",), ("l_distinct",), ("k", "t"), ("k", "l_entropy"),
    ("k", "l_distinct"), ("l_distinct", "l_entropy"),
])
@pytest.mark.parametrize("seed", range(5))
def test_pair_retention_is_maximal(active, seed) -> None:
    rng = np.random.default_rng([seed, len(active), sum(map(len, active))])
    assert oracle_vs_brute_force(rng, active, exact=True) > 0


@pytest.mark.parametrize("active", [("t", "l_entropy"), ("t", "l_distinct")])
def test_pair_retention_with_t_and_l_is_feasible(active) -> None:
    """t with an l-model is not proven optimal (OracleParams.exact): feasible, never above."""
    rng = np.random.default_rng(len(active[1]))
    assert oracle_vs_brute_force(rng, active, exact=False) > 0


def test_t_closeness_closed_form_for_a_binary_sa() -> None:
    """docs/design/paper_notes.md §3: binary SA keeps the most records with |p - q| <= t / sqrt(2)."""
    q = np.array([0.3, 0.7])
    for a, b in itertools.product(range(0, 7), repeat=2):
        if a + b == 0:
            continue
        present = [v for v, n in ((0, a), (1, b)) if n > 0]
        pair_sa = np.array(present, dtype=np.int32)
        pair_n = np.array([(a, b)[v] for v in present], dtype=np.int64)
        keep = euclidean_pair_retention(np.array([a + b]), np.zeros(len(present), dtype=np.int32),
                                        pair_sa, pair_n, q, 1, 0.2, 1, 1.0)
        best = max((x + y for x in range(a + 1) for y in range(b + 1)
                    if x + y > 0 and abs(x / (x + y) - 0.3) <= 0.2 / np.sqrt(2)), default=0)
        assert int(keep.sum()) == best, (a, b)


# --- (b) every (G, S) of a tiny table ------------------------------------------------------


def tiny_table(rng: np.random.Generator, n_records: int = 8):
    """2-3 QIDs with 2-4 leaves and height 1-2, one SA with 2-3 values."""
    hierarchies = []
    for i in range(int(rng.integers(2, 4))):
        n_leaves = int(rng.integers(2, 5))
        leaves = [f"q{i}v{j}" for j in range(n_leaves)]
        if rng.random() < 0.6 and n_leaves > 2:
            rows = [[v, f"q{i}g{j % 2}", "*"] for j, v in enumerate(leaves)]
        else:
            rows = [[v, "*"] for v in leaves]
        hierarchies.append(from_rows(f"q{i}", rows))
    data = {f"q{i}": [str(v) for v in rng.choice(h.leaves, size=n_records)] for i, h in enumerate(hierarchies)}
    data["s"] = [f"s{int(v)}" for v in rng.integers(0, int(rng.integers(2, 4)), size=n_records)]
    qids = [f"q{i}" for i in range(len(hierarchies))]
    hist = pl.DataFrame(data).group_by(qids + ["s"]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(hist, qids, ["s"], hierarchies)


def brute_force_best_td(table, models, max_suppressed: int | None = None) -> float:
    """Maximum TD over every G of the lattice and every per-record S that is feasible (and
    suppresses at most ``max_suppressed`` records, when given)."""
    q = ref.source_distribution(table)
    best = -1.0
    for g in all_nodes(table.heights):
        for bits in itertools.product((0, 1), repeat=table.n_records):
            if max_suppressed is not None and table.n_records - sum(bits) > max_suppressed:
                continue
            classes = ref.classes(table, g, bits)
            if all(m.feasible(float(ref.model_ad(m, classes, q))) for m in models):
                best = max(best, ref.transparency(table, g, bits))
    return best


MODEL_SETS = {
    "k=2": [("k-anonymity", {"k": 2})],
    "k=3": [("k-anonymity", {"k": 3})],
    "t=0.25": [("t-closeness", {"t": 0.25})],
    "t=0.4": [("t-closeness", {"t": 0.4})],
    "k=2,t=0.3": [("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.3})],
}


@pytest.mark.parametrize("models_key", list(MODEL_SETS))
@pytest.mark.parametrize("seed", range(3))
def test_lattice_search_finds_the_brute_force_optimum(models_key, seed) -> None:
    models = [build_model(name, p) for name, p in MODEL_SETS[models_key]]
    rng = np.random.default_rng([seed, list(MODEL_SETS).index(models_key)])
    # Draw until the optimum needs generalization or suppression but keeps something.
    while True:
        table = tiny_table(rng)
        best = brute_force_best_td(table, models)
        if 0.0 < best < table.n_records * table.n_qids:
            break
    budget = lattice_size(table.heights)
    # batch = 1 makes the bound mode stop as soon as no unvisited node can beat the best.
    for mode, params in [("bound", {}), ("exhaustive", {}), ("bound", {"batch": 1})]:
        result = run_optimizer("lattice", Problem(table, models), budget=budget, params={"mode": mode, **params})
        assert result.certified, mode
        assert result.feasible, mode
        assert result.td == pytest.approx(best, rel=1e-9, abs=1e-12), mode
        # The returned solution really has that TD and is feasible (independent check).
        keep = ref.keep_from_retained(table, result.retained)
        ad, td, feasible, _ = ref.evaluate(table, models, result.g, keep)
        assert feasible, (mode, ad)
        assert td == pytest.approx(best, rel=1e-9, abs=1e-12), mode


@pytest.mark.parametrize("limit", [0.0, 0.125, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("models_key", list(MODEL_SETS))
@pytest.mark.parametrize("seed", range(2))
def test_suppression_limit_optimum_against_brute_force(limit, models_key, seed) -> None:
    """Lattice (both modes) and, for k-anonymity, Flash return the maximal TD over every (G, S)
    that suppresses at most floor(limit * nR) records, and say so (certified)."""
    models = [build_model(name, p) for name, p in MODEL_SETS[models_key]]
    rng = np.random.default_rng([seed, list(MODEL_SETS).index(models_key), int(limit * 1000)])
    table = tiny_table(rng)
    max_sup = int(np.floor(limit * table.n_records + 1e-9))
    best = brute_force_best_td(table, models, max_sup)
    runs = [("lattice", {"mode": "bound"}), ("lattice", {"mode": "exhaustive"}), ("lattice", {"mode": "bound", "batch": 1})]
    if all(name == "k-anonymity" for name, _ in MODEL_SETS[models_key]):
        runs.append(("flash", {}))
    for name, params in runs:
        result = run_optimizer(name, Problem(table, models), budget=lattice_size(table.heights),
                               params={**params, "suppression_limit": limit})
        label = (name, params)
        assert result.certified, label
        if best < 0:  # nothing feasible within the limit (e.g. t-closeness at the top needs nothing; k may)
            assert not result.feasible, label
            continue
        assert result.feasible and result.suppressed <= max_sup, label
        assert result.td == pytest.approx(best, rel=1e-9, abs=1e-12), label
        keep = ref.keep_from_retained(table, result.retained)
        _, td, feasible, _ = ref.evaluate(table, models, result.g, keep)
        assert feasible and td == pytest.approx(best, rel=1e-9, abs=1e-12), label
